/** Finding and working the page in the DOM tests (happy-dom), as a user would. */
import { act } from "react";
import { createRoot, type Root } from "react-dom/client";
import { afterEach, beforeEach, expect } from "vitest";

declare global {
  var IS_REACT_ACT_ENVIRONMENT: boolean;
}

/** A React root on a fresh element of the page for each test of the file (`page.root`,
 * `page.host`), unmounted and removed after it. Call it once, at the top of the file. */
export function rootPerTest(): { readonly root: Root; readonly host: HTMLElement } {
  const page = {} as { root: Root; host: HTMLElement };
  beforeEach(() => {
    globalThis.IS_REACT_ACT_ENVIRONMENT = true;
    page.host = document.createElement("div");
    document.body.append(page.host);
    page.root = createRoot(page.host);
  });
  afterEach(async () => {
    await act(async () => page.root.unmount());
    page.host.remove();
  });
  return page;
}

export const $ = <T extends Element = HTMLElement>(selector: string) => document.querySelector<T>(selector);

/** The button whose text is exactly `text`. */
export const button = (text: string) =>
  [...document.querySelectorAll<HTMLButtonElement>("button")].find((b) => b.textContent === text);

/** Click `target`, which must be on the page. */
export async function click(target: HTMLElement | undefined | null) {
  expect(target, "the button is on the page").toBeTruthy();
  await act(async () => target!.click());
}

/** Type into React's controlled input as a user would: the value, then an input event. */
export async function type(input: HTMLInputElement | null, text: string) {
  await act(async () => {
    Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, "value")?.set?.call(input, text);
    input!.dispatchEvent(new Event("input", { bubbles: true }));
  });
}

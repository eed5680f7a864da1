import { renderToStaticMarkup } from "react-dom/server";
import { describe, expect, it } from "vitest";

import { AnswerText } from "./Answer";

function parse(markup: string): string {
  // collapse React's text separators so assertions read like the page
  return markup.replace(/<!-- -->/g, "");
}

describe("AnswerText", () => {
  it("links each citation to its source card in the evidence panel", () => {
    const html = parse(
      renderToStaticMarkup(
        <AnswerText turnId="t1" text="See [2] and [9]." sourceCount={2} onCite={() => {}} />,
      ),
    );
    expect(html).toContain('<a class="citation" href="#source-t1-2" aria-label="Source 2">[2]</a>');
    expect(html).not.toContain("#source-t1-9");
    expect(html).toContain("[9]");
  });
});

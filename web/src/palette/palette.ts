/**
 * The ⌘K palette's items and how a query ranks them, free of React: every place the
 * palette can jump to is a `PaletteItem` (a screen, a conversation, a document, an
 * archive, a setting, a map card, an action), and `rankItems` keeps those that match
 * every word of the query, best first.
 */
import type { Route } from "../app/route";

export type PaletteSection =
  "Screens" | "Actions" | "Conversations" | "Documents" | "Archives" | "Settings" | "Map";

/** The order sections are listed in when scores tie, and for an empty query. */
export const SECTION_ORDER: readonly PaletteSection[] = [
  "Screens",
  "Actions",
  "Conversations",
  "Documents",
  "Archives",
  "Settings",
  "Map",
];

/** What choosing an item does. */
export type PaletteTarget =
  | { kind: "route"; route: Route }
  /** Open the settings drawer (at one setting when `name` is given). */
  | { kind: "settings"; name: string | null }
  | { kind: "developer-mode"; on: boolean };

export interface PaletteItem {
  /** Unique among the items (the section's prefix and the thing's own id). */
  id: string;
  section: PaletteSection;
  title: string;
  /** A second line: a path, a date, a description. Matched with less weight. */
  detail?: string;
  /** More words that find the item, never shown. */
  keywords?: string;
  target: PaletteTarget;
}

/** How many items of a section an empty query lists (screens and actions: all). */
export const EMPTY_QUERY_PER_SECTION = 5;
/** The most items a query lists. */
export const MAX_RESULTS = 50;

/** Lower case without accents, so "Resume" finds "résumé.pdf". */
export function normalize(text: string): string {
  return text
    .normalize("NFKD")
    .replace(/[\u0300-\u036f]/g, "")
    .toLowerCase();
}

/** Whether `token` starts a word of `text`: at its start, or after a space or punctuation. */
function startsWord(text: string, token: string): boolean {
  for (let at = text.indexOf(token); at !== -1; at = text.indexOf(token, at + 1)) {
    if (at === 0 || /[^\p{L}\p{N}]/u.test(text[at - 1] ?? "")) return true;
  }
  return false;
}

/** Whether the letters of `token` appear in `text` in order ("rtrn" in "run_turn"). */
function inOrder(text: string, token: string): boolean {
  let at = 0;
  for (const ch of token) {
    at = text.indexOf(ch, at);
    if (at === -1) return false;
    at++;
  }
  return true;
}

/** How well one word of the query matches an item; 0 is not at all. */
function wordScore(token: string, title: string, rest: string): number {
  if (title === token) return 100;
  if (title.startsWith(token)) return 80;
  if (startsWord(title, token)) return 60;
  if (title.includes(token)) return 40;
  if (startsWord(rest, token)) return 25;
  if (rest.includes(token)) return 15;
  if (token.length >= 3 && inOrder(title, token)) return 8;
  return 0;
}

/**
 * The score of `item` for a normalized, non-empty `query`: the sum over its words
 * (each must match the title or the rest), with a bonus when the whole query is the
 * title or begins it; 0 when some word matches nothing.
 */
export function scoreItem(item: PaletteItem, query: string): number {
  const title = normalize(item.title);
  const rest = normalize(`${item.detail ?? ""} ${item.keywords ?? ""}`);
  let total = 0;
  for (const token of query.split(/\s+/).filter(Boolean)) {
    const score = wordScore(token, title, rest);
    if (score === 0) return 0;
    total += score;
  }
  if (title === query) total += 50;
  else if (title.startsWith(query)) total += 20;
  return total;
}

/**
 * The items a query lists, best first: ties go by section order, then the shorter
 * title, then the order given. An empty query lists every screen and action and the
 * first few of each other section.
 */
export function rankItems(items: readonly PaletteItem[], query: string, limit = MAX_RESULTS): PaletteItem[] {
  const q = normalize(query).trim().replace(/\s+/g, " ");
  const section = (item: PaletteItem) => SECTION_ORDER.indexOf(item.section);
  if (q === "") {
    const taken = new Map<PaletteSection, number>();
    return items
      .map((item, i) => ({ item, i }))
      .sort((a, b) => section(a.item) - section(b.item) || a.i - b.i)
      .filter(({ item }) => {
        const n = taken.get(item.section) ?? 0;
        taken.set(item.section, n + 1);
        return item.section === "Screens" || item.section === "Actions" || n < EMPTY_QUERY_PER_SECTION;
      })
      .map(({ item }) => item)
      .slice(0, limit);
  }
  return items
    .map((item, i) => ({ item, i, score: scoreItem(item, q) }))
    .filter(({ score }) => score > 0)
    .sort(
      (a, b) =>
        b.score - a.score ||
        section(a.item) - section(b.item) ||
        a.item.title.length - b.item.title.length ||
        a.i - b.i,
    )
    .map(({ item }) => item)
    .slice(0, limit);
}

/** What the app lets the palette do. */
export interface PaletteActions {
  navigate: (route: Route) => void;
  openSettings: (name: string | null) => void;
  setDeveloperMode: (on: boolean) => void;
}

/** Carry out a chosen item. */
export function runTarget(target: PaletteTarget, actions: PaletteActions): void {
  switch (target.kind) {
    case "route":
      actions.navigate(target.route);
      return;
    case "settings":
      actions.openSettings(target.name);
      return;
    case "developer-mode":
      actions.setDeveloperMode(target.on);
      return;
  }
}

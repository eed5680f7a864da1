/** The sidebar's arrangement of conversations: groups by name, each sorted by recency. */
import type { ConversationSummary, Group } from "../api/types";

export interface Section {
  /** The group, or `null` for conversations in none. */
  group: Group | null;
  conversations: ConversationSummary[];
}

/** Most recently updated first; ties keep a stable order by id. */
function byRecency(a: ConversationSummary, b: ConversationSummary): number {
  const delta = Date.parse(b.updated_at) - Date.parse(a.updated_at);
  return delta !== 0 ? delta : a.conversation_id.localeCompare(b.conversation_id);
}

/**
 * One section per group (sorted by name) and a last one for ungrouped conversations,
 * each sorted by recency. While searching (`filtered`), sections with no match are
 * left out; otherwise empty groups stay so conversations can be moved into them.
 * A conversation whose group is unknown (deleted meanwhile) counts as ungrouped.
 */
export function arrange(
  conversations: readonly ConversationSummary[],
  groups: readonly Group[],
  filtered = false,
): Section[] {
  const known = new Set(groups.map((g) => g.group_id));
  const sorted = [...conversations].sort(byRecency);
  const sections: Section[] = [...groups]
    .sort((a, b) => a.name.localeCompare(b.name, undefined, { sensitivity: "base", numeric: true }))
    .map((group) => ({
      group,
      conversations: sorted.filter((c) => c.group_id === group.group_id),
    }));
  sections.push({
    group: null,
    conversations: sorted.filter((c) => c.group_id === null || !known.has(c.group_id)),
  });
  return filtered ? sections.filter((s) => s.conversations.length > 0) : sections;
}

/** "just now", "5 min ago", "3 h ago", "yesterday", or the date, relative to `now`. */
export function formatWhen(iso: string, now: Date): string {
  const then = new Date(iso);
  const seconds = (now.getTime() - then.getTime()) / 1000;
  if (seconds < 60) return "just now";
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ago`;
  if (seconds < 86400) return `${Math.floor(seconds / 3600)} h ago`;
  if (seconds < 2 * 86400) return "yesterday";
  return then.toISOString().slice(0, 10);
}

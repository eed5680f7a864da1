import { describe, expect, it } from "vitest";

import type { ConversationSummary, Group } from "../api/types";
import { arrange, formatWhen } from "./list";

function conversation(id: string, updated: string, group_id: string | null = null): ConversationSummary {
  return {
    conversation_id: id,
    title: `Title ${id}`,
    created_at: "2026-01-01T00:00:00Z",
    updated_at: updated,
    group_id,
    message_count: 2,
  };
}

function group(id: string, name: string): Group {
  return { group_id: id, name, created_at: "2026-01-01T00:00:00Z", conversation_count: 0 };
}

const GROUPS = [group("g2", "travel"), group("g1", "Appliances"), group("g3", "empty")];
const CONVERSATIONS = [
  conversation("a", "2026-03-01T10:00:00Z"),
  conversation("b", "2026-03-02T10:00:00Z", "g1"),
  conversation("c", "2026-03-03T10:00:00Z"),
  conversation("d", "2026-02-01T10:00:00Z", "g1"),
  conversation("e", "2026-03-04T10:00:00Z", "deleted-group"),
];

describe("arrange", () => {
  it("lists groups by name, each newest first, then the ungrouped ones", () => {
    const sections = arrange(CONVERSATIONS, GROUPS);
    expect(sections.map((s) => s.group?.name ?? null)).toEqual(["Appliances", "empty", "travel", null]);
    expect(sections[0]!.conversations.map((c) => c.conversation_id)).toEqual(["b", "d"]);
    expect(sections[1]!.conversations).toEqual([]);
    // a conversation of an unknown group is shown ungrouped rather than lost
    expect(sections[3]!.conversations.map((c) => c.conversation_id)).toEqual(["e", "c", "a"]);
  });

  it("hides sections without a match while searching", () => {
    const sections = arrange([CONVERSATIONS[1]!], GROUPS, true);
    expect(sections.map((s) => s.group?.name ?? null)).toEqual(["Appliances"]);
  });

  it("breaks ties in recency by id, so the order is stable", () => {
    const same = "2026-03-01T10:00:00Z";
    const [ungrouped] = arrange([conversation("y", same), conversation("x", same)], []);
    expect(ungrouped!.conversations.map((c) => c.conversation_id)).toEqual(["x", "y"]);
  });
});

describe("formatWhen", () => {
  const now = new Date("2026-03-10T12:00:00Z");
  it("says how long ago, then the date", () => {
    expect(formatWhen("2026-03-10T11:59:30Z", now)).toBe("just now");
    expect(formatWhen("2026-03-10T11:15:00Z", now)).toBe("45 min ago");
    expect(formatWhen("2026-03-10T07:00:00Z", now)).toBe("5 h ago");
    expect(formatWhen("2026-03-09T07:00:00Z", now)).toBe("yesterday");
    expect(formatWhen("2026-02-01T07:00:00Z", now)).toBe("2026-02-01");
  });
});

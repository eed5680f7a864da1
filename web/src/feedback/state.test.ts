import { describe, expect, it } from "vitest";

import type { Feedback } from "../api/types";
import {
  describeMark,
  formatIndexAsOf,
  markAnswering,
  markOf,
  requestFor,
  targetKey,
  toggle,
  type FeedbackOverrides,
} from "./state";

const saved: Feedback[] = [
  {
    feedback_id: "f1",
    message_id: "m1",
    conversation_id: "c1",
    source: null,
    rating: "down",
    answered_by: 2,
    none_answers: false,
    comment: null,
    created_at: "2026-12-03T14:02:00Z",
    updated_at: "2026-12-03T14:02:00Z",
  },
  {
    feedback_id: "f2",
    message_id: "m1",
    conversation_id: "c1",
    source: 1,
    rating: "up",
    answered_by: null,
    none_answers: false,
    comment: null,
    created_at: "2026-12-03T14:02:00Z",
    updated_at: "2026-12-03T14:02:00Z",
  },
];

describe("feedback state", () => {
  it("shows the saved rating until a click overrides or takes it back", () => {
    expect(markOf(saved, {}, "m1", null)).toEqual({
      rating: "down",
      answered_by: 2,
      none_answers: false,
      comment: null,
    });
    expect(markOf(saved, {}, "m1", 1)?.rating).toBe("up");
    expect(markOf(saved, {}, "m1", 3)).toBeNull();
    const overrides: FeedbackOverrides = { [targetKey("m1", 1)]: null };
    expect(markOf(saved, overrides, "m1", 1)).toBeNull();
    expect(markOf(saved, overrides, "m1", null)?.answered_by).toBe(2);
  });

  it("toggles a thumb: the same one again takes it back, the other replaces it", () => {
    const up = toggle(null, "up");
    expect(up).toEqual({ rating: "up", answered_by: null, none_answers: false, comment: null });
    expect(toggle(up, "up")).toBeNull();
    const down = toggle(up, "down");
    expect(down?.rating).toBe("down");
    // switching to a thumbs-up drops the passage mark
    const marked = markAnswering(down, 3);
    expect(toggle(marked, "up")?.answered_by).toBeNull();
  });

  it("builds the request: passage marks only on a thumbs-down of the answer", () => {
    expect(requestFor(null, markAnswering(null, 2))).toEqual({
      rating: "down",
      source: null,
      answered_by: 2,
      none_answers: false,
      comment: null,
    });
    expect(requestFor(null, markAnswering(null, "none"))).toMatchObject({
      answered_by: null,
      none_answers: true,
    });
    const onSource = requestFor(4, { rating: "down", answered_by: 2, none_answers: true, comment: "x" });
    expect(onSource).toEqual({
      rating: "down",
      source: 4,
      answered_by: null,
      none_answers: false,
      comment: "x",
    });
  });

  it("confirms what was saved", () => {
    expect(describeMark(null, markAnswering(null, 2))).toContain(
      "Source 2 marked as the passage that answers",
    );
    expect(describeMark(null, markAnswering(null, "none"))).toContain("feedback suite");
    expect(describeMark(3, toggle(null, "up"))).toBe("Thanks: thumbs up on source 3.");
    expect(describeMark(null, null)).toBe("Rating of the answer removed.");
  });

  it("formats the index time as a short local date", () => {
    const at = new Date(2026, 11, 3, 14, 2).toISOString();
    expect(formatIndexAsOf(at, new Date(2026, 11, 25))).toBe("3 Dec 14:02");
    expect(formatIndexAsOf(at, new Date(2027, 0, 2))).toBe("3 Dec 2026 14:02");
    expect(formatIndexAsOf("not a date")).toBe("not a date");
  });
});

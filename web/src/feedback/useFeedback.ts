/** The chat screen's ratings: saved through the API, shown at once, confirmed or refused. */
import { createContext, useCallback, useContext, useMemo, useState } from "react";

import { deleteFeedback, putFeedback } from "../api/feedback";
import { describeError } from "../api/client";
import type { Feedback } from "../api/types";
import type { Turn } from "../turns/state";
import {
  describeMark,
  type FeedbackMark,
  type FeedbackOverrides,
  markOf,
  requestFor,
  type Target,
  targetKey,
} from "./state";

export interface FeedbackApi {
  /** The rating shown for a target of the answer `messageId`. */
  markOf(messageId: string, target: Target): FeedbackMark | null;
  /** The last confirmation or refusal for `messageId`. */
  noticeOf(messageId: string): { text: string; failed: boolean } | null;
  /** Store `mark` (null: take the rating back); the shown rating changes at once. */
  rate(messageId: string, target: Target, mark: FeedbackMark | null): Promise<void>;
  /** The saved message id of a turn, when it has one. */
  messageIdOf(turnId: string): string | null;
}

export const FeedbackContext = createContext<FeedbackApi | null>(null);

/** The ratings of `turns` (their saved ones) and what was clicked since. */
export function useFeedbackState(turns: Turn[]): FeedbackApi {
  const [overrides, setOverrides] = useState<FeedbackOverrides>({});
  const [notices, setNotices] = useState<Record<string, { text: string; failed: boolean }>>({});
  const saved = useMemo(() => {
    const out = new Map<string, { turnId: string; feedback: Feedback[] }>();
    for (const turn of turns) {
      if (turn.message_id) out.set(turn.message_id, { turnId: turn.id, feedback: turn.feedback ?? [] });
    }
    return out;
  }, [turns]);

  const rate = useCallback(async (messageId: string, target: Target, mark: FeedbackMark | null) => {
    const key = targetKey(messageId, target);
    let before: FeedbackMark | null | undefined;
    setOverrides((current) => {
      before = key in current ? current[key] : undefined;
      return { ...current, [key]: mark };
    });
    try {
      if (mark === null) await deleteFeedback(messageId, target);
      else await putFeedback(messageId, requestFor(target, mark));
      setNotices((n) => ({ ...n, [messageId]: { text: describeMark(target, mark), failed: false } }));
    } catch (exc) {
      setOverrides((current) => {
        const next = { ...current };
        if (before === undefined) delete next[key];
        else next[key] = before;
        return next;
      });
      const text = `The rating was not saved: ${describeError(exc)}`;
      setNotices((n) => ({ ...n, [messageId]: { text, failed: true } }));
    }
  }, []);

  return useMemo(
    () => ({
      markOf: (messageId, target) => markOf(saved.get(messageId)?.feedback, overrides, messageId, target),
      noticeOf: (messageId) => notices[messageId] ?? null,
      rate,
      messageIdOf: (turnId) => turns.find((t) => t.id === turnId)?.message_id ?? null,
    }),
    [saved, overrides, notices, rate, turns],
  );
}

/** The ratings of the chat screen (null outside it: no thumbs are shown). */
export function useFeedback(): FeedbackApi | null {
  return useContext(FeedbackContext);
}

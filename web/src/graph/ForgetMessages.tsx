/**
 * Forget the messages of a transcript day: the day's messages of its thread, or the
 * whole thread. Each asks first; the archive keeps the messages (it is never written),
 * the graph and every later build leave them out. The receipt goes to `onForgotten`.
 */
import { useState } from "react";

import { describeError } from "../api/client";
import { forgetGraphDays, forgetGraphThread } from "../api/resources";
import type { ForgetReceipt } from "../api/types";
import { ConfirmDialog } from "../shared/Modal";

/** A day's `doc_key` (`thread_id::YYYY-MM-DD`) split into its thread and its day. */
export function splitDocKey(docKey: string): { threadId: string; day: string } {
  const cut = docKey.lastIndexOf("::");
  return cut < 0
    ? { threadId: docKey, day: "" }
    : { threadId: docKey.slice(0, cut), day: docKey.slice(cut + 2) };
}

type Scope = "day" | "thread";

interface ForgetMessagesProps {
  docKey: string;
  /** The thread as the transcript names it. */
  threadName: string;
  onForgotten: (receipt: ForgetReceipt, text: string) => void;
}

export function ForgetMessages({ docKey, threadName, onForgotten }: ForgetMessagesProps) {
  const { threadId, day } = splitDocKey(docKey);
  const [asking, setAsking] = useState<Scope | null>(null);
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | null>(null);

  const what =
    asking === "thread" ? `every message of ${threadName}` : `the messages of ${threadName} on ${day}`;

  const confirm = async () => {
    if (asking === null) return;
    setBusy(true);
    try {
      const receipt =
        asking === "thread" ? await forgetGraphThread(threadId) : await forgetGraphDays(day, day, threadId);
      onForgotten(receipt, `Forgot ${what}.`);
    } catch (exc) {
      setFailure(`Forgetting ${what} failed: ${describeError(exc)}`);
    } finally {
      setBusy(false);
      setAsking(null);
    }
  };

  const ask = (scope: Scope) => {
    setFailure(null);
    setAsking(scope);
  };

  return (
    <div className="forget-messages">
      <div className="upload-controls">
        <button type="button" className="danger" onClick={() => ask("day")}>
          Forget this day&apos;s messages
        </button>
        <button type="button" className="danger" onClick={() => ask("thread")}>
          Forget this whole thread
        </button>
      </div>
      {failure && (
        <p className="error" role="alert">
          {failure}
        </p>
      )}
      <ConfirmDialog
        open={asking !== null}
        title={
          asking === "thread" ? `Forget the whole thread ${threadName}?` : `Forget ${threadName} on ${day}?`
        }
        confirmLabel="Forget"
        busy={busy}
        onConfirm={() => void confirm()}
        onClose={() => setAsking(null)}
      >
        <p>
          {asking === "thread"
            ? `Every message of ${threadName}, on every day, in every archive, leaves the graph now.`
            : `The messages of ${threadName} on ${day} leave the graph now.`}
        </p>
        <p className="hint">
          The archive file keeps the messages (it is never written), but the graph and every later build leave
          them out. What only they supported goes; shared entities lose only what they said. Conversations
          that cited them are redacted. You get a receipt.
        </p>
      </ConfirmDialog>
    </div>
  );
}

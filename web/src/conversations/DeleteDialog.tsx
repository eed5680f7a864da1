/** The confirmation before deleting a conversation (for good) or a group (its conversations stay). */
import type { ConversationSummary, Group } from "../api/types";
import { ConfirmDialog } from "../shared/Modal";

/** What is about to be deleted. */
export type PendingDelete =
  { kind: "conversation"; item: ConversationSummary } | { kind: "group"; item: Group; count: number };

export function DeleteDialog({
  pending,
  busy,
  onConfirm,
  onClose,
}: {
  pending: PendingDelete | null;
  busy: boolean;
  onConfirm: () => void;
  onClose: () => void;
}) {
  return (
    <ConfirmDialog
      open={pending !== null}
      title={
        pending?.kind === "group"
          ? `Delete the group \u201c${pending.item.name}\u201d?`
          : `Delete \u201c${pending?.kind === "conversation" ? pending.item.title : ""}\u201d?`
      }
      confirmLabel="Delete"
      busy={busy}
      onConfirm={onConfirm}
      onClose={onClose}
    >
      <p>
        {pending?.kind === "group"
          ? `Its ${pending.count} conversation${pending.count === 1 ? "" : "s"} stay, ungrouped.`
          : "Its questions, answers and their evidence are deleted for good."}
      </p>
    </ConfirmDialog>
  );
}

/** One conversation in the sidebar: its link, and its rename / move / delete menu. */
import { patchConversation } from "../api/resources";
import type { ConversationSummary, Group } from "../api/types";
import { routeHash } from "../app/route";
import { formatWhen } from "./list";
import { NameForm } from "../shared/NameForm";
import { closeMenu, RowMenu } from "../shared/RowMenu";

interface ConversationRowProps {
  conversation: ConversationSummary;
  /** The open conversation (highlighted). */
  current: boolean;
  /** The groups it can move to. */
  groups: Group[];
  now: Date;
  /** Its title is being edited. */
  renaming: boolean;
  onStartRename: () => void;
  onCancelRename: () => void;
  /** The new title was saved. */
  onRenamed: () => void;
  onNavigate: () => void;
  /** Runs an action, reporting its failure in the sidebar and re-reading the list. */
  act: (what: string, action: () => Promise<unknown>) => Promise<void>;
  /** Asks to delete it (the sidebar confirms). */
  onDelete: () => void;
}

export function ConversationRow({
  conversation: c,
  current,
  groups,
  now,
  renaming,
  onStartRename,
  onCancelRename,
  onRenamed,
  onNavigate,
  act,
  onDelete,
}: ConversationRowProps) {
  return (
    <li className="conversation" data-conversation-id={c.conversation_id}>
      {renaming ? (
        <NameForm
          label={`New title for ${c.title}`}
          initial={c.title}
          submitLabel="Save"
          onCancel={onCancelRename}
          onSave={async (title) => {
            await patchConversation(c.conversation_id, { title });
            onRenamed();
          }}
        />
      ) : (
        <a
          className="conversation-link"
          href={routeHash({ view: "chat", conversationId: c.conversation_id })}
          aria-current={current ? "page" : undefined}
          onClick={onNavigate}
        >
          <span className="conversation-title">{c.title}</span>
          <span className="when">
            <time dateTime={c.updated_at}>{formatWhen(c.updated_at, now)}</time>
          </span>
        </a>
      )}
      <RowMenu label={`Actions for \u201c${c.title}\u201d`}>
        <button
          type="button"
          onClick={(event) => {
            closeMenu(event);
            onStartRename();
          }}
        >
          Rename
        </button>
        <label>
          Move to group
          <select
            value={c.group_id ?? ""}
            onChange={(event) => {
              const groupId = event.target.value || null;
              closeMenu(event, true);
              void act("Moving the conversation", () =>
                patchConversation(c.conversation_id, { group_id: groupId }),
              );
            }}
          >
            <option value="">No group</option>
            {groups.map((g) => (
              <option key={g.group_id} value={g.group_id}>
                {g.name}
              </option>
            ))}
          </select>
        </label>
        <button
          type="button"
          className="danger-text"
          onClick={(event) => {
            closeMenu(event);
            onDelete();
          }}
        >
          Delete
        </button>
      </RowMenu>
    </li>
  );
}

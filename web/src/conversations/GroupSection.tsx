/** One group in the sidebar: its name (a toggle that folds its list), its menu, and its conversations. */
import type { ReactNode } from "react";

import { renameGroup } from "../api/resources";
import type { ConversationSummary, Group } from "../api/types";
import { NameForm } from "../shared/NameForm";
import { closeMenu, RowMenu } from "../shared/RowMenu";

interface GroupSectionProps {
  group: Group;
  conversations: ConversationSummary[];
  /** Its list is shown (not folded). */
  open: boolean;
  onToggle: () => void;
  /** Its name is being edited. */
  renaming: boolean;
  onStartRename: () => void;
  onCancelRename: () => void;
  /** The new name was saved. */
  onRenamed: () => void;
  /** Asks to delete it (the sidebar confirms). */
  onDelete: () => void;
  /** One conversation's row. */
  row: (conversation: ConversationSummary) => ReactNode;
}

/** The id of a group's list, which its toggle folds. */
const listId = (group: Group) => `group-${group.group_id}`;

/** The group's name as a button folding its list, with how many conversations it holds. */
function GroupToggle({
  group,
  count,
  open,
  onToggle,
}: {
  group: Group;
  count: number;
  open: boolean;
  onToggle: () => void;
}) {
  return (
    <h3 className="section-title">
      <button
        type="button"
        className="group-toggle"
        aria-expanded={open}
        aria-controls={listId(group)}
        onClick={onToggle}
      >
        <span className="chevron" aria-hidden="true">
          {open ? "\u25be" : "\u25b8"}
        </span>
        {group.name}
        <span className="count">
          {count}
          <span className="visually-hidden">{count === 1 ? " conversation" : " conversations"}</span>
        </span>
      </button>
    </h3>
  );
}

export function GroupSection({
  group,
  conversations,
  open,
  onToggle,
  renaming,
  onStartRename,
  onCancelRename,
  onRenamed,
  onDelete,
  row,
}: GroupSectionProps) {
  return (
    <li className="section group" data-group={group.name}>
      <div className="group-head">
        {renaming ? (
          <NameForm
            label={`New name for group ${group.name}`}
            initial={group.name}
            submitLabel="Save"
            onCancel={onCancelRename}
            onSave={async (name) => {
              await renameGroup(group.group_id, name);
              onRenamed();
            }}
          />
        ) : (
          <GroupToggle group={group} count={conversations.length} open={open} onToggle={onToggle} />
        )}
        <RowMenu label={`Actions for group ${group.name}`}>
          <button
            type="button"
            onClick={(event) => {
              closeMenu(event);
              onStartRename();
            }}
          >
            Rename group
          </button>
          <button
            type="button"
            className="danger-text"
            onClick={(event) => {
              closeMenu(event);
              onDelete();
            }}
          >
            Delete group
          </button>
        </RowMenu>
      </div>
      {open && (
        <ul className="conversations" id={listId(group)}>
          {conversations.length === 0 ? (
            <li className="muted group-empty">Empty: move a conversation here from its {"\u22ef"} menu.</li>
          ) : (
            conversations.map(row)
          )}
        </ul>
      )}
    </li>
  );
}

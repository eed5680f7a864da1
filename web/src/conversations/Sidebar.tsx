/**
 * The conversations sidebar: search, groups, and each conversation's actions. The
 * list comes from `useConversationList`; the search box and "New group" are the
 * `SidebarTools`; a group is a `GroupSection`, a conversation a `ConversationRow`, and
 * deleting either asks through the `DeleteDialog`.
 */
import { useState } from "react";

import { deleteConversation, deleteGroup } from "../api/resources";
import type { ConversationSummary } from "../api/types";
import { ConversationRow } from "./ConversationRow";
import { DeleteDialog, type PendingDelete } from "./DeleteDialog";
import { GroupSection } from "./GroupSection";
import { arrange } from "./list";
import { SidebarTools } from "./SidebarTools";
import { useConversationList } from "./useConversationList";

interface SidebarProps {
  id: string;
  /** The open conversation, highlighted. */
  currentId: string | null;
  /** Any change re-reads the list (a turn finished, a conversation was opened). */
  refreshToken: string;
  onNewChat: () => void;
  /** A conversation link was followed (the narrow layout closes the sidebar). */
  onNavigate: () => void;
  /** A conversation was deleted. */
  onDeleted: (conversationId: string) => void;
}

export function Sidebar({ id, currentId, refreshToken, onNewChat, onNavigate, onDeleted }: SidebarProps) {
  const { conversations, groups, loaded, query, setQuery, searched, error, reload, act } =
    useConversationList(refreshToken);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const [pending, setPending] = useState<PendingDelete | null>(null);
  const [deleting, setDeleting] = useState(false);

  const confirmDelete = async () => {
    if (pending === null) return;
    setDeleting(true);
    if (pending.kind === "conversation") {
      const target = pending.item.conversation_id;
      await act("Deleting the conversation", async () => {
        await deleteConversation(target);
        onDeleted(target);
      });
    } else {
      await act("Deleting the group", () => deleteGroup(pending.item.group_id));
    }
    setDeleting(false);
    setPending(null);
  };

  const renamed = () => {
    setRenaming(null);
    reload();
  };

  const toggleGroup = (groupId: string) =>
    setCollapsed((prev) => {
      const next = new Set(prev);
      if (next.has(groupId)) next.delete(groupId);
      else next.add(groupId);
      return next;
    });

  const filtered = searched.trim() !== "";
  const sections = arrange(conversations, groups, filtered);
  const now = new Date();

  const item = (c: ConversationSummary) => (
    <ConversationRow
      key={c.conversation_id}
      conversation={c}
      current={c.conversation_id === currentId}
      groups={groups}
      now={now}
      renaming={renaming === c.conversation_id}
      onStartRename={() => setRenaming(c.conversation_id)}
      onCancelRename={() => setRenaming(null)}
      onRenamed={renamed}
      onNavigate={onNavigate}
      act={act}
      onDelete={() => setPending({ kind: "conversation", item: c })}
    />
  );

  return (
    <nav className="sidebar" id={id} aria-labelledby="sidebar-heading">
      <div className="sidebar-head">
        <h2 id="sidebar-heading">Conversations</h2>
        <button type="button" className="primary" onClick={onNewChat}>
          New chat
        </button>
      </div>
      <SidebarTools query={query} onQuery={setQuery} onGroupCreated={reload} />
      {error && (
        <p className="error" role="alert">
          {error}
        </p>
      )}
      {loaded && conversations.length === 0 && (
        <p className="muted sidebar-empty">
          {filtered
            ? `No conversation title contains \u201c${searched.trim()}\u201d.`
            : "No conversations yet: ask a question to start one."}
        </p>
      )}
      <ul className="sections">
        {sections.map((section) => {
          if (section.group === null) {
            if (section.conversations.length === 0) return null;
            return (
              <li key="ungrouped" className="section">
                {groups.length > 0 && <h3 className="section-title">Ungrouped</h3>}
                <ul className="conversations">{section.conversations.map(item)}</ul>
              </li>
            );
          }
          const group = section.group;
          return (
            <GroupSection
              key={group.group_id}
              group={group}
              conversations={section.conversations}
              open={!collapsed.has(group.group_id)}
              onToggle={() => toggleGroup(group.group_id)}
              renaming={renaming === group.group_id}
              onStartRename={() => setRenaming(group.group_id)}
              onCancelRename={() => setRenaming(null)}
              onRenamed={renamed}
              onDelete={() => setPending({ kind: "group", item: group, count: group.conversation_count })}
              row={item}
            />
          );
        })}
      </ul>
      <DeleteDialog
        pending={pending}
        busy={deleting}
        onConfirm={() => void confirmDelete()}
        onClose={() => setPending(null)}
      />
    </nav>
  );
}

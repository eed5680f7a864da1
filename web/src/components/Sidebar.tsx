/** The conversations sidebar: search, groups, and each conversation's actions. */
import { useEffect, useState } from "react";

import { describeError } from "../api/client";
import {
  createGroup,
  deleteConversation,
  deleteGroup,
  listConversations,
  listGroups,
  renameGroup,
} from "../api/resources";
import type { ConversationSummary, Group } from "../api/types";
import { arrange } from "../conversations/list";
import { ConversationRow } from "./ConversationRow";
import { ConfirmDialog } from "./Modal";
import { NameForm } from "./NameForm";
import { closeMenu, RowMenu } from "./RowMenu";

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

type Pending =
  { kind: "conversation"; item: ConversationSummary } | { kind: "group"; item: Group; count: number };

export function Sidebar({ id, currentId, refreshToken, onNewChat, onNavigate, onDeleted }: SidebarProps) {
  const [conversations, setConversations] = useState<ConversationSummary[]>([]);
  const [groups, setGroups] = useState<Group[]>([]);
  const [loaded, setLoaded] = useState(false);
  const [query, setQuery] = useState("");
  const [searched, setSearched] = useState("");
  const [version, setVersion] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [renaming, setRenaming] = useState<string | null>(null);
  const [addingGroup, setAddingGroup] = useState(false);
  const [collapsed, setCollapsed] = useState<ReadonlySet<string>>(new Set());
  const [pending, setPending] = useState<Pending | null>(null);
  const [deleting, setDeleting] = useState(false);

  // search as the user types, once they pause
  useEffect(() => {
    const timer = window.setTimeout(() => setSearched(query), 250);
    return () => window.clearTimeout(timer);
  }, [query]);

  useEffect(() => {
    const abort = new AbortController();
    Promise.all([listConversations(searched, abort.signal), listGroups(abort.signal)]).then(
      ([list, groupList]) => {
        setConversations(list);
        setGroups(groupList);
        setLoaded(true);
        setError(null);
      },
      (exc: unknown) => {
        if (!abort.signal.aborted) setError(`Cannot list conversations: ${describeError(exc)}`);
      },
    );
    return () => abort.abort();
  }, [searched, refreshToken, version]);

  const reload = () => setVersion((v) => v + 1);
  const act = async (what: string, action: () => Promise<unknown>) => {
    try {
      await action();
      setError(null);
    } catch (exc) {
      setError(`${what} failed: ${describeError(exc)}`);
    }
    reload();
  };

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
      onRenamed={() => {
        setRenaming(null);
        reload();
      }}
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
      <div className="sidebar-tools">
        <label htmlFor="conversation-search" className="visually-hidden">
          Search conversation titles
        </label>
        <input
          id="conversation-search"
          type="search"
          placeholder="Search titles"
          value={query}
          onChange={(event) => setQuery(event.target.value)}
        />
        {!addingGroup && (
          <button type="button" onClick={() => setAddingGroup(true)}>
            New group
          </button>
        )}
      </div>
      {addingGroup && (
        <NameForm
          label="Name of the new group"
          initial=""
          submitLabel="Create group"
          onCancel={() => setAddingGroup(false)}
          onSave={async (name) => {
            await createGroup(name);
            setAddingGroup(false);
            reload();
          }}
        />
      )}
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
          const open = !collapsed.has(group.group_id);
          const listId = `group-${group.group_id}`;
          return (
            <li key={group.group_id} className="section group" data-group={group.name}>
              <div className="group-head">
                {renaming === group.group_id ? (
                  <NameForm
                    label={`New name for group ${group.name}`}
                    initial={group.name}
                    submitLabel="Save"
                    onCancel={() => setRenaming(null)}
                    onSave={async (name) => {
                      await renameGroup(group.group_id, name);
                      setRenaming(null);
                      reload();
                    }}
                  />
                ) : (
                  <h3 className="section-title">
                    <button
                      type="button"
                      className="group-toggle"
                      aria-expanded={open}
                      aria-controls={listId}
                      onClick={() =>
                        setCollapsed((prev) => {
                          const next = new Set(prev);
                          if (open) next.add(group.group_id);
                          else next.delete(group.group_id);
                          return next;
                        })
                      }
                    >
                      <span className="chevron" aria-hidden="true">
                        {open ? "\u25be" : "\u25b8"}
                      </span>
                      {group.name}
                      <span className="count">
                        {section.conversations.length}
                        <span className="visually-hidden">
                          {section.conversations.length === 1 ? " conversation" : " conversations"}
                        </span>
                      </span>
                    </button>
                  </h3>
                )}
                <RowMenu label={`Actions for group ${group.name}`}>
                  <button
                    type="button"
                    onClick={(event) => {
                      closeMenu(event);
                      setRenaming(group.group_id);
                    }}
                  >
                    Rename group
                  </button>
                  <button
                    type="button"
                    className="danger-text"
                    onClick={(event) => {
                      closeMenu(event);
                      setPending({ kind: "group", item: group, count: group.conversation_count });
                    }}
                  >
                    Delete group
                  </button>
                </RowMenu>
              </div>
              {open && (
                <ul className="conversations" id={listId}>
                  {section.conversations.length === 0 ? (
                    <li className="muted group-empty">
                      Empty: move a conversation here from its {"\u22ef"} menu.
                    </li>
                  ) : (
                    section.conversations.map(item)
                  )}
                </ul>
              )}
            </li>
          );
        })}
      </ul>
      <ConfirmDialog
        open={pending !== null}
        title={
          pending?.kind === "group"
            ? `Delete the group \u201c${pending.item.name}\u201d?`
            : `Delete \u201c${pending?.kind === "conversation" ? pending.item.title : ""}\u201d?`
        }
        confirmLabel="Delete"
        busy={deleting}
        onConfirm={() => void confirmDelete()}
        onClose={() => setPending(null)}
      >
        <p>
          {pending?.kind === "group"
            ? `Its ${pending.count} conversation${pending.count === 1 ? "" : "s"} stay, ungrouped.`
            : "Its questions, answers and their evidence are deleted for good."}
        </p>
      </ConfirmDialog>
    </nav>
  );
}

/** Under the sidebar's heading: the title search, and "New group" with its name form. */
import { useState } from "react";

import { createGroup } from "../api/resources";
import { NameForm } from "../shared/NameForm";

export function SidebarTools({
  query,
  onQuery,
  onGroupCreated,
}: {
  query: string;
  onQuery: (query: string) => void;
  onGroupCreated: () => void;
}) {
  const [addingGroup, setAddingGroup] = useState(false);
  return (
    <>
      <div className="sidebar-tools">
        <label htmlFor="conversation-search" className="visually-hidden">
          Search conversation titles
        </label>
        <input
          id="conversation-search"
          type="search"
          placeholder="Search titles"
          value={query}
          onChange={(event) => onQuery(event.target.value)}
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
            onGroupCreated();
          }}
        />
      )}
    </>
  );
}

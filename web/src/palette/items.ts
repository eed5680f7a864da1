/** The palette's items, built from what the app and the API list. */
import type { ConversationSummary, DocumentInfo, GraphSourceInfo, SettingField } from "../api/types";
import { KIND_LABELS, type MapCard, type MapGroup } from "../map/codebaseMap.data";
import { settingLabel } from "../settings/form";
import type { PaletteItem } from "./palette";

/** The last part of a `/`-separated path. */
function baseName(path: string): string {
  return path.slice(path.lastIndexOf("/") + 1) || path;
}

function day(iso: string): string {
  const date = new Date(iso);
  return Number.isNaN(date.getTime()) ? iso : date.toLocaleDateString(undefined, { dateStyle: "medium" });
}

/** The screens (the map only in developer mode) and the settings drawer. */
export function screenItems(developerMode: boolean): PaletteItem[] {
  const items: PaletteItem[] = [
    {
      id: "screen:chat",
      section: "Screens",
      title: "Chat",
      detail: "A new chat",
      keywords: "ask question new conversation",
      target: { kind: "route", route: { view: "chat", conversationId: null } },
    },
    {
      id: "screen:corpus",
      section: "Screens",
      title: "Corpus",
      detail: "The documents, uploads, backups and evaluations",
      keywords: "documents files upload",
      target: { kind: "route", route: { view: "corpus" } },
    },
    {
      id: "screen:graph",
      section: "Screens",
      title: "Graph",
      detail: "The message graph: archives, builds and entities",
      keywords: "messages archives entities",
      target: { kind: "route", route: { view: "graph", entity: null, day: null } },
    },
    {
      id: "screen:settings",
      section: "Screens",
      title: "Settings",
      detail: "Every runtime setting",
      keywords: "preferences configuration",
      target: { kind: "settings", name: null },
    },
  ];
  if (developerMode) {
    items.push({
      id: "screen:map",
      section: "Screens",
      title: "Map",
      detail: "The codebase map: the system's parts and how they connect",
      keywords: "codebase architecture developer",
      target: { kind: "route", route: { view: "map", card: null } },
    });
  }
  return items;
}

export function actionItems(developerMode: boolean): PaletteItem[] {
  return [
    {
      id: "action:developer-mode",
      section: "Actions",
      title: developerMode ? "Turn developer mode off" : "Turn developer mode on",
      detail: developerMode
        ? "Hides the codebase map from the header and this palette, and the answers' debug details"
        : "Shows the codebase map in the header and this palette, and how each answer was built",
      keywords: "developer mode map debug",
      target: { kind: "developer-mode", on: !developerMode },
    },
  ];
}

/** Saved conversations, most recent first (as the API lists them). */
export function conversationItems(conversations: readonly ConversationSummary[]): PaletteItem[] {
  return conversations.map((c) => ({
    id: `conversation:${c.conversation_id}`,
    section: "Conversations",
    title: c.title || "Untitled conversation",
    detail: `${c.message_count} message${c.message_count === 1 ? "" : "s"}, ${day(c.updated_at)}`,
    target: { kind: "route", route: { view: "chat", conversationId: c.conversation_id } },
  }));
}

/** The corpus's documents: found by file name or path, opened in the corpus tree. */
export function documentItems(documents: readonly DocumentInfo[]): PaletteItem[] {
  return documents.map((d) => ({
    id: `document:${d.relative_path}`,
    section: "Documents",
    title: baseName(d.relative_path),
    detail: `${d.relative_path} \u00b7 ${d.status.replace("_", " ")}`,
    keywords: d.file_type,
    target: { kind: "route", route: { view: "corpus", path: d.relative_path } },
  }));
}

/** The message archives of GRAPH_DOCS_PATH, shown on the Graph screen. */
export function archiveItems(sources: readonly GraphSourceInfo[]): PaletteItem[] {
  return sources.map((s) => ({
    id: `archive:${s.path}`,
    section: "Archives",
    title: baseName(s.path),
    detail: s.supported
      ? `${s.path} \u00b7 ${s.days} day${s.days === 1 ? "" : "s"} in the graph`
      : `${s.path} \u00b7 not readable: ${s.reason ?? "unsupported"}`,
    keywords: `${s.kind ?? ""} archive messages`,
    target: { kind: "route", route: { view: "graph", entity: null, day: null, archive: s.path } },
  }));
}

/** Every setting, found by its label, its name or its description; opens the drawer at it. */
export function settingItems(fields: readonly SettingField[]): PaletteItem[] {
  return fields.map((f) => ({
    id: `setting:${f.name}`,
    section: "Settings",
    title: settingLabel(f.name),
    detail: f.runtime_editable ? f.name : `${f.name} (needs a restart)`,
    keywords: f.description ?? "",
    target: { kind: "settings", name: f.name },
  }));
}

/** The codebase map's cards: found by title, path or description; spotlit on the map. */
export function mapItems(cards: readonly MapCard[], groups: readonly MapGroup[]): PaletteItem[] {
  const label = new Map(groups.map((g) => [g.id, g.label]));
  return cards.map((c) => ({
    id: `map:${c.id}`,
    section: "Map",
    title: c.title,
    detail: `${KIND_LABELS[c.kind]} \u00b7 ${label.get(c.group) ?? c.group} \u00b7 ${c.source.path}`,
    keywords: c.description,
    target: { kind: "route", route: { view: "map", card: c.id } },
  }));
}

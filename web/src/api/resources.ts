/** The REST resources the screens use, one typed function per endpoint. */
import { getEvents, getJson, postForm, sendCommand, sendJson } from "./client";
import type { SseMessage } from "./sse";
import type {
  ConversationDetail,
  ConversationPatch,
  ConversationSummary,
  DeleteResponse,
  DocumentList,
  Group,
  IngestLaunched,
  IngestProgress,
  SettingsPatchResponse,
  SettingsResponse,
  SettingValue,
  UploadResponse,
} from "./types";

const seg = encodeURIComponent;

// --- conversations and their groups ---------------------------------------------------

/** Conversations, most recently updated first; `q` filters by title. */
export function listConversations(q: string, signal?: AbortSignal): Promise<ConversationSummary[]> {
  const query = q.trim() ? `?${new URLSearchParams({ q: q.trim() })}` : "";
  return getJson<ConversationSummary[]>(`/api/conversations${query}`, signal);
}

/** One conversation with every message and each answer's evidence snapshot. */
export function getConversation(id: string, signal?: AbortSignal): Promise<ConversationDetail> {
  return getJson<ConversationDetail>(`/api/conversations/${seg(id)}`, signal);
}

/** Rename and/or move (`group_id: null` ungroups); never changes `updated_at`. */
export function patchConversation(id: string, patch: ConversationPatch): Promise<ConversationSummary> {
  return sendJson<ConversationSummary>("PATCH", `/api/conversations/${seg(id)}`, patch);
}

export function deleteConversation(id: string): Promise<void> {
  return sendCommand("DELETE", `/api/conversations/${seg(id)}`);
}

export function listGroups(signal?: AbortSignal): Promise<Group[]> {
  return getJson<Group[]>("/api/groups", signal);
}

export function createGroup(name: string): Promise<Group> {
  return sendJson<Group>("POST", "/api/groups", { name });
}

export function renameGroup(id: string, name: string): Promise<Group> {
  return sendJson<Group>("PATCH", `/api/groups/${seg(id)}`, { name });
}

/** Delete a group; its conversations stay, ungrouped. */
export function deleteGroup(id: string): Promise<void> {
  return sendCommand("DELETE", `/api/groups/${seg(id)}`);
}

// --- settings ------------------------------------------------------------------------

export function getSettings(signal?: AbortSignal): Promise<SettingsResponse> {
  return getJson<SettingsResponse>("/api/settings", signal);
}

/** Set (a value) or remove (null) runtime overrides; a refusal is an `ApiError` (422). */
export function patchSettings(values: Record<string, SettingValue>): Promise<SettingsPatchResponse> {
  return sendJson<SettingsPatchResponse>("PATCH", "/api/settings", { values });
}

// --- the corpus ----------------------------------------------------------------------

export function listDocuments(signal?: AbortSignal): Promise<DocumentList> {
  return getJson<DocumentList>("/api/documents", signal);
}

/** Delete documents from both indexes, optionally removing their files too. */
export function deleteDocuments(docIds: string[], removeFile: boolean): Promise<DeleteResponse> {
  return sendJson<DeleteResponse>("POST", "/api/documents/delete", {
    doc_ids: docIds,
    remove_file: removeFile,
  });
}

/** Upload a form built by `uploadForm`. */
export function uploadDocuments(form: FormData, signal?: AbortSignal): Promise<UploadResponse> {
  return postForm<UploadResponse>("/api/documents/upload", form, signal);
}

// --- ingest jobs ---------------------------------------------------------------------

/** Launch an ingest (or, with `reingest`, a full re-processing) of the whole corpus. */
export function launchIngest(reingest: boolean): Promise<IngestLaunched> {
  return sendJson<IngestLaunched>("POST", "/api/ingest", { reingest });
}

export function getIngestJob(id: string, signal?: AbortSignal): Promise<IngestProgress> {
  return getJson<IngestProgress>(`/api/ingest/${seg(id)}`, signal);
}

/** The job's `progress`, `done` and `error` events as they come. */
export function ingestEvents(id: string, signal?: AbortSignal): AsyncGenerator<SseMessage> {
  return getEvents(`/api/ingest/${seg(id)}/events`, signal);
}

/**
 * The REST resources the screens use, one typed function per endpoint. A long-running
 * job's own endpoints (its state, `/events`, `/kill`) are read through its kind's
 * descriptor instead (`jobKind` in `jobs.ts`): `ingestJobs`, `graphBuilds`, `backupRuns`.
 */
import { getBlob, getJson, postForm, sendCommand, sendJson } from "./client";
import type {
  BackupList,
  BackupRunInfo,
  BackupRunList,
  ChunkPreview,
  ConversationDetail,
  Corpus,
  ConversationPatch,
  ConversationSummary,
  DeleteResponse,
  DocumentList,
  ForgetReceipt,
  GraphBuild,
  GraphBuildList,
  GraphBuildRequest,
  GraphBuildsLaunched,
  GraphDay,
  GraphEntityList,
  GraphNeighbourhood,
  GraphSourceList,
  GraphSourceRemoved,
  GraphStatus,
  GraphUploadResponse,
  Group,
  IngestLaunched,
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

// --- the message graph -----------------------------------------------------------------

/** The graph's size and state; a `403 graph_disabled` ApiError while GRAPH_ENABLED=false. */
export function getGraphStatus(signal?: AbortSignal): Promise<GraphStatus> {
  return getJson<GraphStatus>("/api/graph/status", signal);
}

export function listGraphSources(signal?: AbortSignal): Promise<GraphSourceList> {
  return getJson<GraphSourceList>("/api/graph/sources", signal);
}

/** Upload archives (a chat.db with its -wal/-shm); each file's outcome, and the builds launched. */
export function uploadGraphSources(
  files: readonly File[],
  signal?: AbortSignal,
): Promise<GraphUploadResponse> {
  const form = new FormData();
  for (const file of files) form.append("files", file, file.name);
  return postForm<GraphUploadResponse>("/api/graph/sources", form, signal);
}

/** Delete an archive (the database and its companions); its days leave the graph in a removal run. */
export function deleteGraphSource(path: string): Promise<GraphSourceRemoved> {
  return sendJson<GraphSourceRemoved>("DELETE", `/api/graph/sources/${pathSegments(path)}`);
}

/** Build (or resume) `paths`, or every supported archive when omitted. */
export function launchGraphBuilds(paths?: string[]): Promise<GraphBuildsLaunched> {
  return sendJson<GraphBuildsLaunched>("POST", "/api/graph/builds", paths ? { paths } : {});
}

/** The days a rebuild extracts again (`YYYY-MM-DD`, both included); omitted: every day. */
export interface DayRange {
  from?: string | null;
  to?: string | null;
}

/** Rebuild the days of `range` (every day when it names none) of every archive: one run. */
export function launchGraphRebuild(range: DayRange = {}): Promise<GraphBuildsLaunched> {
  const body: GraphBuildRequest = { rebuild: true };
  if (range.from) body.from = range.from;
  if (range.to) body.to = range.to;
  return sendJson<GraphBuildsLaunched>("POST", "/api/graph/builds", body);
}

/** Empty the graph (its archives kept) in a run, followed like a build. */
export function resetGraph(): Promise<GraphBuild> {
  return sendJson<GraphBuild>("POST", "/api/graph/reset");
}

export function listGraphBuilds(signal?: AbortSignal): Promise<GraphBuildList> {
  return getJson<GraphBuildList>("/api/graph/builds", signal);
}

/** Entities whose name contains `q`, or the most connected ones when `q` is blank. */
export function listGraphEntities(q: string, signal?: AbortSignal): Promise<GraphEntityList> {
  const query = new URLSearchParams({ limit: "30" });
  if (q.trim()) query.set("q", q.trim());
  return getJson<GraphEntityList>(`/api/graph/entities?${query}`, signal);
}

export function getNeighbourhood(
  entity: string,
  depth: number,
  signal?: AbortSignal,
): Promise<GraphNeighbourhood> {
  const query = new URLSearchParams({ entity, depth: String(depth) });
  return getJson<GraphNeighbourhood>(`/api/graph/neighbourhood?${query}`, signal);
}

/** One transcript day (the drill-down from an entity to what it was extracted from). */
export function getGraphDay(docKey: string, signal?: AbortSignal): Promise<GraphDay> {
  return getJson<GraphDay>(`/api/graph/days/${seg(docKey)}`, signal);
}

/** Forget every message of a thread (its id: the part of a day's doc_key before `::`). */
export function forgetGraphThread(threadId: string): Promise<ForgetReceipt> {
  return sendJson<ForgetReceipt>("DELETE", `/api/graph/messages/threads/${seg(threadId)}`);
}

/** Forget every message of the days `from`..`to` (`YYYY-MM-DD`, both included), of one thread when given. */
export function forgetGraphDays(from: string, to: string, threadId?: string): Promise<ForgetReceipt> {
  const query = new URLSearchParams({ from, to });
  if (threadId) query.set("thread_id", threadId);
  return sendJson<ForgetReceipt>("DELETE", `/api/graph/messages?${query.toString()}`);
}

/** A path under a watched folder as URL path segments (its slashes kept). */
function pathSegments(path: string): string {
  return path.split("/").map(seg).join("/");
}

// --- backups (one zip per export in each corpus's varagity-exports/ folder) -----------

/** A corpus's bundles with their verdicts and drift, and what a restore would replace. */
export function listBackups(corpus: Corpus, signal?: AbortSignal): Promise<BackupList> {
  return getJson<BackupList>(`/api/backups/${corpus}`, signal);
}

/** Recent export and restore runs of a corpus, newest first. */
export function listBackupRuns(corpus: Corpus, signal?: AbortSignal): Promise<BackupRunList> {
  return getJson<BackupRunList>(`/api/backups/${corpus}/runs`, signal);
}

/** Launch an export run; 409 corpus_busy names whoever writes the corpus now. */
export function exportBackup(corpus: Corpus): Promise<BackupRunInfo> {
  return sendJson<BackupRunInfo>("POST", `/api/backups/${corpus}/export`);
}

/** Launch a restore run replacing the corpus with the bundle `name`. */
export function restoreBackup(corpus: Corpus, name: string): Promise<BackupRunInfo> {
  return sendJson<BackupRunInfo>("POST", `/api/backups/${corpus}/restore`, { name });
}

// --- page previews of evidence ------------------------------------------------------

/** The page a chunk came from (image URL and highlight boxes), or why there is none;
 * with `quote`, only that span of the chunk's text is highlighted. */
export function getChunkPreview(
  chunkId: string,
  signal?: AbortSignal,
  quote?: { start: number; end: number } | null,
): Promise<ChunkPreview> {
  const query = quote ? `?start=${quote.start}&end=${quote.end}` : "";
  return getJson<ChunkPreview>(`/api/chunks/${seg(chunkId)}/preview${query}`, signal);
}

/** A rendered page (the envelope's `image_url`), fetched with the API key. */
export function getPreviewImage(imageUrl: string, signal?: AbortSignal): Promise<Blob> {
  return getBlob(imageUrl, signal);
}

/**
 * Names for the generated OpenAPI types the client uses. Everything here is an alias
 * of `generated.ts` (written by `npm run gen:api` from `varagity_api/openapi.json`).
 */
import type { components } from "./generated";

type Schemas = components["schemas"];

export type ChatRequest = Schemas["ChatRequest"];
export type DoneEvent = Schemas["DoneEvent"];
export type ErrorEvent = Schemas["ErrorEvent"];
export type HealthResponse = Schemas["HealthResponse"];
export type Method = Schemas["SearchResponse"]["method"];
export type QueuedEvent = Schemas["QueuedEvent"];
export type ReasoningEvent = Schemas["ReasoningEvent"];
export type RetrievalEvent = Schemas["RetrievalEvent"];
export type RetrievalTrace = Schemas["RetrievalTrace"];
export type Source = Schemas["Source"];
export type QuoteSpan = Schemas["QuoteSpan"];
export type AnswerQuote = Schemas["AnswerQuote"];
export type AnswerDebug = Schemas["AnswerDebug"];
export type ChunkPreview = Schemas["ChunkPreview"];
export type HighlightBox = Schemas["HighlightBox"];
export type TokenEvent = Schemas["TokenEvent"];

export type ConversationSummary = Schemas["ConversationSummary"];
export type ConversationDetail = Schemas["ConversationDetail"];
export type ConversationPatch = Schemas["ConversationPatch"];
export type Message = Schemas["Message"];
export type Group = Schemas["Group"];
export type Feedback = Schemas["Feedback"];
export type FeedbackRequest = Schemas["FeedbackRequest"];

export type SettingField = Schemas["SettingField"];
export type SettingValue = SettingField["value"];
export type SettingsResponse = Schemas["SettingsResponse"];
export type SettingsPatchResponse = Schemas["SettingsPatchResponse"];
export type SettingError = Schemas["SettingError"];
export type StaleFlag = Schemas["StaleFlag"];

export type DocumentInfo = Schemas["DocumentInfo"];
export type DocumentStatus = DocumentInfo["status"];
export type DocumentList = Schemas["DocumentList"];
export type DeleteResponse = Schemas["DeleteResponse"];
export type ForgetReceipt = Schemas["ForgetReceiptInfo"];
export type StoreReceipt = Schemas["StoreReceiptInfo"];
export type UploadResponse = Schemas["UploadResponse"];

export type IngestLaunched = Schemas["IngestLaunched"];
export type IngestProgress = Schemas["IngestProgress"];

export type Corpus = RetrievalEvent["corpus"];
export type DaySource = Schemas["DaySource"];
export type GraphEvidence = Schemas["GraphEvidence"];
export type EvidenceEntity = Schemas["EvidenceEntity"];
export type EvidenceRelation = Schemas["EvidenceRelation"];

export type GraphStatus = Schemas["GraphStatus"];
export type GraphSourceInfo = Schemas["GraphSourceInfo"];
export type GraphSourceList = Schemas["GraphSourceList"];
export type GraphUploadResponse = Schemas["GraphUploadResponse"];
export type GraphSourceRemoved = Schemas["GraphSourceRemoved"];
export type GraphBuild = Schemas["GraphBuild"];
export type GraphBuildList = Schemas["GraphBuildList"];
export type GraphBuildsLaunched = Schemas["GraphBuildsLaunched"];
export type GraphBuildRequest = Schemas["GraphBuildRequest"];
export type GraphEntityInfo = Schemas["GraphEntityInfo"];
export type GraphEntityList = Schemas["GraphEntityList"];
export type GraphNeighbourhood = Schemas["GraphNeighbourhood"];
export type GraphDayRef = Schemas["GraphDayRef"];
export type GraphDay = Schemas["GraphDay"];

export type BackupList = Schemas["BackupList"];
export type BundleInfo = Schemas["BundleInfo"];
export type BackupRunInfo = Schemas["BackupRunInfo"];
export type BackupRunList = Schemas["BackupRunList"];

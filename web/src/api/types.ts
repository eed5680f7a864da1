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
export type ReasoningEvent = Schemas["ReasoningEvent"];
export type RetrievalEvent = Schemas["RetrievalEvent"];
export type RetrievalTrace = Schemas["RetrievalTrace"];
export type Source = Schemas["Source"];
export type TokenEvent = Schemas["TokenEvent"];

/** A small typed client for the Varagity API: JSON requests, uploads and event streams. */
import { readSse, type SseMessage } from "./sse";
import type { HealthResponse } from "./types";

/** Every API failure, in the service's `{"code", "message"}` shape. */
export class ApiError extends Error {
  readonly status: number;
  readonly code: string;
  /** The whole parsed error body (a refused settings patch adds an `errors` list). */
  readonly body: unknown;

  constructor(status: number, code: string, message: string, body: unknown = null) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.code = code;
    this.body = body;
  }
}

async function errorFrom(response: Response): Promise<ApiError> {
  const text = await response.text();
  try {
    const body: unknown = JSON.parse(text);
    if (body && typeof body === "object" && "code" in body && "message" in body) {
      return new ApiError(response.status, String(body.code), String(body.message), body);
    }
  } catch {
    // not JSON: a proxy or a crashed server answered; report its text below
  }
  const detail = text.trim().slice(0, 200) || response.statusText;
  return new ApiError(response.status, "http_error", `HTTP ${response.status}: ${detail}`);
}

/** Where the API key (the server's `API_KEY`) is kept once the user has typed it. */
export const API_KEY_STORAGE = "varagity.apiKey";

function storedKey(): string | null {
  return typeof localStorage === "undefined" ? null : localStorage.getItem(API_KEY_STORAGE);
}

/** Ask for the key (a 401 said one is needed or wrong); null when the user declines. */
function askForKey(wrong: boolean): string | null {
  if (typeof globalThis.prompt !== "function" || typeof localStorage === "undefined") return null;
  const key = globalThis.prompt(
    wrong
      ? "That API key was refused. Enter this server's API_KEY:"
      : "This server needs its API key (API_KEY):",
  );
  if (!key?.trim()) return null;
  localStorage.setItem(API_KEY_STORAGE, key.trim());
  return key.trim();
}

function withKey(init: RequestInit, key: string | null): RequestInit {
  if (!key) return init;
  return {
    ...init,
    headers: { ...(init.headers as Record<string, string>), authorization: `Bearer ${key}` },
  };
}

async function send(path: string, init: RequestInit): Promise<Response> {
  let response: Response;
  let key = storedKey();
  try {
    response = await fetch(path, withKey(init, key));
    if (response.status === 401) {
      // asked once per refusal: a key typed in is kept and the request sent again
      key = askForKey(key !== null);
      if (key) response = await fetch(path, withKey(init, key));
    }
  } catch (exc) {
    if (exc instanceof DOMException && exc.name === "AbortError") throw exc;
    throw new ApiError(0, "network_error", `Cannot reach the API at ${path}: ${String(exc)}`);
  }
  if (!response.ok) throw await errorFrom(response);
  return response;
}

/** GET a JSON resource. */
export async function getJson<T>(path: string, signal?: AbortSignal): Promise<T> {
  const response = await send(path, { headers: { accept: "application/json" }, signal });
  return (await response.json()) as T;
}

/** GET a binary resource (an image) as a Blob, with the API key like every other call. */
export async function getBlob(path: string, signal?: AbortSignal): Promise<Blob> {
  const response = await send(path, { signal });
  return await response.blob();
}

/** Send `method` with an optional JSON body and read the JSON answer. */
export async function sendJson<T>(
  method: "POST" | "PUT" | "PATCH" | "DELETE",
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<T> {
  const response = await send(path, jsonInit(method, body, signal));
  return (await response.json()) as T;
}

/** Send `method` to an endpoint that answers `204 No Content`. */
export async function sendCommand(
  method: "POST" | "PATCH" | "DELETE",
  path: string,
  body?: unknown,
  signal?: AbortSignal,
): Promise<void> {
  await send(path, jsonInit(method, body, signal));
}

function jsonInit(method: string, body: unknown, signal: AbortSignal | undefined): RequestInit {
  const headers: Record<string, string> = { accept: "application/json" };
  if (body !== undefined) headers["content-type"] = "application/json";
  return { method, headers, body: body === undefined ? undefined : JSON.stringify(body), signal };
}

/** POST a multipart form (the browser writes its boundary) and read the JSON answer. */
export async function postForm<T>(path: string, form: FormData, signal?: AbortSignal): Promise<T> {
  const response = await send(path, {
    method: "POST",
    headers: { accept: "application/json" },
    body: form,
    signal,
  });
  return (await response.json()) as T;
}

async function* eventsOf(path: string, response: Response): AsyncGenerator<SseMessage> {
  const type = response.headers.get("content-type") ?? "";
  if (!type.startsWith("text/event-stream") || response.body === null) {
    throw new ApiError(
      response.status,
      "not_a_stream",
      `${path} answered ${type || "no body"}, not an event stream`,
    );
  }
  yield* readSse(response.body);
}

/** POST a JSON body and read the response as server-sent events until it ends. */
export async function* postEvents(
  path: string,
  body: unknown,
  signal?: AbortSignal,
): AsyncGenerator<SseMessage> {
  const response = await send(path, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "text/event-stream" },
    body: JSON.stringify(body),
    signal,
  });
  yield* eventsOf(path, response);
}

/** GET an event stream (like `EventSource`, but abortable and never reconnecting by itself). */
export async function* getEvents(path: string, signal?: AbortSignal): AsyncGenerator<SseMessage> {
  const response = await send(path, { headers: { accept: "text/event-stream" }, signal });
  yield* eventsOf(path, response);
}

/** `GET /api/health`: each component's state. */
export function getHealth(signal?: AbortSignal): Promise<HealthResponse> {
  return getJson<HealthResponse>("/api/health", signal);
}

/** A failure as one readable sentence (an `ApiError`'s message is the service's own). */
export function describeError(exc: unknown): string {
  if (exc instanceof Error) return exc.message;
  return String(exc);
}

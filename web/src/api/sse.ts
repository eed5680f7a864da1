/**
 * Server-sent events over any byte stream.
 *
 * `EventSource` can only GET, and `/api/chat` is a POST, so the client reads the
 * response body itself. The parser follows the WHATWG "event stream" interpretation
 * rules: lines end in CRLF, LF or CR (a CRLF may be split across chunks), `:` starts a
 * comment (sse-starlette's keep-alive pings), one space after the colon is dropped,
 * `data` lines join with "\n", a blank line dispatches, and an event without data is
 * not dispatched. An event left unterminated when the stream ends is discarded.
 */

/** One dispatched event. `event` is "message" when the server named none. */
export interface SseMessage {
  event: string;
  data: string;
  id: string | null;
}

/** Incremental parser: feed decoded text with `push`, get the completed events back. */
export class SseParser {
  private pending = "";
  private eventType = "";
  private dataLines: string[] = [];
  private lastId: string | null = null;
  private started = false;
  private dropLeadingLf = false;

  /** Parse another piece of the stream; returns the events it completed, in order. */
  push(text: string): SseMessage[] {
    let chunk = text;
    if (!this.started && chunk.length > 0) {
      this.started = true;
      if (chunk.startsWith("\uFEFF")) chunk = chunk.slice(1);
    }
    if (this.dropLeadingLf && chunk.length > 0) {
      // the previous chunk ended in "\r": a "\n" here is the rest of that CRLF
      if (chunk.startsWith("\n")) chunk = chunk.slice(1);
      this.dropLeadingLf = false;
    }
    const buffer = this.pending + chunk;
    const events: SseMessage[] = [];
    let lineStart = 0;
    for (let i = 0; i < buffer.length; i++) {
      const c = buffer[i];
      if (c !== "\n" && c !== "\r") continue;
      const line = buffer.slice(lineStart, i);
      if (c === "\r") {
        if (i + 1 < buffer.length) {
          if (buffer[i + 1] === "\n") i++;
        } else {
          this.dropLeadingLf = true;
        }
      }
      lineStart = i + 1;
      const event = this.line(line);
      if (event !== null) events.push(event);
    }
    this.pending = buffer.slice(lineStart);
    return events;
  }

  private line(line: string): SseMessage | null {
    if (line === "") return this.dispatch();
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    switch (field) {
      case "event":
        this.eventType = value;
        break;
      case "data":
        this.dataLines.push(value);
        break;
      case "id":
        if (!value.includes("\0")) this.lastId = value;
        break;
      default: // `retry` and unknown fields are ignored: the client never reconnects
        break;
    }
    return null;
  }

  private dispatch(): SseMessage | null {
    const event = this.eventType || "message";
    const hasData = this.dataLines.length > 0;
    const data = this.dataLines.join("\n");
    this.eventType = "";
    this.dataLines = [];
    if (!hasData) return null;
    return { event, data, id: this.lastId };
  }
}

/** The events of a byte stream (a `fetch` response body), as they complete. */
export async function* readSse(body: ReadableStream<Uint8Array>): AsyncGenerator<SseMessage> {
  const decoder = new TextDecoder("utf-8");
  const parser = new SseParser();
  const reader = body.getReader();
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      yield* parser.push(decoder.decode(value, { stream: true }));
    }
    yield* parser.push(decoder.decode());
  } finally {
    reader.releaseLock();
  }
}

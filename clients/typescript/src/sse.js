// Server-sent events: a line splitter that survives any chunk boundary (CRLF split across
// chunks included) and the frame assembly of the HTML standard's event-stream format.

import { AgentMemoryError, errorFor } from "./errors.js";
import { withCorrections } from "./corrections.js";

/** Accumulates decoded text into lines; `push` returns the complete lines so far. */
export class LineSplitter {
  constructor() {
    this.buffer = "";
    this.pendingCR = false;
  }

  push(text) {
    const lines = [];
    let start = 0;
    let i = 0;
    if (this.pendingCR && text.startsWith("\n")) {
      start = i = 1; // the LF of a CRLF whose CR ended the previous chunk
    }
    this.pendingCR = false;
    for (; i < text.length; i++) {
      const ch = text[i];
      if (ch === "\n" || ch === "\r") {
        lines.push(this.buffer + text.slice(start, i));
        this.buffer = "";
        if (ch === "\r") {
          if (i + 1 < text.length) {
            if (text[i + 1] === "\n") i++;
          } else {
            this.pendingCR = true;
          }
        }
        start = i + 1;
      }
    }
    this.buffer += text.slice(start);
    return lines;
  }

  /** The last line when the stream ends without a line break. */
  end() {
    const rest = this.buffer;
    this.buffer = "";
    return rest === "" ? [] : [rest];
  }
}

/** Accumulates lines into `{event, data}` frames. */
export class FrameAssembler {
  constructor() {
    this.event = null;
    this.data = [];
    this.first = true;
  }

  feed(line) {
    if (this.first) {
      this.first = false;
      if (line.startsWith("\uFEFF")) line = line.slice(1);
    }
    if (line === "") {
      if (this.data.length === 0) {
        this.event = null;
        return null;
      }
      const frame = { event: this.event || "message", data: this.data.join("\n") };
      this.event = null;
      this.data = [];
      return frame;
    }
    if (line.startsWith(":")) return null;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") this.event = value;
    else if (name === "data") this.data.push(value);
    return null;
  }
}

/** Every `{event, data}` frame of a byte stream (a `ReadableStream<Uint8Array>` or any
 * async iterable of byte chunks). */
export async function* frames(body) {
  const decoder = new TextDecoder("utf-8");
  const lines = new LineSplitter();
  const assembler = new FrameAssembler();
  for await (const chunk of chunksOf(body)) {
    for (const line of lines.push(decoder.decode(chunk, { stream: true }))) {
      const frame = assembler.feed(line);
      if (frame) yield frame;
    }
  }
  const tail = decoder.decode();
  for (const line of [...lines.push(tail), ...lines.end(), ""]) {
    const frame = assembler.feed(line);
    if (frame) yield frame;
  }
}

async function* chunksOf(body) {
  if (body && typeof body.getReader === "function") {
    const reader = body.getReader();
    try {
      for (;;) {
        const { done, value } = await reader.read();
        if (done) return;
        yield value;
      }
    } finally {
      reader.releaseLock();
    }
  } else {
    yield* body;
  }
}

/** A chat frame as the SDK's event: `{type: "delta", delta}`, `{type: "done", response}`,
 * `null` for frames to skip; throws the matching `ApiError` for an `error` frame. */
export function chatEvent({ event, data }) {
  if (data === "[DONE]") return null;
  let payload;
  try {
    payload = JSON.parse(data);
  } catch (cause) {
    throw new AgentMemoryError(`chat stream sent a frame that is not JSON: ${data.slice(0, 200)}`, { cause });
  }
  if (event === "delta") return { type: "delta", delta: String(payload?.delta ?? "") };
  if (event === "done") return { type: "done", response: withCorrections(payload) };
  if (event === "error") throw errorFor(Number(payload?.status) || 500, payload);
  return null;
}

/** The async iterator of a streamed chat turn: deltas, then one `done` event, last.
 * `stream.response` holds the final response once it has arrived. */
export class ChatStream {
  constructor(response, controller, release) {
    this._response = response;
    this._controller = controller;
    this._release = release;
    this._started = false;
    this.response = null;
    this.headers = response ? response.headers : null;
  }

  /** A stream of an answer that came whole (a JSON reply to a streaming request). */
  static of(body) {
    const stream = new ChatStream(null, null, null);
    stream._body = body;
    return stream;
  }

  async *[Symbol.asyncIterator]() {
    if (this._started) throw new AgentMemoryError("a chat stream can be iterated once");
    this._started = true;
    if (this._response === null) {
      this.response = this._body;
      if (this._body.reply) yield { type: "delta", delta: this._body.reply };
      yield { type: "done", response: this._body };
      return;
    }
    let finished = false;
    try {
      for await (const frame of frames(this._response.body)) {
        const part = chatEvent(frame);
        if (part === null) continue;
        if (part.type === "done") this.response = part.response;
        yield part;
      }
      finished = true;
    } catch (err) {
      if (err instanceof AgentMemoryError) throw err;
      const signal = this._controller?.signal;
      if (signal?.aborted && signal.reason !== undefined && !this._closed) throw signal.reason; // the caller's abort
      throw new AgentMemoryError(`chat stream broke off: ${err?.message ?? err}`, { cause: err });
    } finally {
      if (!finished) this.close();
      this._release?.();
    }
    if (this.response === null) throw new AgentMemoryError("chat stream ended without a final response");
  }

  /** Consumes the rest of the stream; the final response. */
  async final() {
    if (!this._started) {
      for await (const _ of this) { /* drain */ }
    }
    if (this.response === null) throw new AgentMemoryError("chat stream ended without a final response");
    return this.response;
  }

  /** The whole reply text, concatenated from the deltas (consumes the stream). */
  async text() {
    let out = "";
    for await (const part of this) if (part.type === "delta") out += part.delta;
    return out;
  }

  /** Stops reading and releases the connection. */
  close() {
    this._closed = true;
    try {
      this._controller?.abort();
    } catch { /* already closed */ }
  }
}

// `AgentMemory`: the client of the whole API, for Node ^20.19 or 22.12+ and modern browsers (only the
// platform's `fetch`, `AbortController`, `TextDecoder`, `FormData` and `Blob`).
//
//   const memory = new AgentMemory({ context: "acme-prod", baseUrl, apiKey });
//   const session = await memory.sessions.create({ scopes: ["org/acme/user/alice"] });
//   const reply = await memory.chat("What do you know about me?", { sessionId: session.id });
//
// Results are the service's JSON (camelCase, typed from openapi.yaml in index.d.ts); errors
// are `AgentMemoryError`, error responses `ApiError` subclasses by status (errors.js).

import { withCorrections } from "./corrections.js";
import { AgentMemoryError, NotFoundError, errorFor } from "./errors.js";
import { OPERATIONS, operationPath } from "./operations.js";
import { ChatStream } from "./sse.js";
import { DEFAULT_TIMEOUT_MS, ON_BEHALF_OF_HEADER, PARTITION_HEADER, Transport } from "./transport.js";

export const DEFAULT_URL = "http://127.0.0.1:8080";
export const CONTEXT_BYTE_BUDGET = 16 * 1024 * 1024;
export const DOWNLOAD_CONCURRENCY = 8;
export const USER_AGENT = "agent-memory-js";

/** Per-call options every method accepts beside its own. */
const CALL_OPTIONS = ["idempotencyKey", "onBehalfOf", "partition", "signal", "timeoutMs", "headers"];

function env(name) {
  // Node (and Deno, Bun) only: a browser has no environment and reads nothing.
  const proc = globalThis.process;
  return proc && proc.env ? proc.env[name] : undefined;
}

/** (SDK options, body fields without undefined values) of a method's options object. */
function split(options) {
  const sdk = {};
  const rest = {};
  for (const [key, value] of Object.entries(options || {})) {
    if (value === undefined) continue;
    if (CALL_OPTIONS.includes(key)) sdk[key] = value;
    else rest[key] = value;
  }
  return [sdk, rest];
}

function pick(object, keys) {
  const out = {};
  for (const key of keys) if (object && object[key] !== undefined) out[key] = object[key];
  return out;
}

export function newIdempotencyKey() {
  const c = globalThis.crypto;
  if (c && typeof c.randomUUID === "function") return `sdk-${c.randomUUID()}`;
  const bytes = new Uint8Array(16);
  c.getRandomValues(bytes);
  return `sdk-${Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("")}`;
}

/** A batch message: an object, a `[role, content]` pair or a bare string (a user turn). */
function message(m) {
  if (typeof m === "string") return { role: "user", content: m };
  if (Array.isArray(m)) return { role: m[0], content: m[1] };
  return { ...m };
}

/** The next page's cursor of a page (a `page` object, or a page number with the cursor beside it). */
export function nextCursor(page) {
  const info = page && typeof page.page === "object" && page.page !== null ? page.page : page;
  return info && info.hasMore && info.nextCursor ? info.nextCursor : null;
}

/**
 * The items of a collection, following cursors lazily: `for await (const x of pager)`,
 * `await pager.toArray()`, or `for await (const page of pager.pages())`.
 */
export class Paginator {
  constructor(fetchPage, key) {
    this._fetchPage = fetchPage;
    this._key = key;
  }

  async *pages() {
    let cursor = null;
    for (;;) {
      const page = await this._fetchPage(cursor);
      yield page;
      cursor = nextCursor(page);
      if (cursor === null) return;
    }
  }

  async *[Symbol.asyncIterator]() {
    for await (const page of this.pages()) yield* page[this._key] || [];
  }

  /** Every item (at most `max`). */
  async toArray({ max = Infinity } = {}) {
    const out = [];
    for await (const item of this) {
      if (out.length >= max) break;
      out.push(item);
    }
    return out;
  }
}

export class AgentMemory {
  /**
   * `context` names the context; `baseUrl` and `apiKey` default to AGENT_MEMORY_URL /
   * AGENT_MEMORY_API_KEY where there is an environment (Node), else http://127.0.0.1:8080
   * and no key. `partition` and `onBehalfOf` go on every call (and can be set per call).
   * `streamUrl` (default AGENT_MEMORY_STREAM_URL: a deployed stack's `ChatStreamUrl`, the chat
   * function's URL) is where `chat(..., { stream: true })` goes, so its deltas arrive as they are
   * made; without it a streamed chat goes to `baseUrl` (on AWS the HTTP API then delivers the
   * frames all at once).
   */
  constructor({
    context, baseUrl, apiKey, partition, onBehalfOf, streamUrl, timeoutMs = DEFAULT_TIMEOUT_MS, maxRetries,
    retryBudgetMs, contextByteBudget = CONTEXT_BYTE_BUDGET, downloadConcurrency = DOWNLOAD_CONCURRENCY,
    fetch, sleep, headers,
  } = {}) {
    if (!context || typeof context !== "string") throw new TypeError("AgentMemory: context is required");
    this.contextId = context;
    this.partition = partition ?? null;
    this.contextByteBudget = contextByteBudget;
    this.downloadConcurrency = downloadConcurrency;
    this.baseUrl = baseUrl || env("AGENT_MEMORY_URL") || DEFAULT_URL;
    const stream = streamUrl || env("AGENT_MEMORY_STREAM_URL");
    this.streamUrl = stream ? String(stream).replace(/\/+$/, "") : null;
    const key = apiKey ?? env("AGENT_MEMORY_API_KEY");
    const defaults = { accept: "application/json" };
    if (typeof window === "undefined") defaults["user-agent"] = USER_AGENT; // browsers forbid setting it
    if (key) defaults.authorization = `Bearer ${key}`;
    if (partition) defaults[PARTITION_HEADER] = partition;
    if (onBehalfOf) defaults[ON_BEHALF_OF_HEADER] = onBehalfOf;
    for (const [k, v] of Object.entries(headers || {})) defaults[k.toLowerCase()] = v;
    this._transport = new Transport({
      baseUrl: this.baseUrl, headers: defaults, timeoutMs, maxRetries, retryBudgetMs, fetch, sleep,
    });
    this.sessions = new Sessions(this);
    this.threads = new Threads(this);
    this.entities = new Entities(this);
    this.attributes = new Attributes(this);
    this.relations = new Relations(this);
    this.actions = new Actions(this);
    this.instructions = new Instructions(this);
    this.uncertainty = new Uncertainty(this);
    this.documents = new Documents(this);
    this.traces = new Traces(this);
    this.receipts = new Receipts(this);
    this.keys = new Keys(this);
    this.principals = new Principals(this);
    this.scopes = new Scopes(this);
  }

  // --- plumbing -------------------------------------------------------------------------

  /** The logical call of an operation. */
  _call(operationId, { params = {}, query, json, form, raw, contentType, idempotent = false, keyedWrite = false,
    sdk = {} } = {}) {
    const [method] = OPERATIONS[operationId];
    const path = operationPath(operationId, { context_id: this.contextId, ...params });
    const headers = { ...(sdk.headers || {}) };
    if (sdk.partition) headers[PARTITION_HEADER] = sdk.partition;
    if (sdk.onBehalfOf) headers[ON_BEHALF_OF_HEADER] = sdk.onBehalfOf;
    if (keyedWrite) headers["idempotency-key"] = sdk.idempotencyKey || newIdempotencyKey();
    return {
      operationId, method, path, query, json, form, raw, contentType, headers,
      idempotent: idempotent || method === "GET",
      keyedWrite, signal: sdk.signal, timeoutMs: sdk.timeoutMs,
    };
  }

  async _send(operationId, spec) {
    return (await this._transport.send(this._call(operationId, spec))).data;
  }

  /** A 204 removal: its erasure receipt id (the X-Erasure-Receipt header), or null. */
  async _sendForReceipt(operationId, spec) {
    const response = await this._transport.send(this._call(operationId, spec));
    return response.headers.get("x-erasure-receipt") || null;
  }

  _paged(operationId, { params, query = {}, key, pageSize, sdk }) {
    return new Paginator((cursor) => this._send(operationId, {
      params, sdk, query: { ...query, limit: pageSize, cursor: cursor ?? undefined },
    }), key);
  }

  // --- service --------------------------------------------------------------------------

  /** The URL an MCP host registers for this context (POST /api/v1/{context_id}/mcp, streamable
   *  HTTP), to be called with this client's key as its Authorization header (docs/mcp.md). */
  mcpUrl() {
    return `${this.baseUrl.replace(/\/+$/, "")}/api/v1/${encodeURIComponent(this.contextId)}/mcp`;
  }

  /** The service's OpenAPI document (GET /api/v1/openapi.json). */
  openapi(options = {}) {
    const [sdk] = split(options);
    return this._send("getOpenApiJson", { sdk });
  }

  health(options = {}) {
    const [sdk] = split(options);
    return this._send("health", { sdk });
  }

  /** The contexts this key may use, with their partitions. */
  contexts({ pageSize, ...options } = {}) {
    const [sdk] = split(options);
    return this._paged("listContexts", { key: "items", pageSize, sdk });
  }

  // --- writes ---------------------------------------------------------------------------

  /** Stores one turn; `result.extraction` is what it extracted. Retried safely under one
   * idempotency key (yours, or one made for this call). */
  async remember(text, options = {}) {
    const [sdk, fields] = split(options);
    return withCorrections(await this._send("writeFacts", {
      json: { text, ...fields }, idempotent: true, keyedWrite: true, sdk,
    }));
  }

  /** Stores a conversation: messages are `{role, content, ts}` objects, `[role, content]`
   * pairs or strings (user turns). */
  async rememberMany(messages, options = {}) {
    const [sdk, fields] = split(options);
    return withCorrections(await this._send("writeFactsBatch", {
      json: { messages: Array.from(messages, message), ...fields }, idempotent: true, keyedWrite: true, sdk,
    }));
  }

  forget(query, options = {}) {
    const [sdk, fields] = split(options);
    return this._send("forget", { json: { query, ...fields }, sdk });
  }

  // --- memory care ----------------------------------------------------------------------

  consolidate(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("consolidate", { json: fields, idempotent: true, keyedWrite: true, sdk });
  }

  reflect(query, options = {}) {
    const [sdk, fields] = split(options);
    return this._send("reflect", { json: { query, ...fields }, idempotent: true, keyedWrite: true, sdk });
  }

  elaborate(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("elaborate", { json: fields, idempotent: true, keyedWrite: true, sdk });
  }

  decay(options = {}) {
    const [sdk] = split(options);
    return this._send("lifecycleDecay", { json: {}, idempotent: true, sdk });
  }

  expire(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("lifecycleExpire", { json: fields, idempotent: true, sdk });
  }

  fsck(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("fsck", { json: fields, idempotent: true, sdk });
  }

  // --- reads ----------------------------------------------------------------------------

  /** Ranked memory for `query` (`result.hits`, best first), with the recall filters
   * (`include`, `asOf`, `sessionId`, `labels`, `atInstant`, `validFrom`, `validUntil`,
   * `lens`, `scopeView`, `source`, `location`). */
  recall(query, options = {}) {
    const [sdk, fields] = split(options);
    return this._send("query", { json: { query, ...fields }, idempotent: true, sdk });
  }

  /** The same as `recall` (the operation's name). */
  query(query, options = {}) {
    return this.recall(query, options);
  }

  /** Retrieved memory formatted for a prompt (`result.context`, `result.sources`). */
  context(query, options = {}) {
    const [sdk, fields] = split(options);
    return this._send("recallContext", { json: { query, ...fields }, idempotent: true, sdk });
  }

  /** Everything the key can read, by category; `limit` rows per table. */
  state(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("getState", { query: pick(fields, ["limit"]), sdk });
  }

  profile(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("getProfile", { query: pick(fields, ["limit"]), sdk });
  }

  /** One page of the audit trail (admin keys); pass `cursor` for the next. */
  /** One object by reference (`entity:<type>/<name>`, `attribute:<type>/<name>/<key>`,
   * `relation:<type>/<name>/<label>/<type>/<name>`, `trace:<id>`), with history and provenance. */
  inspect(ref, options = {}) {
    const [sdk, fields] = split(options);
    return this._send("inspect", {
      query: { ref, ...pick(fields, ["asOf", "atInstant", "validFrom", "validUntil"]) }, sdk,
    });
  }

  audit(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("listAudit", {
      query: pick(fields, ["limit", "cursor", "principal", "kind", "since", "until"]), sdk,
    });
  }

  /** Who this key is here: principal, kind, grants, and what a request may do. */
  whoami(options = {}) {
    const [sdk] = split(options);
    return this._send("whoami", { sdk });
  }

  /** The context as versioned NDJSON (docs/export.md), one line a string, as the service
   * streams it. Needs the admin verb; `includePrincipals` adds grants (never keys). */
  exportContext(options = {}) {
    const [sdk, fields] = split(options);
    const call = this._call("exportContext", {
      query: pick(fields, ["partition", "includePrincipals", "originals"]), sdk,
    });
    const transport = this._transport;
    async function* lines() {
      const { response, release } = await transport.response(call, { stream: true });
      try {
        const decoder = new TextDecoder();
        let rest = "";
        for await (const chunk of response.body) {
          rest += decoder.decode(chunk, { stream: true });
          const parts = rest.split("\n");
          rest = parts.pop();
          for (const line of parts) if (line) yield line;
        }
        rest += decoder.decode();
        if (rest) yield rest;
      } finally {
        release();
      }
    }
    // Iterate it line by line, or take every line at once with toArray().
    return {
      [Symbol.asyncIterator]: lines,
      async toArray() {
        const out = [];
        for await (const line of lines()) out.push(line);
        return out;
      },
    };
  }

  /** Write an export into this context: ids kept, re-keyed from another context; the same
   * stream twice writes nothing. `body`: the NDJSON text, its bytes, or its lines. */
  importContext(body, options = {}) {
    const [sdk] = split(options);
    const raw = Array.isArray(body) ? body.map((line) => `${line}\n`).join("") : body;
    return this._send("importContext", {
      raw, contentType: "application/x-ndjson", idempotent: true, sdk,
    });
  }

  /** Start an export as a job (docs/export.md "The job form"), for a context past what one
   * response carries on a deployed stack; poll `getExportJob`, or use `exportJob`. */
  startExportJob(options = {}) {
    const [sdk, fields] = split(options);
    return this._send("startExportJob", { json: pick(fields, ["partition", "includePrincipals", "originals"]), sdk });
  }

  /** An export job's state and progress; once succeeded, its presigned `downloadUrl`. */
  getExportJob(jobId, options = {}) {
    const [sdk] = split(options);
    return this._send("getExportJob", { params: { job_id: jobId }, sdk });
  }

  /** An import job awaiting its stream: PUT `size` bytes to `uploadUrl` with `uploadHeaders`,
   * then `startImportJob`; or use `importJob`. */
  createImportJob(size, options = {}) {
    const [sdk] = split(options);
    return this._send("createImportJob", { json: { size }, sdk });
  }

  /** Queue an uploaded import job (a repeat answers the job as it is). */
  startImportJob(jobId, options = {}) {
    const [sdk] = split(options);
    return this._send("startImportJob", { params: { job_id: jobId }, idempotent: true, sdk });
  }

  /** An import job's state and progress; once done, its `result` or `error`. */
  getImportJob(jobId, options = {}) {
    const [sdk] = split(options);
    return this._send("getImportJob", { params: { job_id: jobId }, sdk });
  }

  async _waitJob(job, read, { pollIntervalMs = 1000, waitTimeoutMs = 3_600_000, onProgress } = {}) {
    const deadline = Date.now() + waitTimeoutMs;
    while (job.state !== "succeeded" && job.state !== "failed") {
      if (Date.now() > deadline) {
        throw new AgentMemoryError(`the ${job.kind} job ${job.id} is still ${job.state} after ${waitTimeoutMs} ms`);
      }
      await new Promise((resolve) => setTimeout(resolve, pollIntervalMs));
      job = await read(job.id);
      if (onProgress) onProgress(job);
    }
    if (job.state === "failed") {
      const problem = job.error || { status: 500, title: "Internal error", detail: "the job failed" };
      throw errorFor(Number(problem.status) || 500, problem);
    }
    return job;
  }

  /** The export stream (NDJSON text) through the job form: start, wait (`onProgress` sees each
   * poll), download from the presigned URL (no API key goes there). A failed job throws its
   * problem as an `ApiError`. */
  async exportJob(options = {}) {
    const { pollIntervalMs, waitTimeoutMs, onProgress, ...rest } = options;
    const started = await this.startExportJob(rest);
    const job = await this._waitJob(started, (id) => this.getExportJob(id), { pollIntervalMs, waitTimeoutMs, onProgress });
    const got = await this._transport.fetch(job.downloadUrl, { method: "GET", signal: options.signal });
    if (got.status >= 300) {
      throw new AgentMemoryError(`the export download answered ${got.status}: ${(await got.text()).slice(0, 300)}`);
    }
    return got.text();
  }

  /** `importContext` through the job form: the stream PUT to a presigned URL, then checked
   * whole and written by the service's worker. A failed job throws the problem `importContext`
   * would have (a bad line names it). `body`: the NDJSON text, its bytes, or its lines. */
  async importJob(body, options = {}) {
    const { pollIntervalMs, waitTimeoutMs, onProgress, ...rest } = options;
    const raw = Array.isArray(body) ? body.map((line) => `${line}\n`).join("") : body;
    const bytes = typeof raw === "string" ? new TextEncoder().encode(raw) : raw;
    const created = await this.createImportJob(bytes.byteLength, rest);
    const put = await this._transport.fetch(created.uploadUrl, {
      method: created.uploadMethod || "PUT", headers: created.uploadHeaders || {}, body: bytes, signal: options.signal,
    });
    if (put.status >= 300) {
      throw new AgentMemoryError(`the presigned upload answered ${put.status}: ${(await put.text()).slice(0, 300)}`);
    }
    const started = await this.startImportJob(created.id, rest);
    const job = await this._waitJob(started, (id) => this.getImportJob(id), { pollIntervalMs, waitTimeoutMs, onProgress });
    return job.result;
  }

  // --- chat -----------------------------------------------------------------------------

  /**
   * One chat turn: the reply, its citations and `memoryUpdates`. With `stream: true`, a
   * `ChatStream`: an async iterator of `{type: "delta", delta}` events, then one
   * `{type: "done", response}` with the same response.
   */
  async chat(text, options = {}) {
    const [sdk, fields] = split(options);
    const { stream, ...rest } = fields;
    if (!stream) {
      return withCorrections(await this._send("chat", { json: { message: text, ...rest }, sdk }));
    }
    const call = this._call("chat", {
      json: { message: text, ...rest, stream: true }, sdk: { ...sdk, headers: { ...sdk.headers, accept: "text/event-stream" } },
    });
    if (this.streamUrl) call.baseUrl = this.streamUrl; // the chat function's URL streams; the API buffers
    const { response, controller, release } = await this._transport.response(call, { stream: true });
    const kind = response.headers.get("content-type") || "";
    if (!kind.includes("text/event-stream")) {
      // A tier-2 cache hit or an old server may answer JSON even when asked to stream.
      release();
      const body = withCorrections(await response.json());
      return ChatStream.of(body);
    }
    return new ChatStream(response, controller, release);
  }

  // --- threads (the Python SDK's names) ---------------------------------------------------

  appendThread(threadId, text, options) { return this.threads.append(threadId, text, options); }

  listThreadTurns(threadId, options) { return this.threads.turns(threadId, options); }

  getThreadTurn(threadId, turnIndex, options) { return this.threads.turn(threadId, turnIndex, options); }

  getThread(threadId, options) { return this.threads.get(threadId, options); }

  setThreadAcl(threadId, aclReaders, options) { return this.threads.setAcl(threadId, aclReaders, options); }

  threadContext(threadId, query, options) { return this.threads.context(threadId, query, options); }
}

/** The spec's name for the client: `new Spectron({ context, apiKey })`. */
export class Spectron extends AgentMemory {}

// --- sessions ---------------------------------------------------------------------------

/** A session (`id`, `scopes`, `labels`, `createdAt`, `closedAt`, `metadata`) bound to its client. */
export class Session {
  constructor(sessions, data) {
    Object.defineProperty(this, "_sessions", { value: sessions, enumerable: false });
    Object.assign(this, data);
  }

  close(options) { return this._sessions.close(this.id, options); }

  delete(options) { return this._sessions.delete(this.id, options); }

  context(query, options) { return this._sessions.context(this.id, query, options); }

  turns(options) { return this._sessions.turns(this.id, options); }

  chat(text, options = {}) { return this._sessions._client.chat(text, { ...options, sessionId: this.id }); }

  remember(text, options = {}) { return this._sessions._client.remember(text, { ...options, sessionId: this.id }); }
}

class Sessions {
  constructor(client) { this._client = client; }

  async create(options = {}) {
    const [sdk, fields] = split(options);
    return new Session(this, await this._client._send("createSession", {
      json: pick(fields, ["scopes", "labels", "metadata"]), sdk,
    }));
  }

  /** A handle on an existing session, to call its methods (no request is made). */
  handle(sessionId) {
    return new Session(this, { id: sessionId, scopes: [], labels: [], createdAt: "", closedAt: null, metadata: null });
  }

  list({ pageSize, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listSessions", { key: "items", pageSize, sdk });
  }

  /** Closing twice is the same as once, so it is retried like a read. */
  async close(sessionId, options = {}) {
    const [sdk] = split(options);
    return new Session(this, await this._client._send("closeSession", {
      params: { session_id: sessionId }, idempotent: true, sdk,
    }));
  }

  async delete(sessionId, options = {}) {
    const [sdk] = split(options);
    return this._client._sendForReceipt("deleteSession", { params: { session_id: sessionId }, idempotent: true, sdk });
  }

  context(sessionId, query, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("sessionContext", {
      params: { session_id: sessionId }, json: { query, ...fields }, idempotent: true, sdk,
    });
  }

  /** The session's turns, oldest first. */
  turns(sessionId, { pageSize, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listSessionTurns", { params: { session_id: sessionId }, key: "turns", pageSize, sdk });
  }
}

// --- threads ----------------------------------------------------------------------------

class Threads {
  constructor(client) { this._client = client; }

  /** The threads of this context and partition the caller may see, oldest first. */
  list({ pageSize, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listThreads", { key: "items", pageSize, sdk });
  }

  get(threadId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("getThread", { params: { thread_id: threadId }, sdk });
  }

  /**
   * Appends one turn: `{threadId, turnIndex, turnId, entityId, createdAt, replayed}`.
   * `aclReaders` left out sends no list (the thread's default applies); `[]` quarantines
   * the turn. The idempotency key (yours, or one made for this call) is reused by retries.
   */
  async append(threadId, text, options = {}) {
    const [sdk, fields] = split(options);
    const body = { text, ...pick(fields, ["entityId", "metadata", "aclReaders"]) };
    const { status, data } = await this._client._transport.send(this._client._call("appendThreadTurn", {
      params: { thread_id: threadId }, json: body, idempotent: true, keyedWrite: true, sdk,
    }));
    return { ...data, replayed: status === 200 };
  }

  /** Every readable turn after `afterIndex`, in order, following pages lazily. */
  turns(threadId, { afterIndex, entityId, pageSize = 100, ...options } = {}) {
    const [sdk] = split(options);
    return new Paginator((cursor) => this._client._send("listThreadTurns", {
      params: { thread_id: threadId }, sdk,
      query: cursor
        ? { limit: pageSize, entity_id: entityId, cursor }
        : { limit: pageSize, entity_id: entityId, after_index: afterIndex },
    }), "items");
  }

  turn(threadId, turnIndex, options = {}) {
    const [sdk] = split(options);
    if (!Number.isInteger(turnIndex)) throw new TypeError("turnIndex must be an integer");
    return this._client._send("getThreadTurn", { params: { thread_id: threadId, turn_index: turnIndex }, sdk });
  }

  setAcl(threadId, aclReaders, options = {}) {
    const [sdk] = split(options);
    return this._client._send("setThreadAcl", {
      params: { thread_id: threadId }, json: { aclReaders: aclReaders ?? null }, idempotent: true, sdk,
    });
  }

  /**
   * The latest `lastNTurns` turns, then up to five older semantic matches, as one flat list
   * of memory items (`text`, `turnId`, `turnIndex`, `origin`, `metadata`, `entityId`,
   * `score`, `createdAt`). Text the service did not inline is downloaded at most
   * `downloadConcurrency` (8) turns at a time, and all text counts against one
   * `contextByteBudget` (16 MiB): once crossed no later batch starts and an
   * `AgentMemoryError` is thrown.
   */
  async context(threadId, query, { lastNTurns = 10, recentFirst = false, entityId, ...options } = {}) {
    const [sdk] = split(options);
    const body = { query, lastNTurns, recentFirst, ...(entityId !== undefined ? { entityId } : {}) };
    const page = await this._client._send("threadContext", {
      params: { thread_id: threadId }, json: body, idempotent: true, sdk,
    });
    const seen = new Set();
    const items = (page.items || []).filter((item) => !seen.has(item.turnId) && seen.add(item.turnId));
    const budget = this._client.contextByteBudget;
    const step = Math.max(1, this._client.downloadConcurrency);
    const encoder = new TextEncoder();
    const out = [];
    let used = 0;
    for (let lo = 0; lo < items.length; lo += step) {
      const batch = items.slice(lo, lo + step);
      const texts = await Promise.all(batch.map((item) => this._itemText(threadId, item, sdk)));
      batch.forEach((item, i) => {
        const text = texts[i];
        if (text === null) return; // gone, or no longer readable, since the context call
        used += encoder.encode(text).length;
        out.push({
          text, turnId: item.turnId, turnIndex: item.turnIndex, origin: item.origin, metadata: item.metadata || {},
          entityId: item.entityId ?? null, score: item.score ?? null, createdAt: item.createdAt ?? null,
        });
      });
      if (used > budget) {
        throw new AgentMemoryError(`thread context exceeds the ${budget}-byte budget (${used} bytes after `
          + `${lo + batch.length} of ${items.length} items); ask for fewer turns`);
      }
    }
    return out;
  }

  async _itemText(threadId, item, sdk) {
    if (item.textInline && item.text !== null && item.text !== undefined) return item.text;
    let turn;
    try {
      turn = await this.turn(threadId, item.turnIndex, pick(sdk, ["partition", "onBehalfOf", "signal", "timeoutMs"]));
    } catch (err) {
      if (err instanceof NotFoundError) return null;
      throw err;
    }
    if (turn.turnId !== item.turnId) {
      throw new AgentMemoryError(`turn ${item.turnIndex} of thread ${threadId} changed while downloading`);
    }
    return turn.text;
  }
}

/** One entity's memory (a customer, a patient): `memory.thread(id)` is an ordered
 * conversation of that entity; `recall` is the entity-wide view across threads. */
export class Memory {
  constructor(entityId, { client }) {
    if (!client) throw new TypeError("Memory: pass { client }");
    this.entityId = entityId ?? null;
    this.client = client;
  }

  thread(threadId) { return new Thread(this, threadId); }

  /** Retrieved memory about this entity (`context`, `sources`). */
  recall(query, { k, ...options } = {}) {
    return this.client.context(query, { ...options, k, subject: this.entityId ?? undefined });
  }
}

export class Thread {
  constructor(memory, threadId) {
    this.memory = memory;
    this.threadId = threadId;
  }

  /** Appends a turn tagged with the entity, with no reader list (tenant-visible). */
  append(text, metadata, options = {}) {
    return this.memory.client.threads.append(this.threadId, text, {
      ...options, metadata, entityId: this.memory.entityId ?? undefined,
    });
  }

  context(query, { lastNTurns = 10, recentFirst = false, ...options } = {}) {
    return this.memory.client.threads.context(this.threadId, query, {
      ...options, lastNTurns, recentFirst, entityId: this.memory.entityId ?? undefined,
    });
  }

  turns(options = {}) {
    return this.memory.client.threads.turns(this.threadId, { ...options, entityId: this.memory.entityId ?? undefined });
  }
}

// --- the memory graph -----------------------------------------------------------------

class Entities {
  constructor(client) { this._client = client; }

  list({ type, pageSize, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listEntities", { query: { type }, key: "entities", pageSize, sdk });
  }

  /** The entity with its current attributes and relations, or those valid at `asOf`. */
  get(type, name, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("getEntity", { params: { type, name }, query: pick(fields, ["asOf", "limit"]), sdk });
  }

  /** One attribute's supersession chain, oldest to newest. */
  async history(type, name, key, options = {}) {
    const [sdk] = split(options);
    return (await this._client._send("getAttributeHistory", { params: { type, name, key }, sdk })).history;
  }

  /** Every attribute row of the entity, current and superseded, in key order. */
  allHistory(type, name, { pageSize, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listEntityHistory", { params: { type, name }, key: "history", pageSize, sdk });
  }

  async delete(type, name, options = {}) {
    const [sdk] = split(options);
    return this._client._sendForReceipt("deleteEntity", { params: { type, name }, idempotent: true, sdk });
  }
}

function lister(operationId, filters) {
  return class {
    constructor(client) { this._client = client; }

    list({ pageSize, ...options } = {}) {
      const [sdk, fields] = split(options);
      return this._client._paged(operationId, { query: pick(fields, filters), key: "items", pageSize, sdk });
    }

    [Symbol.asyncIterator]() { return this.list()[Symbol.asyncIterator](); }
  };
}

/** A collection whose facts are also read and deleted by id (and, with `correct`, corrected). */
function byId(Base, kind, { correct = false } = {}) {
  const cls = class extends Base {
    /** One fact by id (404: missing, deleted or outside the read region). */
    get(factId, options = {}) {
      const [sdk] = split(options);
      return this._client._send(`get${kind}`, { params: { fact_id: factId }, sdk });
    }

    /** Forgets this one fact as forget does (`purge`: with its superseded history). */
    delete(factId, options = {}) {
      const [sdk, fields] = split(options);
      return this._client._send(`delete${kind}`, {
        params: { fact_id: factId }, query: fields.purge ? { purge: "true" } : undefined, idempotent: true, sdk,
      });
    }
  };
  if (correct) {
    /** Corrects the fact: the new value supersedes it (history kept); `corrections` reports it. */
    cls.prototype.update = async function update(factId, value, options = {}) {
      const [sdk, fields] = split(options);
      return withCorrections(await this._client._send(`correct${kind}`, {
        params: { fact_id: factId }, json: { value, ...pick(fields, ["note", "observedAt"]) },
        idempotent: true, keyedWrite: true, sdk,
      }));
    };
  }
  return cls;
}

const Attributes = byId(lister("listAttributes", ["entity", "key"]), "Attribute", { correct: true });
const Relations = byId(lister("listRelations", ["src", "dst", "label"]), "Relation", { correct: true });
const Actions = byId(lister("listActions", ["actor", "verb", "since", "until"]), "Action");
const Instructions = byId(lister("listInstructions", []), "Instruction");

class Uncertainty extends lister("listUncertainty", ["entity", "resolved"]) {
  resolve(uncertaintyId, acceptedValue, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("resolveUncertainty", {
      params: { uncertainty_id: uncertaintyId }, json: { acceptedValue, ...pick(fields, ["note"]) }, sdk,
    });
  }
}

// --- documents ------------------------------------------------------------------------

const DOCUMENT_FIELDS = ["title", "filename", "format", "scopes", "labels", "observedAt", "source", "mimeType"];

function isBinary(source) {
  return (typeof Blob !== "undefined" && source instanceof Blob) || source instanceof ArrayBuffer
    || ArrayBuffer.isView(source);
}

class Documents {
  constructor(client) { this._client = client; }

  /**
   * Uploads a document: a string is its text (sent as JSON); a `Blob`, `File`,
   * `ArrayBuffer` or `Uint8Array` goes as a multipart file. The service stores the same
   * content once, so a retry after a lost reply cannot store it twice.
   */
  upload(source, options = {}) {
    const [sdk, fields] = split(options);
    const meta = pick(fields, DOCUMENT_FIELDS);
    if (typeof source === "string") {
      return this._client._send("uploadDocument", { json: { text: source, ...meta }, idempotent: true, sdk });
    }
    if (!isBinary(source)) throw new TypeError("documents.upload: pass a string, Blob, ArrayBuffer or Uint8Array");
    const name = meta.filename || source.name || "document.txt";
    const type = /\.(md|markdown)$/i.test(name) ? "text/markdown" : "text/plain";
    const blob = source instanceof Blob ? source : new Blob([source], { type });
    const form = new FormData();
    form.append("file", blob, name);
    for (const [key, value] of Object.entries(meta)) {
      if (key === "filename") continue;
      form.append(key, typeof value === "string" ? value : JSON.stringify(value));
    }
    if (meta.filename) form.append("filename", meta.filename);
    return this._client._send("uploadDocument", { form, idempotent: true, sdk });
  }

  /** A presigned URL to PUT a large document (`size` bytes) to; then `completeUpload`. */
  createUpload(size, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("createDocumentUpload", {
      json: { size, ...pick(fields, DOCUMENT_FIELDS) }, sdk,
    });
  }

  /** Queues an uploaded document for ingestion (a repeat answers the document as it is). */
  completeUpload(documentId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("completeDocumentUpload", { params: { document_id: documentId }, idempotent: true, sdk });
  }

  /** A document over the synchronous body cap: `createUpload`, the PUT of its bytes to the
   * presigned URL (no API key goes there), then `completeUpload`. */
  async uploadLarge(source, options = {}) {
    const bytes = typeof source === "string" ? new TextEncoder().encode(source)
      : source instanceof Blob ? new Uint8Array(await source.arrayBuffer())
        : source instanceof ArrayBuffer ? new Uint8Array(source) : source;
    const ticket = await this.createUpload(bytes.byteLength, options);
    const put = await this._client._transport.fetch(ticket.uploadUrl, {
      method: ticket.method || "PUT", headers: ticket.headers || {}, body: bytes, signal: options.signal,
    });
    if (put.status >= 300) {
      throw new AgentMemoryError(`the presigned upload answered ${put.status}: ${(await put.text()).slice(0, 300)}`);
    }
    return this.completeUpload(ticket.id, pick(options, ["partition", "onBehalfOf", "signal", "timeoutMs"]));
  }

  /** The documents the caller may see, oldest first, with their ingestion status. */
  list({ pageSize, status, mimeType, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listDocuments", {
      query: { status, mime_type: mimeType }, key: "documents", pageSize, sdk,
    });
  }

  get(documentId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("getDocument", { params: { document_id: documentId }, sdk });
  }

  /** The original bytes as uploaded; a large original kept in S3 is fetched from the presigned
   * URL the API redirects to. */
  async fetchRaw(documentId, options = {}) {
    const [sdk] = split(options);
    const call = this._client._call("getDocumentRaw", { params: { document_id: documentId }, sdk });
    const { response, release } = await this._client._transport.response(call, { stream: true });
    try {
      return new Uint8Array(await response.arrayBuffer());
    } finally {
      release();
    }
  }

  chunks(documentId, { pageSize, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listDocumentChunks", { params: { document_id: documentId }, key: "chunks", pageSize, sdk });
  }

  /** Re-ingests the document from its stored original (same id; unchanged chunks keep theirs);
   * then `waitReady`. `queued` is false when one was already running. */
  reprocess(documentId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("reprocessDocument", {
      params: { document_id: documentId }, idempotent: true, keyedWrite: true, sdk,
    });
  }

  /** Rebuilds the links between the documents' chunks and the entities they mention;
   * `continued`: the rest runs in the background. */
  recomputeLinks(options = {}) {
    const [sdk] = split(options);
    return this._client._send("recomputeDocumentLinks", { idempotent: true, keyedWrite: true, sdk });
  }

  /** Corpus search: the best chunks for `query` (`result.results`, best first), with `k`,
   * `mode`, `threshold` (0-1, of the best hit's score), `expandGraph` and a metadata `filter`. */
  query(query, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("queryDocuments", {
      json: { query, ...pick(fields, ["k", "mode", "threshold", "expandGraph", "filter"]) }, idempotent: true, sdk,
    });
  }

  /** The context's keyword index, most documents first (`sort: "normalised"`: alphabetical);
   * `q` keeps the keywords containing it, `minDocumentCount` those that many documents carry. */
  keywords({ pageSize, q, minDocumentCount, sort, ...options } = {}) {
    const [sdk] = split(options);
    return this._client._paged("listDocumentKeywords", {
      query: { q, minDocumentCount, sort }, key: "keywords", pageSize, sdk,
    });
  }

  /** One keyword with the documents that carry it. */
  keyword(normalised, options = {}) {
    const [sdk] = split(options);
    return this._client._send("getDocumentKeyword", { params: { normalised }, sdk });
  }

  /** Keywords matching `query`'s words (`result.results`), with `k` and `threshold`. */
  searchKeywords(query, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("searchDocumentKeywords", {
      json: { query, ...pick(fields, ["k", "threshold"]) }, idempotent: true, sdk,
    });
  }

  /** A document's keywords, best first. */
  documentKeywords(documentId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("listKeywordsOfDocument", { params: { document_id: documentId }, sdk });
  }

  async delete(documentId, options = {}) {
    const [sdk] = split(options);
    return this._client._sendForReceipt("deleteDocument", {
      params: { document_id: documentId }, idempotent: true, sdk,
    });
  }

  /** Polls until the document is no longer ingesting; throws after `timeoutMs`.
   * `onProgress` sees the document after each poll (`chunksDone` of `chunksTotal`). */
  async waitReady(documentId, { timeoutMs = 300_000, pollIntervalMs = 500, onProgress, ...options } = {}) {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const document = await this.get(documentId, options);
      if (onProgress) onProgress(document);
      if (document.status !== "ingesting" && document.status !== "uploading") return document;
      if (Date.now() + pollIntervalMs > deadline) {
        throw new AgentMemoryError(`document ${documentId} still ingesting after ${timeoutMs} ms`);
      }
      await this._client._transport.sleep(pollIntervalMs, options.signal);
    }
  }
}

/** Keys of this principal in this context (an admin's: every principal's). */
class Keys {
  constructor(client) { this._client = client; }

  /** Mint a key (`name`, `grants`, `ttlSeconds`); `result.key` is its secret, shown once. */
  create(options = {}) {
    const [sdk, fields] = split(options);
    const { ttlSeconds, ...body } = fields;
    return this._client._send("createKey", { json: body, query: { ttlSeconds }, sdk });
  }

  list(options = {}) {
    const [sdk] = split(options);
    return this._client._send("listKeys", { sdk });
  }

  rotate(name, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("rotateKey", {
      params: { key_name: name }, query: pick(fields, ["ttlSeconds", "overlapSeconds"]), sdk,
    });
  }

  delete(name, options = {}) {
    const [sdk] = split(options);
    return this._client._send("deleteKey", { params: { key_name: name }, idempotent: true, sdk });
  }
}

/** Principals and their grants in this context (`{path, verbs}` changes, versioned). */
class Principals {
  constructor(client) { this._client = client; }

  list(options = {}) {
    const [sdk] = split(options);
    return this._client._send("listPrincipals", { sdk });
  }

  get(principalId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("getPrincipal", { params: { principal_id: principalId }, sdk });
  }

  grant(principalId, path, verbs, options = {}) {
    const [sdk] = split(options);
    return this._client._send("grantPrincipal", {
      params: { principal_id: principalId }, json: { path, verbs }, idempotent: true, sdk,
    });
  }

  revoke(principalId, path, verbs, options = {}) {
    const [sdk] = split(options);
    return this._client._send("revokePrincipalGrant", {
      params: { principal_id: principalId }, json: { path, verbs }, idempotent: true, sdk,
    });
  }

  /** The verbs the principal holds at `path` (`asOf`: as of a past instant). */
  effective(principalId, path, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("getEffectiveGrants", {
      params: { principal_id: principalId }, query: { path, ...pick(fields, ["asOf"]) }, sdk,
    });
  }
}

/** The scopes registry of this context and partition. */
class Scopes {
  constructor(client) { this._client = client; }

  register(path, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("registerScope", {
      json: { path, ...pick(fields, ["displayName", "description"]) }, idempotent: true, sdk,
    });
  }

  list(options = {}) {
    const [sdk] = split(options);
    return this._client._send("listScopes", { sdk });
  }

  /** Tombstone a registered scope (what was written under it stays). */
  delete(path, options = {}) {
    const [sdk] = split(options);
    return this._client._send("deleteScope", { query: { path }, idempotent: true, sdk });
  }

  /** Remove everything written under the subtree that this key may read and write. When the
   * answer's `complete` is false, call again with its `continuation` to go on. */
  forget(path, options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("forgetScope", {
      json: { path, ...pick(fields, ["continuation"]) }, idempotent: true, sdk,
    });
  }
}

/** Erasure receipts: what a removal took out of each place (ids and hashes only). */
class Receipts {
  constructor(client) { this._client = client; }

  get(receiptId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("getReceipt", { params: { receipt_id: receiptId }, idempotent: true, sdk });
  }

  /** Looks again in every place the receipt names; `remaining` lists what is still there. */
  verify(receiptId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("verifyReceipt", { params: { receipt_id: receiptId }, idempotent: true, sdk });
  }
}

class Traces {
  constructor(client) { this._client = client; }

  get(traceId, options = {}) {
    const [sdk] = split(options);
    return this._client._send("getTrace", { params: { trace_id: traceId }, sdk });
  }

  /** The caller's most recent traces, newest first (every principal's for an admin key). */
  list(options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("listTraces", { query: pick(fields, ["limit"]), sdk });
  }

  /** What the caller's traces of the last `windowHours` (24 by default) say. */
  stats(options = {}) {
    const [sdk, fields] = split(options);
    return this._client._send("getTraceStats", { query: pick(fields, ["windowHours"]), sdk });
  }
}

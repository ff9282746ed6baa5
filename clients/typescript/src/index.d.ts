// The public API of agent-memory. Wire types come from openapi.d.ts, which `npm run
// generate` writes from the repository's openapi.yaml (a test fails when it drifts).

import type { components, operations, paths } from "./openapi.js";

export type { components, operations, paths };

type S = components["schemas"];
/** A component schema of openapi.yaml by name, e.g. `Schema<"ChatResponseJson">`. */
export type Schema<K extends keyof S> = S[K];

// --- options ----------------------------------------------------------------------------

/** Options every method accepts beside its own. */
/** How `exportJob` and `importJob` wait for their job. */
export interface JobWaitOptions {
  /** Between two reads of the job (default 1000). */
  pollIntervalMs?: number;
  /** How long to wait for the job to end (default an hour). */
  waitTimeoutMs?: number;
  /** Sees the job after each read: its state and recordsDone. */
  onProgress?: (job: S["PortabilityJob"]) => void;
}

export interface CallOptions {
  /** `X-Memory-Partition` for this call (overrides the client's). */
  partition?: string;
  /** `X-Spectron-On-Behalf-Of` for this call (overrides the client's). */
  onBehalfOf?: string;
  /** Aborts the call (and its retries). */
  signal?: AbortSignal;
  /** Bounds each HTTP attempt (default: the client's `timeoutMs`). */
  timeoutMs?: number;
  /** Extra request headers. */
  headers?: Record<string, string>;
}

/** Options of writes the service deduplicates by `Idempotency-Key`. */
export interface KeyedCallOptions extends CallOptions {
  /** Reused by every retry of the call; pass your own (persisted with the work) to resume a
   * logical write across processes. Default: a fresh `sdk-<uuid>` per call. */
  idempotencyKey?: string;
}

export interface PageOptions extends CallOptions {
  /** Rows per request (the service's `limit`, 1..500). */
  pageSize?: number;
}

export interface AgentMemoryOptions {
  /** The context every call addresses (`/api/v1/{context}/...`). */
  context: string;
  /** Default: AGENT_MEMORY_URL where there is an environment (Node), else http://127.0.0.1:8080. */
  baseUrl?: string;
  /** Bearer key. Default: AGENT_MEMORY_API_KEY where there is an environment. Keep long-lived
   * keys out of browsers (docs/typescript.md). */
  apiKey?: string;
  partition?: string;
  onBehalfOf?: string;
  /** Where `chat(..., { stream: true })` goes: a deployed stack's `ChatStreamUrl` (the chat
   * function's URL, which streams). Default: AGENT_MEMORY_STREAM_URL where there is an
   * environment; without one a streamed chat goes to `baseUrl`. */
  streamUrl?: string;
  /** Per-attempt timeout (default 60 000 ms); a stream's body is not bounded by it. */
  timeoutMs?: number;
  /** Retries after the first attempt (default 3). */
  maxRetries?: number;
  /** A call's retries end this long after its first attempt (default 30 000 ms). */
  retryBudgetMs?: number;
  /** The thread context helper's byte budget (default 16 MiB). */
  contextByteBudget?: number;
  /** The thread context helper's concurrent turn downloads (default 8). */
  downloadConcurrency?: number;
  /** A `fetch` to use instead of the global one. */
  fetch?: typeof globalThis.fetch;
  /** How retries wait (tests pass a recording one). */
  sleep?: (ms: number, signal?: AbortSignal) => Promise<void>;
  /** Headers sent on every call. */
  headers?: Record<string, string>;
}

// --- results ----------------------------------------------------------------------------

export interface CorrectionValue { readonly value: string }
type WireCorrection = S["ExtractionResultJson"]["corrections"][number];
/** A correction, with `previous.value` / `current.value` beside `oldValue` / `newValue`. */
export type Correction = WireCorrection & { readonly previous: CorrectionValue; readonly current: CorrectionValue };
export type Extraction = Omit<S["ExtractionResultJson"], "corrections"> & { corrections: Correction[] };
export type WriteFactsResponse = Omit<S["WriteFactsResponse"], "extraction"> & { extraction: Extraction | null };
export type WriteFactsBatchResponse = Omit<S["WriteFactsBatchResponse"], "extractions"> & {
  extractions: (Extraction | null)[];
};
export type ChatResponse = Omit<S["ChatResponseJson"], "memoryUpdates"> & { memoryUpdates: Extraction };

export type ChatEvent =
  | { type: "delta"; delta: string }
  | { type: "done"; response: ChatResponse };

/** Where an append landed; `replayed` when a retry or a repeated key got the first reply. */
export type ThreadTurnRef = S["AppendThreadTurnResponse"] & { replayed: boolean };

/** One thread context item, its text inline or downloaded. */
export interface MemoryItem {
  text: string;
  turnId: string;
  turnIndex: number;
  origin: "recent" | "semantic";
  metadata: S["ThreadMetadata"];
  entityId: string | null;
  score: number | null;
  createdAt: string | null;
}

/** A collection, following cursors lazily. */
export declare class Paginator<T> implements AsyncIterable<T> {
  [Symbol.asyncIterator](): AsyncIterator<T>;
  /** The raw pages (items with their `page` info). */
  pages(): AsyncIterableIterator<Record<string, unknown>>;
  toArray(options?: { max?: number }): Promise<T[]>;
}

export declare function nextCursor(page: unknown): string | null;
export declare function newIdempotencyKey(): string;

/** A streamed chat turn: `delta` events, then one `done` event with the whole response. */
export declare class ChatStream implements AsyncIterable<ChatEvent> {
  /** The final response, once the `done` event has arrived. */
  response: ChatResponse | null;
  readonly headers: Headers | null;
  [Symbol.asyncIterator](): AsyncIterator<ChatEvent>;
  /** Consumes the rest of the stream; the final response. */
  final(): Promise<ChatResponse>;
  /** The reply text, concatenated from the deltas (consumes the stream). */
  text(): Promise<string>;
  /** Stops reading and releases the connection. */
  close(): void;
}

// --- request options, from the wire's request bodies ------------------------------------------

// Partial: openapi-typescript makes fields with a default required; a caller may leave them out.
type Body<K extends keyof S, Drop extends string> = Partial<Omit<S[K], Drop>>;
export type RememberOptions = Body<"WriteFactsRequest", "text"> & KeyedCallOptions;
export type RememberManyOptions = Body<"WriteFactsBatchRequest", "messages"> & KeyedCallOptions;
export type BatchMessage = S["WriteFactsBatchRequest"]["messages"][number] | string | [role: string, content: string];
export type RecallOptions = Body<"QueryRequest", "query"> & CallOptions;
export type ContextOptions = Body<"ContextRequest", "query"> & CallOptions;
export type ChatOptions = Body<"ChatRequestJson", "message" | "stream"> & CallOptions;
export type ForgetOptions = Body<"ForgetRequest", "query"> & CallOptions;
export type CreateSessionOptions = Partial<S["CreateSessionRequest"]> & CallOptions;
export type UploadDocumentOptions = Body<"UploadDocumentRequest", "text"> & CallOptions;
export type CreateUploadOptions = Body<"CreateDocumentUploadRequest", "size"> & CallOptions;

export interface ThreadAppendOptions extends KeyedCallOptions {
  entityId?: string;
  metadata?: S["ThreadMetadata"];
  /** Left out: the thread's default readers; `[]`: admin-only quarantine. */
  aclReaders?: S["ReaderList"];
}

export interface ThreadContextOptions extends CallOptions {
  /** The ordered window (1..1000, default 10). */
  lastNTurns?: number;
  recentFirst?: boolean;
  entityId?: string;
}

// --- the client -------------------------------------------------------------------------

export declare class AgentMemory {
  constructor(options: AgentMemoryOptions);
  readonly contextId: string;
  readonly baseUrl: string;
  /** Where a streamed chat goes (`streamUrl`), or `null`: to `baseUrl`. */
  readonly streamUrl: string | null;
  readonly partition: string | null;
  contextByteBudget: number;
  downloadConcurrency: number;

  readonly sessions: Sessions;
  readonly threads: Threads;
  readonly entities: Entities;
  readonly attributes: CorrectableFacts<S["MemoryAttribute"], { entity?: string; key?: string }>;
  readonly relations: CorrectableFacts<S["MemoryRelation"], { src?: string; dst?: string; label?: string }>;
  readonly actions: FactsById<S["MemoryAction"], { actor?: string; verb?: string; since?: string; until?: string }>;
  readonly instructions: FactsById<S["MemoryInstruction"], {}>;
  readonly uncertainty: UncertaintyApi;
  readonly documents: Documents;
  readonly traces: Traces;
  readonly receipts: Receipts;
  readonly keys: Keys;
  readonly principals: Principals;
  readonly scopes: Scopes;

  /** The URL an MCP host registers for this context (streamable HTTP, with this key). */
  mcpUrl(): string;
  /** The service's OpenAPI document (GET /api/v1/openapi.json). */
  openapi(options?: CallOptions): Promise<Record<string, unknown>>;
  health(options?: CallOptions): Promise<S["Health"]>;
  contexts(options?: PageOptions): Paginator<S["ContextInfo"]>;

  /** Stores one turn; `result.extraction` is what it extracted. */
  remember(text: string, options?: RememberOptions): Promise<WriteFactsResponse>;
  rememberMany(messages: Iterable<BatchMessage>, options?: RememberManyOptions): Promise<WriteFactsBatchResponse>;
  forget(query: string, options?: ForgetOptions): Promise<S["ForgetResponse"]>;

  consolidate(options?: Partial<S["ConsolidateRequest"]> & KeyedCallOptions): Promise<S["ConsolidateResponse"]>;
  reflect(query: string, options?: Body<"ReflectRequest", "query"> & KeyedCallOptions): Promise<S["ReflectResponse"]>;
  elaborate(options?: Partial<S["ElaborateRequest"]> & KeyedCallOptions): Promise<S["ElaborateResponse"]>;
  decay(options?: CallOptions): Promise<S["LifecycleResponse"]>;
  expire(options?: Partial<S["ExpireRequest"]> & CallOptions): Promise<S["LifecycleResponse"]>;
  fsck(options?: Partial<S["FsckRequest"]> & CallOptions): Promise<S["FsckReport"]>;

  /** Ranked memory for `query` (`result.hits`, best first). */
  recall(query: string, options?: RecallOptions): Promise<S["QueryResponse"]>;
  query(query: string, options?: RecallOptions): Promise<S["QueryResponse"]>;
  /** Retrieved memory formatted for a prompt (`result.context`, `result.sources`). */
  context(query: string, options?: ContextOptions): Promise<S["ContextResponse"]>;
  state(options?: { limit?: number } & CallOptions): Promise<S["State"]>;
  profile(options?: { limit?: number } & CallOptions): Promise<S["Profile"]>;
  inspect(ref: string, options?: {
    asOf?: string; atInstant?: string; validFrom?: string; validUntil?: string;
  } & CallOptions): Promise<S["Inspection"]>;
  audit(options?: {
    limit?: number; cursor?: string; principal?: string; kind?: string; since?: string; until?: string;
  } & CallOptions): Promise<S["AuditPage"]>;
  /** Who this key is here: principal, kind, grants, and what a request may do. */
  whoami(options?: CallOptions): Promise<S["Whoami"]>;
  /** The context as versioned NDJSON lines (docs/export.md), streamed; needs admin. */
  exportContext(options?: {
    partition?: string; includePrincipals?: boolean; originals?: boolean;
  } & CallOptions): AsyncIterable<string> & { toArray(): Promise<string[]> };
  /** Write an export into this context (ids kept; idempotent); needs admin. */
  importContext(body: string | Uint8Array | string[], options?: CallOptions): Promise<S["ImportResponse"]>;
  /** Export and import as jobs (docs/export.md "The job form"); needs admin. */
  startExportJob(options?: { partition?: string; includePrincipals?: boolean; originals?: boolean } & CallOptions):
    Promise<S["PortabilityJob"]>;
  getExportJob(jobId: string, options?: CallOptions): Promise<S["PortabilityJob"]>;
  createImportJob(size: number, options?: CallOptions): Promise<S["PortabilityJob"]>;
  startImportJob(jobId: string, options?: CallOptions): Promise<S["PortabilityJob"]>;
  getImportJob(jobId: string, options?: CallOptions): Promise<S["PortabilityJob"]>;
  /** The export stream through the job form (start, wait, presigned download). */
  exportJob(options?: { partition?: string; includePrincipals?: boolean; originals?: boolean } & JobWaitOptions &
    CallOptions): Promise<string>;
  /** An import through the job form (presigned PUT, start, wait); a failed job throws its problem. */
  importJob(body: string | Uint8Array | string[], options?: JobWaitOptions & CallOptions): Promise<S["ImportResponse"]>;

  chat(message: string, options?: ChatOptions & { stream?: false }): Promise<ChatResponse>;
  chat(message: string, options: ChatOptions & { stream: true }): Promise<ChatStream>;
  chat(message: string, options?: ChatOptions & { stream?: boolean }): Promise<ChatResponse | ChatStream>;

  appendThread(threadId: string, text: string, options?: ThreadAppendOptions): Promise<ThreadTurnRef>;
  listThreadTurns(threadId: string, options?: ThreadTurnsOptions): Paginator<S["ThreadTurn"]>;
  getThreadTurn(threadId: string, turnIndex: number, options?: CallOptions): Promise<S["ThreadTurn"]>;
  getThread(threadId: string, options?: CallOptions): Promise<S["Thread"]>;
  setThreadAcl(threadId: string, aclReaders: S["ReaderList"], options?: CallOptions): Promise<S["Thread"]>;
  threadContext(threadId: string, query: string, options?: ThreadContextOptions): Promise<MemoryItem[]>;
}

/** The spec's name for the client: `new Spectron({ context, apiKey })`. */
export declare class Spectron extends AgentMemory {}

export interface Session extends Schema<"Session"> {
  close(options?: CallOptions): Promise<Session>;
  delete(options?: CallOptions): Promise<string | null>;
  context(query: string, options?: { k?: number } & CallOptions): Promise<S["ContextResponse"]>;
  turns(options?: PageOptions): Paginator<S["Turn"]>;
  chat(message: string, options?: ChatOptions & { stream?: false }): Promise<ChatResponse>;
  chat(message: string, options: ChatOptions & { stream: true }): Promise<ChatStream>;
  remember(text: string, options?: RememberOptions): Promise<WriteFactsResponse>;
}
export declare const Session: { prototype: Session };

export interface Sessions {
  create(options?: CreateSessionOptions): Promise<Session>;
  /** A handle on an existing session (no request is made). */
  handle(sessionId: string): Session;
  list(options?: PageOptions): Paginator<S["Session"]>;
  close(sessionId: string, options?: CallOptions): Promise<Session>;
  /** Resolves to the removal's erasure receipt id (X-Erasure-Receipt). */
  delete(sessionId: string, options?: CallOptions): Promise<string | null>;
  context(sessionId: string, query: string, options?: { k?: number } & CallOptions): Promise<S["ContextResponse"]>;
  turns(sessionId: string, options?: PageOptions): Paginator<S["Turn"]>;
}

export interface ThreadTurnsOptions extends CallOptions {
  afterIndex?: number;
  entityId?: string;
  pageSize?: number;
}

export interface Threads {
  list(options?: PageOptions): Paginator<S["Thread"]>;
  get(threadId: string, options?: CallOptions): Promise<S["Thread"]>;
  append(threadId: string, text: string, options?: ThreadAppendOptions): Promise<ThreadTurnRef>;
  turns(threadId: string, options?: ThreadTurnsOptions): Paginator<S["ThreadTurn"]>;
  turn(threadId: string, turnIndex: number, options?: CallOptions): Promise<S["ThreadTurn"]>;
  setAcl(threadId: string, aclReaders: S["ReaderList"], options?: CallOptions): Promise<S["Thread"]>;
  /** Recent turns then semantic matches; at most 8 downloads at once, one 16 MiB byte budget. */
  context(threadId: string, query: string, options?: ThreadContextOptions): Promise<MemoryItem[]>;
}

export interface Entities {
  list(options?: { type?: S["EntityType"] } & PageOptions): Paginator<S["MemoryEntity"]>;
  /** Current attributes and relations, or those valid at `asOf`. */
  get(type: S["EntityType"], name: string, options?: { asOf?: string; limit?: number } & CallOptions): Promise<S["EntityDetail"]>;
  /** One attribute's supersession chain, oldest to newest. */
  history(type: S["EntityType"], name: string, key: string, options?: CallOptions): Promise<S["MemoryAttribute"][]>;
  allHistory(type: S["EntityType"], name: string, options?: PageOptions): Paginator<S["MemoryAttribute"]>;
  /** Resolves to the removal's erasure receipt id (X-Erasure-Receipt). */
  delete(type: S["EntityType"], name: string, options?: CallOptions): Promise<string | null>;
}

export interface Lister<T, F> extends AsyncIterable<T> {
  list(options?: F & PageOptions): Paginator<T>;
}

/** A collection whose facts are read and forgotten one by one by id. */
export interface FactsById<T, F> extends Lister<T, F> {
  get(factId: string, options?: CallOptions): Promise<T>;
  delete(factId: string, options?: { purge?: boolean } & CallOptions): Promise<S["ForgetResponse"]>;
}

/** ... and corrected: the new value supersedes the fact, its history kept. */
export interface CorrectableFacts<T, F> extends FactsById<T, F> {
  update(factId: string, value: string, options?: { note?: string; observedAt?: string } & CallOptions
  ): Promise<S["CorrectFactResponse"] & { corrections: Correction[] }>;
}

export interface UncertaintyApi extends Lister<S["MemoryUncertainty"], { entity?: string; resolved?: boolean }> {
  resolve(uncertaintyId: string, acceptedValue: string, options?: { note?: string } & CallOptions): Promise<S["ResolveUncertaintyResponse"]>;
}

export type DocumentSource = string | Blob | ArrayBuffer | ArrayBufferView;

export interface Documents {
  /** A string is the document's text; a Blob/File/bytes goes as a multipart file. */
  upload(source: DocumentSource, options?: UploadDocumentOptions): Promise<S["UploadDocumentResponse"]>;
  createUpload(size: number, options?: CreateUploadOptions): Promise<S["DocumentUploadTicket"]>;
  completeUpload(documentId: string, options?: CallOptions): Promise<S["Document"]>;
  uploadLarge(source: DocumentSource, options?: CreateUploadOptions): Promise<S["Document"]>;
  list(options?: { status?: string; mimeType?: string } & PageOptions): Paginator<S["Document"]>;
  get(documentId: string, options?: CallOptions): Promise<S["Document"]>;
  chunks(documentId: string, options?: PageOptions): Paginator<S["DocumentChunk"]>;
  /** The original bytes as uploaded. */
  fetchRaw(documentId: string, options?: CallOptions): Promise<Uint8Array>;
  /** Re-ingests the document from its stored original (202; `queued` false: one already runs). */
  reprocess(documentId: string, options?: CallOptions): Promise<S["ReprocessDocumentResponse"]>;
  /** Rebuilds the chunk-entity links of the context's documents. */
  recomputeLinks(options?: CallOptions): Promise<S["RecomputeLinksResponse"]>;
  /** Corpus search over the documents' chunks. */
  query(query: string, options?: {
    k?: number; mode?: "hybrid" | "vector" | "bm25" | "graph"; threshold?: number; expandGraph?: boolean;
    filter?: Record<string, string | string[]>;
  } & CallOptions): Promise<S["DocumentQueryResponse"]>;
  keywords(options?: { q?: string; minDocumentCount?: number; sort?: "documentCount" | "normalised" } & PageOptions
  ): Paginator<S["Keyword"]>;
  keyword(normalised: string, options?: CallOptions): Promise<S["KeywordDetail"]>;
  searchKeywords(query: string, options?: { k?: number; threshold?: number } & CallOptions
  ): Promise<S["KeywordSearchResponse"]>;
  documentKeywords(documentId: string, options?: CallOptions): Promise<S["DocumentKeywords"]>;
  /** Resolves to the removal's erasure receipt id (X-Erasure-Receipt). */
  delete(documentId: string, options?: CallOptions): Promise<string | null>;
  waitReady(documentId: string, options?: {
    timeoutMs?: number; pollIntervalMs?: number; onProgress?: (document: S["Document"]) => void;
  } & CallOptions): Promise<S["Document"]>;
}

export interface Keys {
  create(options?: { name?: string; grants?: S["Grants"]; contexts?: string[]; ttlSeconds?: number } & CallOptions):
    Promise<S["MintedKey"]>;
  list(options?: CallOptions): Promise<S["KeyDetail"][]>;
  rotate(name: string, options?: { ttlSeconds?: number; overlapSeconds?: number } & CallOptions): Promise<S["MintedKey"]>;
  delete(name: string, options?: CallOptions): Promise<void>;
}

export interface Principals {
  list(options?: CallOptions): Promise<S["Principal"][]>;
  get(principalId: string, options?: CallOptions): Promise<S["Principal"]>;
  grant(principalId: string, path: string, verbs: string[], options?: CallOptions): Promise<S["Principal"]>;
  revoke(principalId: string, path: string, verbs: string[], options?: CallOptions): Promise<S["Principal"]>;
  effective(principalId: string, path: string, options?: { asOf?: string } & CallOptions):
    Promise<S["EffectiveGrants"]>;
}

export interface Scopes {
  register(path: string, options?: { displayName?: string; description?: string } & CallOptions):
    Promise<S["ScopeNode"]>;
  list(options?: CallOptions): Promise<S["ScopeNode"][]>;
  delete(path: string, options?: CallOptions): Promise<void>;
  forget(path: string, options?: { continuation?: string } & CallOptions): Promise<S["ForgetScopeResponse"]>;
}

export interface Receipts {
  get(receiptId: string, options?: CallOptions): Promise<S["ErasureReceipt"]>;
  verify(receiptId: string, options?: CallOptions): Promise<S["ReceiptVerification"]>;
}

export interface Traces {
  get(traceId: string, options?: CallOptions): Promise<S["Trace"]>;
  list(options?: { limit?: number } & CallOptions): Promise<S["TraceList"]>;
  stats(options?: { windowHours?: number } & CallOptions): Promise<S["TraceStats"]>;
}

/** One entity's memory; `thread(id)` is an ordered conversation of that entity. */
export declare class Memory {
  constructor(entityId: string | null, options: { client: AgentMemory });
  readonly entityId: string | null;
  readonly client: AgentMemory;
  thread(threadId: string): Thread;
  /** Retrieved memory about this entity (`context`, `sources`). */
  recall(query: string, options?: { k?: number } & CallOptions): Promise<S["ContextResponse"]>;
}

export declare class Thread {
  readonly memory: Memory;
  readonly threadId: string;
  append(text: string, metadata?: S["ThreadMetadata"], options?: KeyedCallOptions): Promise<ThreadTurnRef>;
  context(query: string, options?: Omit<ThreadContextOptions, "entityId">): Promise<MemoryItem[]>;
  turns(options?: Omit<ThreadTurnsOptions, "entityId">): Paginator<S["ThreadTurn"]>;
}

// --- errors -----------------------------------------------------------------------------

/** Every error the SDK throws. */
export declare class AgentMemoryError extends Error {}
/** A per-attempt timeout that outlived the retries. */
export declare class RequestTimeoutError extends AgentMemoryError {}

/** An error response; `problem` is its problem document. */
export declare class ApiError extends AgentMemoryError {
  constructor(status: number, problem: Partial<S["Problem"]> & Record<string, unknown>,
    options?: { retryAfter?: number | null; traceId?: string | null });
  readonly status: number;
  readonly problem: Partial<S["Problem"]> & Record<string, unknown>;
  readonly code: string | null;
  readonly title: string;
  readonly detail: string;
  readonly field: string | null;
  /** Seconds, from Retry-After. */
  readonly retryAfter: number | null;
  readonly traceId: string | null;
}
/** 400 or 422; `field` names the culprit. */
export declare class ValidationError extends ApiError {}
/** 401. */
export declare class AuthError extends ApiError {}
/** 403. */
export declare class ScopeError extends ApiError {}
/** 404. */
export declare class NotFoundError extends ApiError {}
/** 409. */
export declare class ConflictError extends ApiError {}
/** 413. */
export declare class PayloadTooLargeError extends ApiError {}
/** 429 or 503. */
export declare class RateLimitError extends ApiError {}
/** 502 or 504. */
export declare class ModelError extends ApiError {}
/** Any other 5xx. */
export declare class ServerError extends ApiError {}
export { AuthError as AuthenticationError, ScopeError as PermissionDeniedError, RateLimitError as RateLimitedError };
export declare function errorFor(status: number, problem: Record<string, unknown>,
  options?: { retryAfter?: number | null; traceId?: string | null }): ApiError;

// --- lower level --------------------------------------------------------------------------

export declare const CONTEXT_BYTE_BUDGET: number;
export declare const DOWNLOAD_CONCURRENCY: number;
export declare const DEFAULT_URL: string;
export declare const BACKOFF_MS: readonly number[];
export declare function parseRetryAfter(value: string | null | undefined, now?: number): number | null;
export declare class LineSplitter { push(text: string): string[]; end(): string[] }
export declare class FrameAssembler { feed(line: string): { event: string; data: string } | null }
export declare function frames(body: ReadableStream<Uint8Array> | AsyncIterable<Uint8Array>):
  AsyncIterableIterator<{ event: string; data: string }>;
export declare function chatEvent(frame: { event: string; data: string }): ChatEvent | null;
export declare class RetryPolicy {
  constructor(options?: { maxRetries?: number; retryBudgetMs?: number; random?: () => number });
  backoff(attempt: number): number;
}
export declare class Transport {
  constructor(options: Record<string, unknown>);
}
export declare const OPERATIONS: Readonly<Record<keyof operations, readonly [method: string, path: string, sdkMethod: string]>>;
export declare const OMITTED: Readonly<Record<string, string>>;

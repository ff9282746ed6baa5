// agent-memory: the JavaScript client of the agent-memory service (Node ^20.19 or 22.12+, browsers).
export {
  AgentMemory, Spectron, Session, Memory, Thread, Paginator, nextCursor, newIdempotencyKey,
  CONTEXT_BYTE_BUDGET, DOWNLOAD_CONCURRENCY, DEFAULT_URL,
} from "./client.js";
export {
  AgentMemoryError, ApiError, RequestTimeoutError, ValidationError, AuthError, ScopeError, NotFoundError,
  ConflictError, PayloadTooLargeError, RateLimitError, ModelError, ServerError, AuthenticationError,
  PermissionDeniedError, RateLimitedError, errorFor,
} from "./errors.js";
export { ChatStream, LineSplitter, FrameAssembler, frames, chatEvent } from "./sse.js";
export { Transport, RetryPolicy, parseRetryAfter, BACKOFF_MS } from "./transport.js";
export { OPERATIONS, OMITTED } from "./operations.js";

// The SDK's errors: one base class, and one class per kind of error response.
//
// `AgentMemoryError` is every error the SDK throws: transport failures, timeouts, exhausted
// retries, local limits (the thread context byte budget) and, as `ApiError` subclasses, the
// service's problem documents. An `ApiError` keeps `status`, `code`, `title`, `detail`,
// `field`, `retryAfter` (seconds), `traceId` and the whole `problem` document.

export class AgentMemoryError extends Error {
  constructor(message, options) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A per-attempt timeout that outlived the retries. */
export class RequestTimeoutError extends AgentMemoryError {}

export class ApiError extends AgentMemoryError {
  constructor(status, problem, { retryAfter = null, traceId = null } = {}) {
    const doc = problem && typeof problem === "object" ? problem : {};
    const title = typeof doc.title === "string" ? doc.title : "";
    // `Message`: what AWS itself answers with (Lambda's 429 on a function URL)
    const detail = doc.detail || doc.title || doc.Message || `HTTP ${status}`;
    const code = typeof doc.code === "string" ? doc.code : null;
    super(`${status} ${title}: ${detail}${code ? ` (code ${code})` : ""}`);
    this.status = status;
    this.problem = doc;
    this.code = code;
    this.title = title;
    this.detail = String(detail);
    this.field = typeof doc.field === "string" ? doc.field : null;
    this.retryAfter = retryAfter;
    this.traceId = doc.traceId || traceId || null;
  }
}

/** 400 or 422: the request was refused as invalid; `field` names the culprit. */
export class ValidationError extends ApiError {}
/** 401: no valid API key. */
export class AuthError extends ApiError {}
/** 403: the key may not do this (verb, context, partition or write region). */
export class ScopeError extends ApiError {}
/** 404: no such record, or one the caller may not see. */
export class NotFoundError extends ApiError {}
/** 409: a closed session, an idempotency key reused with another body, a busy document. */
export class ConflictError extends ApiError {}
/** 413: a body over its cap. */
export class PayloadTooLargeError extends ApiError {}
/** 429 or 503: shed or deferred before any work; `retryAfter` says when to come back. */
export class RateLimitError extends ApiError {}
/** 502 or 504: the language model failed or timed out; nothing was written. */
export class ModelError extends ApiError {}
/** Any other 5xx. */
export class ServerError extends ApiError {}

// The Python SDK's names for the same classes.
export {
  AuthError as AuthenticationError,
  ScopeError as PermissionDeniedError,
  RateLimitError as RateLimitedError,
};

const BY_STATUS = new Map([
  [400, ValidationError], [422, ValidationError], [401, AuthError], [403, ScopeError],
  [404, NotFoundError], [409, ConflictError], [413, PayloadTooLargeError], [429, RateLimitError],
  [503, RateLimitError], [502, ModelError], [504, ModelError],
]);

/** The typed error of a status and its problem document. */
export function errorFor(status, problem, options) {
  const Cls = BY_STATUS.get(status) || (status >= 500 ? ServerError : ApiError);
  return new Cls(status, problem, options);
}

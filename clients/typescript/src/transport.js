// HTTP transport: the platform's `fetch`, bounded retries, typed errors.
//
// What is retried, and why it is safe (the same policy as the Python SDK):
// - 429 and 503 always: the service sheds or defers the request before doing anything
//   (`thread_projection_pending`, load shedding, the chat in-flight cap).
// - network errors, timeouts, 502 and 504 only for calls marked `idempotent`: reads,
//   read-only POSTs (/query, /context, thread context) and writes that carry an
//   Idempotency-Key the service deduplicates on. The key is made once per logical call and
//   reused by every retry, so a retry after a lost reply replays the first reply.
// - a DELETE whose retry finds the record gone (404) succeeded on an earlier attempt.
// - 409 `idempotency_in_progress` only for keyed writes.
// Waits are 250 ms, 500 ms, 1 s (each +-20% jitter), or the server's Retry-After. Every call
// is bounded by `maxRetries` retries and `retryBudgetMs` from its first attempt; a wait that
// would end past that budget throws the last error at once.

import { AgentMemoryError, ApiError, RequestTimeoutError, errorFor } from "./errors.js";

export const BACKOFF_MS = [250, 500, 1000];
export const DEFAULT_TIMEOUT_MS = 60_000;
export const DEFAULT_RETRY_BUDGET_MS = 30_000;
export const DEFAULT_MAX_RETRIES = 3;
export const PARTITION_HEADER = "x-memory-partition";
export const ON_BEHALF_OF_HEADER = "x-spectron-on-behalf-of";
const TRACE_HEADERS = ["x-trace-id", "x-amzn-trace-id", "apigw-requestid", "x-request-id"];
const RETRY_ALWAYS = new Set([429, 503]);
const RETRY_IF_IDEMPOTENT = new Set([502, 504]);

/** Seconds from a Retry-After header (delta-seconds or an HTTP date), or null. */
export function parseRetryAfter(value, now = Date.now()) {
  if (value === null || value === undefined || value === "") return null;
  const trimmed = String(value).trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Math.max(0, Number(trimmed));
  const when = Date.parse(trimmed);
  if (Number.isNaN(when)) return null;
  return Math.max(0, (when - now) / 1000);
}

/** The typed error of an error response. */
export async function apiError(response) {
  let text = "";
  try {
    text = await response.text();
  } catch { /* body lost: the status still says enough */ }
  let body = null;
  try {
    body = JSON.parse(text);
  } catch { /* not JSON */ }
  if (!body || typeof body !== "object" || Array.isArray(body)) {
    body = { title: response.statusText || "", status: response.status, detail: text.slice(0, 500) };
  }
  const traceId = TRACE_HEADERS.map((h) => response.headers.get(h)).find(Boolean) || null;
  return errorFor(response.status, body, {
    retryAfter: parseRetryAfter(response.headers.get("retry-after")), traceId,
  });
}

function queryString(query) {
  const params = new URLSearchParams();
  for (const [key, value] of Object.entries(query || {})) {
    if (value === undefined || value === null) continue;
    if (Array.isArray(value)) value.forEach((v) => params.append(key, String(v)));
    else params.append(key, typeof value === "boolean" ? (value ? "true" : "false") : String(value));
  }
  const qs = params.toString();
  return qs ? `?${qs}` : "";
}

const defaultSleep = (ms, signal) => new Promise((resolve, reject) => {
  if (signal?.aborted) return reject(signal.reason);
  const timer = setTimeout(() => {
    signal?.removeEventListener("abort", onAbort);
    resolve();
  }, ms);
  const onAbort = () => {
    clearTimeout(timer);
    reject(signal.reason);
  };
  signal?.addEventListener("abort", onAbort, { once: true });
});

export class RetryPolicy {
  constructor({ maxRetries = DEFAULT_MAX_RETRIES, retryBudgetMs = DEFAULT_RETRY_BUDGET_MS, random = Math.random } = {}) {
    this.maxRetries = maxRetries;
    this.retryBudgetMs = retryBudgetMs;
    this.random = random;
  }

  backoff(attempt) {
    const nominal = BACKOFF_MS[Math.min(attempt, BACKOFF_MS.length - 1)];
    return nominal * (0.8 + 0.4 * this.random());
  }

  retryable(call, error) {
    if (error instanceof ApiError) {
      if (RETRY_ALWAYS.has(error.status)) return true;
      if (RETRY_IF_IDEMPOTENT.has(error.status)) return Boolean(call.idempotent);
      return error.status === 409 && Boolean(call.keyedWrite) && error.code === "idempotency_in_progress";
    }
    return Boolean(call.idempotent); // network failure or timeout
  }

  /** Milliseconds to wait before retrying `call` after `failure`, or null to give up. */
  delay(call, failure, attempt, deadline, now) {
    if (!this.retryable(call, failure)) return null;
    const wait = failure instanceof ApiError && failure.retryAfter !== null
      ? failure.retryAfter * 1000 : this.backoff(attempt);
    if (attempt >= this.maxRetries || now + wait > deadline) return null;
    return wait;
  }
}

/**
 * One logical call: `{method, path, query, json, form, raw, contentType, headers, idempotent, keyedWrite,
 * signal, timeoutMs}`, and `baseUrl` when it goes elsewhere than the transport's (a streamed chat).
 */
export class Transport {
  constructor({ baseUrl, headers = {}, timeoutMs = DEFAULT_TIMEOUT_MS, maxRetries, retryBudgetMs,
    fetch: fetchImpl, sleep = defaultSleep, random, now = () => Date.now() } = {}) {
    this.baseUrl = String(baseUrl).replace(/\/+$/, "");
    this.headers = headers;
    this.timeoutMs = timeoutMs;
    this.policy = new RetryPolicy({ maxRetries, retryBudgetMs, random });
    this.fetch = fetchImpl || ((...args) => globalThis.fetch(...args));
    this.sleep = sleep;
    this.now = now;
  }

  url(call) {
    return `${call.baseUrl ?? this.baseUrl}${call.path}${queryString(call.query)}`;
  }

  init(call) {
    const headers = { ...this.headers };
    for (const [k, v] of Object.entries(call.headers || {})) {
      if (v !== undefined && v !== null) headers[k.toLowerCase()] = String(v);
    }
    let body;
    if (call.form !== undefined) {
      body = call.form; // FormData: fetch sets the multipart boundary
    } else if (call.json !== undefined) {
      body = JSON.stringify(call.json);
      headers["content-type"] = "application/json";
    } else if (call.raw !== undefined) {
      body = call.raw; // a string or bytes sent as they are (an NDJSON import)
      headers["content-type"] = call.contentType || "application/octet-stream";
    }
    return { method: call.method, headers, body };
  }

  /** The first successful `Response`; with `stream` its body is left unread and the
   * returned `controller` aborts it. */
  async response(call, { stream = false } = {}) {
    const deadline = this.now() + this.policy.retryBudgetMs;
    for (let attempt = 0; ; attempt++) {
      let failure;
      const controller = new AbortController();
      const onCallerAbort = () => controller.abort(call.signal.reason);
      if (call.signal?.aborted) throw call.signal.reason;
      call.signal?.addEventListener("abort", onCallerAbort, { once: true });
      const timeoutMs = call.timeoutMs ?? this.timeoutMs;
      let timedOut = false;
      const timer = timeoutMs > 0 ? setTimeout(() => {
        timedOut = true;
        controller.abort();
      }, timeoutMs) : null;
      const release = () => {
        if (timer) clearTimeout(timer);
        call.signal?.removeEventListener("abort", onCallerAbort);
      };
      try {
        const response = await this.fetch(this.url(call), { ...this.init(call), signal: controller.signal });
        if (response.status < 400 || (call.method === "DELETE" && response.status === 404 && attempt > 0)) {
          if (stream) {
            if (timer) clearTimeout(timer); // a stream may run past the per-attempt timeout
            return { response, controller, release };
          }
          try {
            const text = response.status === 204 ? "" : await response.text();
            return { response, text };
          } finally {
            release();
          }
        }
        failure = await apiError(response);
        release();
      } catch (err) {
        release();
        if (call.signal?.aborted && !timedOut) throw call.signal.reason ?? err;
        if (timedOut) {
          failure = new RequestTimeoutError(`${call.method} ${call.path} timed out after ${timeoutMs} ms`, { cause: err });
        } else if (err instanceof AgentMemoryError) {
          throw err;
        } else {
          failure = new AgentMemoryError(`${call.method} ${call.path} failed: ${err?.message ?? err}`, { cause: err });
        }
      }
      const wait = this.policy.delay(call, failure, attempt, deadline, this.now());
      if (wait === null) {
        // A 429 or 503 retried until the retries or budget ran out says so: on a streaming URL a
        // 429 is Lambda's own once its reserved concurrency is in use (docs/deploying.md).
        if (failure instanceof ApiError && RETRY_ALWAYS.has(failure.status) && attempt > 0) {
          failure.message = `${failure.message} (gave up after ${attempt + 1} attempts)`;
        }
        throw failure;
      }
      await this.sleep(wait, call.signal);
    }
  }

  /** The call's JSON reply (`null` for an empty one) and its status. */
  async send(call) {
    const { response, text } = await this.response(call);
    let data = null;
    if (text) {
      try {
        data = JSON.parse(text);
      } catch (cause) {
        throw new AgentMemoryError(`${call.method} ${call.path} answered ${response.status} with a body that is not JSON`, { cause });
      }
    }
    return { status: response.status, headers: response.headers, data };
  }
}

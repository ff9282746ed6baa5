// The transport against a local stub: retries and their waits, Retry-After, idempotency keys
// reused across retries, typed errors carrying the problem document, timeouts and aborts.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import {
  AgentMemory, AgentMemoryError, ApiError, AuthError, ConflictError, ModelError, NotFoundError,
  RateLimitError, RequestTimeoutError, ScopeError, ServerError, ValidationError, parseRetryAfter,
} from "agent-memory";
import { problem, recordingSleep, startStub } from "../support/stub.js";

let stub;
let script = [];
before(async () => {
  stub = await startStub((req) => {
    const next = script.shift();
    return typeof next === "function" ? next(req) : next;
  });
});
after(() => stub.close());

function client(options = {}) {
  const sleep = recordingSleep();
  const memory = new AgentMemory({ context: "acme", baseUrl: stub.url, sleep, apiKey: "k-test", ...options });
  return { memory, sleep };
}

function reset(...answers) {
  script = answers;
  stub.requests.length = 0;
}

const ok = (body = {}) => ({ status: 200, body });
const fail = (status, extra = {}, headers = {}) => ({ status, body: problem(status, `Failure ${status}`, extra), headers });
const STATE = { identity: {}, knowledge: {}, context: {}, instructions: [], unknowns: [], truncated: {} };

test("a GET is retried on 503 at 250/500/1000 ms (with jitter) and then gives up with the last error", async () => {
  reset(fail(503), fail(503), fail(503), fail(503, { code: "overloaded" }));
  const { memory, sleep } = client();
  await assert.rejects(memory.state(), (err) => err instanceof RateLimitError && err.code === "overloaded");
  assert.equal(stub.requests.length, 4);
  assert.equal(sleep.waits.length, 3);
  [250, 500, 1000].forEach((nominal, i) => {
    assert.ok(sleep.waits[i] >= nominal * 0.8 && sleep.waits[i] <= nominal * 1.2, `wait ${i}: ${sleep.waits[i]}`);
  });
});

test("Retry-After (seconds or an HTTP date) replaces the backoff; 503 thread_projection_pending is retried", async () => {
  reset(fail(503, { code: "thread_projection_pending" }, { "retry-after": "2" }), ok({ items: [] }));
  const { memory, sleep } = client();
  assert.deepEqual(await memory.threads.context("t-1", "q"), []);
  assert.deepEqual(sleep.waits, [2000]);
  assert.equal(stub.requests[0].path, "/api/v1/acme/threads/t-1/context");
  assert.equal(parseRetryAfter("1.5"), 1.5);
  const now = Date.parse("2026-01-01T00:00:00Z");
  assert.equal(parseRetryAfter("Thu, 01 Jan 2026 00:00:03 GMT", now), 3);
  assert.equal(parseRetryAfter("Wed, 31 Dec 2025 00:00:00 GMT", now), 0);
  assert.equal(parseRetryAfter("soon"), null);
  assert.equal(parseRetryAfter(null), null);
});

test("a Retry-After past the retry budget gives up at once instead of sleeping for nothing", async () => {
  reset(fail(429, {}, { "retry-after": "120" }), ok(STATE));
  const { memory, sleep } = client({ retryBudgetMs: 5000 });
  await assert.rejects(memory.state(), (err) => err instanceof RateLimitError && err.retryAfter === 120);
  assert.equal(stub.requests.length, 1);
  assert.deepEqual(sleep.waits, []);
});

test("429 is retried even on a non-idempotent write (shed before any work)", async () => {
  reset(fail(429, {}, { "retry-after": "0" }), ok({ deleted: 0 }));
  const { memory, sleep } = client();
  assert.deepEqual(await memory.forget("Berlin"), { deleted: 0 });
  assert.deepEqual(sleep.waits, [0]);
});

test("502/504 and network errors are retried for idempotent calls only", async () => {
  reset(fail(502), ok(STATE));
  const { memory } = client();
  await memory.state();
  assert.equal(stub.requests.length, 2);

  reset(fail(502));
  await assert.rejects(memory.forget("x"), (err) => err instanceof ModelError && err.status === 502);
  assert.equal(stub.requests.length, 1, "forget is not idempotent: no retry after a 502");

  reset(fail(504));
  await assert.rejects(memory.chat("hi"), ModelError);
  assert.equal(stub.requests.length, 1, "chat is not retried after a 504");

  let calls = 0;
  const flaky = async (url, init) => {
    calls += 1;
    if (calls === 1) throw new TypeError("fetch failed");
    return fetch(url, init);
  };
  reset(ok(STATE));
  const { memory: m2, sleep } = client({ fetch: flaky });
  await m2.state();
  assert.equal(calls, 2);
  assert.equal(sleep.waits.length, 1);

  calls = 0;
  const down = async () => { calls += 1; throw new TypeError("fetch failed"); };
  const { memory: m3 } = client({ fetch: down });
  await assert.rejects(m3.forget("x"), (err) => err instanceof AgentMemoryError && !(err instanceof ApiError)
    && /POST \/api\/v1\/acme\/forget failed/.test(err.message));
  assert.equal(calls, 1);
});

test("remember sends one Idempotency-Key and reuses it on every retry; a caller's key is sent as given", async () => {
  const write = { mode: "full", sessionId: "s", turnId: "t", extraction: null };
  reset(fail(503), fail(502), ok(write));
  const { memory } = client();
  await memory.remember("I live in London.", { sessionId: "s" });
  const keys = stub.requests.map((r) => r.headers["idempotency-key"]);
  assert.equal(keys.length, 3);
  assert.match(keys[0], /^sdk-[0-9a-f-]{36}$/);
  assert.ok(keys.every((k) => k === keys[0]));
  assert.deepEqual(stub.requests[0].json, { text: "I live in London.", sessionId: "s" });

  reset(ok(write));
  await memory.remember("again");
  const second = stub.requests[0].headers["idempotency-key"];
  assert.notEqual(second, keys[0], "each logical call gets its own key");

  reset(ok(write));
  await memory.remember("mine", { idempotencyKey: "worker-7-msg-12" });
  assert.equal(stub.requests[0].headers["idempotency-key"], "worker-7-msg-12");
  assert.equal(stub.requests[0].json.idempotencyKey, undefined, "the key is a header, not a body field");
});

test("409 idempotency_in_progress is retried for keyed writes; other 409s are not", async () => {
  const batch = { sessionId: null, turnIds: ["a"], extractions: [null] };
  reset(fail(409, { code: "idempotency_in_progress" }), ok(batch));
  const { memory } = client();
  await memory.rememberMany(["hello", ["assistant", "hi"], { role: "user", content: "x", ts: "2026-01-01T00:00:00Z" }]);
  assert.equal(stub.requests.length, 2);
  assert.deepEqual(stub.requests[0].json.messages, [
    { role: "user", content: "hello" }, { role: "assistant", content: "hi" },
    { role: "user", content: "x", ts: "2026-01-01T00:00:00Z" }]);

  reset(fail(409, { code: "session_closed" }));
  await assert.rejects(memory.remember("x", { sessionId: "s" }), (err) => err instanceof ConflictError && err.code === "session_closed");
  assert.equal(stub.requests.length, 1);
});

test("a DELETE retried after a lost reply that finds the record gone succeeded", async () => {
  reset(fail(503), fail(404));
  const { memory } = client();
  // no receipt header on the retried 404: nothing to name (a 204 names its X-Erasure-Receipt)
  assert.equal(await memory.documents.delete("doc_1"), null);
  assert.equal(stub.requests.length, 2);
  reset(fail(404));
  await assert.rejects(memory.documents.delete("doc_1"), NotFoundError);
});

test("errors are typed by status and carry the problem document", async () => {
  const cases = [
    [400, ValidationError], [422, ValidationError], [401, AuthError], [403, ScopeError], [404, NotFoundError],
    [409, ConflictError], [429, RateLimitError], [503, RateLimitError], [502, ModelError], [504, ModelError],
    [500, ServerError], [418, ApiError],
  ];
  const { memory } = client({ maxRetries: 0 });
  for (const [status, Cls] of cases) {
    reset({ status, body: problem(status, "Nope", { code: "c_" + status, field: "limit", traceId: "tr-1" }) });
    const err = await memory.state({ limit: 7 }).then(() => null, (e) => e);
    assert.ok(err instanceof Cls, `${status} -> ${err?.constructor?.name}`);
    assert.ok(err instanceof ApiError && err instanceof AgentMemoryError && err instanceof Error);
    assert.equal(err.status, status);
    assert.equal(err.code, "c_" + status);
    assert.equal(err.title, "Nope");
    assert.equal(err.detail, "Nope (stub)");
    assert.equal(err.field, "limit");
    assert.equal(err.traceId, "tr-1");
    assert.equal(err.problem.type, "about:blank");
    assert.match(err.message, new RegExp(`^${status} Nope: Nope \\(stub\\) \\(code c_${status}\\)$`));
  }
  reset({ status: 500, body: "<html>gateway</html>", headers: { "content-type": "text/html", "x-request-id": "req-9" } });
  const err = await memory.state().then(() => null, (e) => e);
  assert.ok(err instanceof ServerError);
  assert.equal(err.detail, "<html>gateway</html>");
  assert.equal(err.traceId, "req-9");
});

test("a per-attempt timeout is retried for reads and ends as RequestTimeoutError", async () => {
  const hang = () => new Promise(() => {});
  const { memory, sleep } = client({
    timeoutMs: 20, maxRetries: 1, fetch: (url, init) => new Promise((_, reject) => {
      init.signal.addEventListener("abort", () => reject(init.signal.reason));
      hang();
    }),
  });
  await assert.rejects(memory.state(), RequestTimeoutError);
  assert.equal(sleep.waits.length, 1);
});

test("a caller's AbortSignal stops the call and is not retried", async () => {
  let calls = 0;
  const controller = new AbortController();
  const { memory, sleep } = client({
    fetch: (url, init) => new Promise((_, reject) => {
      calls += 1;
      init.signal.addEventListener("abort", () => reject(init.signal.reason));
      controller.abort(new Error("user left"));
    }),
  });
  await assert.rejects(memory.state({ signal: controller.signal }), /user left/);
  assert.equal(calls, 1);
  assert.deepEqual(sleep.waits, []);
  await assert.rejects(memory.state({ signal: controller.signal }), /user left/, "an aborted signal sends nothing");
  assert.equal(calls, 1);
});

test("headers: bearer key, partition and on-behalf-of from the client, overridden per call", async () => {
  reset(ok(STATE), ok(STATE));
  const { memory } = client({ partition: "p-1", onBehalfOf: "user:alice" });
  await memory.state({ limit: 200 });
  await memory.state({ partition: "p-2", onBehalfOf: "user:bob" });
  const [a, b] = stub.requests;
  assert.equal(a.headers.authorization, "Bearer k-test");
  assert.equal(a.headers["x-memory-partition"], "p-1");
  assert.equal(a.headers["x-spectron-on-behalf-of"], "user:alice");
  assert.deepEqual(a.query, { limit: "200" });
  assert.equal(b.headers["x-memory-partition"], "p-2");
  assert.equal(b.headers["x-spectron-on-behalf-of"], "user:bob");
  assert.deepEqual(b.query, {});
  const saved = process.env.AGENT_MEMORY_API_KEY;
  delete process.env.AGENT_MEMORY_API_KEY;
  const anon = new AgentMemory({ context: "acme", baseUrl: stub.url });
  if (saved !== undefined) process.env.AGENT_MEMORY_API_KEY = saved;
  reset(ok(STATE));
  await anon.state();
  assert.equal(stub.requests[0].headers.authorization, undefined);
});

test("Lambda's own 429 on the streaming URL is retried, then raised saying it gave up", async () => {
  // a stack's URL answers it once its reserved concurrency is in use (docs/deploying.md, "Streaming chat")
  const throttled = () => ({ status: 429, body: { Message: "Rate Exceeded." }, headers: {} });
  reset(throttled(), throttled(), throttled(), throttled());
  const { memory, sleep } = client();
  await assert.rejects(memory.state(), (err) => err instanceof RateLimitError && err.status === 429
    && err.detail === "Rate Exceeded." && err.message.endsWith("(gave up after 4 attempts)"));
  assert.equal(stub.requests.length, 4);
  assert.equal(sleep.waits.length, 3);
});

test("an error answered at once does not claim retries", async () => {
  reset(fail(401));
  const { memory } = client();
  await assert.rejects(memory.state(), (err) => err instanceof AuthError && !err.message.includes("gave up"));
});

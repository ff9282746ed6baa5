// The client's own logic against a local stub: cursor paging, the thread context helper's
// download concurrency and byte budget, the chat stream over HTTP, sessions and documents.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AgentMemory, AgentMemoryError, Memory, Spectron } from "agent-memory";
import { problem, recordingSleep, startStub } from "../support/stub.js";

let stub;
let handler = () => ({ status: 200, body: {} });
before(async () => { stub = await startStub((req) => handler(req)); });
after(() => stub.close());

function memory(options = {}) {
  return new AgentMemory({ context: "acme", baseUrl: stub.url, sleep: recordingSleep(), ...options });
}

function serve(fn) {
  handler = fn;
  stub.requests.length = 0;
}

test("list methods follow nextCursor lazily until hasMore is false", async () => {
  const pages = { "": ["a", "b"], c1: ["c", "d"], c2: ["e"] };
  const next = { "": "c1", c1: "c2", c2: null };
  serve((req) => {
    const cursor = req.query.cursor ?? "";
    return { body: { items: pages[cursor].map((id) => ({ id })), page: { hasMore: next[cursor] !== null, nextCursor: next[cursor] } } };
  });
  const m = memory();
  const ids = [];
  for await (const s of m.sessions.list({ pageSize: 2 })) ids.push(s.id);
  assert.deepEqual(ids, ["a", "b", "c", "d", "e"]);
  assert.deepEqual(stub.requests.map((r) => r.query), [{ limit: "2" }, { limit: "2", cursor: "c1" }, { limit: "2", cursor: "c2" }]);

  stub.requests.length = 0;
  assert.deepEqual((await m.attributes.list({ entity: "person/user", key: "location" }).toArray({ max: 3 })).map((x) => x.id), ["a", "b", "c"]);
  assert.equal(stub.requests.length, 2, "stops fetching once it has enough");
  assert.deepEqual(stub.requests[0].query, { entity: "person/user", key: "location" });
});

test("documents page by number with the cursor beside it; entities under `entities`", async () => {
  serve((req) => {
    if (req.path.endsWith("/documents")) {
      return req.query.cursor
        ? { body: { documents: [{ id: "d2" }], page: 2, pageSize: 1, total: 2, hasMore: false, nextCursor: null } }
        : { body: { documents: [{ id: "d1" }], page: 1, pageSize: 1, total: 2, hasMore: true, nextCursor: "x" } };
    }
    return { body: { entities: [{ name: "alice" }], page: { hasMore: false, nextCursor: null } } };
  });
  const m = memory();
  assert.deepEqual((await m.documents.list({ status: "ready" }).toArray()).map((d) => d.id), ["d1", "d2"]);
  assert.equal(stub.requests[0].query.status, "ready");
  assert.deepEqual(await m.entities.list({ type: "person" }).toArray(), [{ name: "alice" }]);
  assert.equal(stub.requests.at(-1).query.type, "person");
});

test("thread turns: after_index on the first page, the cursor (without after_index) after", async () => {
  serve((req) => (req.query.cursor
    ? { body: { items: [{ turnIndex: 3 }], page: { hasMore: false, nextCursor: null } } }
    : { body: { items: [{ turnIndex: 2 }], page: { hasMore: true, nextCursor: "n" } } }));
  const turns = await memory().threads.turns("ticket:1", { afterIndex: 1, entityId: "c-1", pageSize: 1 }).toArray();
  assert.deepEqual(turns.map((t) => t.turnIndex), [2, 3]);
  assert.equal(stub.requests[0].path, "/api/v1/acme/threads/ticket:1/turns", "':' stays unescaped in thread ids");
  assert.deepEqual(stub.requests[0].query, { limit: "1", entity_id: "c-1", after_index: "1" });
  assert.deepEqual(stub.requests[1].query, { limit: "1", entity_id: "c-1", cursor: "n" });
});

function contextItems(n, { inline = false, bytes = 10 } = {}) {
  return Array.from({ length: n }, (_, i) => ({
    turnId: `tt${i + 1}`, turnIndex: i + 1, text: inline ? "x".repeat(bytes) : null, metadata: {}, entityId: "c-1",
    origin: i < n - 1 ? "recent" : "semantic", createdAt: "2026-01-01T00:00:00Z", textBytes: bytes, textInline: inline,
  }));
}

test("thread context downloads at most eight turns at once and keeps the service's order", { timeout: 20_000 }, async () => {
  // A barrier: downloads are answered only once a whole batch (eight, then the rest) is in
  // flight, so a client that sent fewer at once would stall (and time out) and one that sent
  // more would show a peak above eight.
  let inFlight = 0;
  let peak = 0;
  let remaining = 20;
  let waiting = [];
  const items = contextItems(20);
  items.push({ ...items[0] }); // a duplicate semantic match: returned once
  serve(async (req) => {
    if (req.path.endsWith("/context")) return { body: { items } };
    inFlight += 1;
    peak = Math.max(peak, inFlight);
    await new Promise((release) => {
      waiting.push(release);
      const size = Math.min(8, remaining);
      if (waiting.length === size) {
        remaining -= size;
        waiting.forEach((r) => r());
        waiting = [];
      }
    });
    inFlight -= 1;
    const index = Number(req.path.split("/").at(-1));
    if (index === 5) return { status: 404, body: problem(404, "Not found") }; // deleted since
    return { body: { turnId: `tt${index}`, turnIndex: index, text: `turn ${index}`, threadId: "t" } };
  });
  const thread = new Memory("c-1", { client: memory() }).thread("t");
  const out = await thread.context("what happened?", { lastNTurns: 19 });
  assert.equal(peak, 8);
  assert.deepEqual(out.map((i) => i.turnIndex), [1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20]);
  assert.equal(out[0].text, "turn 1");
  assert.equal(out.at(-1).origin, "semantic");
  assert.deepEqual(stub.requests[0].json, { query: "what happened?", lastNTurns: 19, recentFirst: false, entityId: "c-1" });
});

test("thread context: past the byte budget no later batch is scheduled and a local error is thrown", async () => {
  serve((req) => {
    if (req.path.endsWith("/context")) return { body: { items: contextItems(24) } };
    const index = Number(req.path.split("/").at(-1));
    return { body: { turnId: `tt${index}`, turnIndex: index, text: "é".repeat(50) } }; // 100 bytes each
  });
  const m = memory({ contextByteBudget: 1000 });
  await assert.rejects(m.threads.context("t", "q"), (err) => err instanceof AgentMemoryError
    && /exceeds the 1000-byte budget \(1600 bytes after 16 of 24 items\)/.test(err.message));
  assert.equal(stub.requests.length, 1 + 16, "the third batch was never requested");

  serve(() => ({ body: { items: contextItems(3, { inline: true, bytes: 400 }) } }));
  await assert.rejects(memory({ contextByteBudget: 1000 }).threads.context("t", "q"), /1200 bytes after 3 of 3/);
  assert.equal(stub.requests.length, 1, "inline text counts too");
});

test("thread context: a turn that changed while downloading is an error", async () => {
  serve((req) => (req.path.endsWith("/context")
    ? { body: { items: contextItems(1) } }
    : { body: { turnId: "other", turnIndex: 1, text: "x" } }));
  await assert.rejects(memory().threads.context("t", "q"), /changed while downloading/);
});

test("thread append: entity, metadata, no reader list unless given, replayed on 200", async () => {
  serve((req) => ({ status: req.headers["idempotency-key"] === "k-1" ? 200 : 201,
    body: { threadId: "t", turnIndex: 1, turnId: "tt1", entityId: "c-1", createdAt: "2026-01-01T00:00:00Z" } }));
  const m = memory();
  const ref = await new Memory("c-1", { client: m }).thread("t").append("hello", { speaker: "customer" });
  assert.equal(ref.replayed, false);
  assert.deepEqual(stub.requests[0].json, { text: "hello", entityId: "c-1", metadata: { speaker: "customer" } });
  const again = await m.appendThread("t", "hello", { aclReaders: [], idempotencyKey: "k-1" });
  assert.equal(again.replayed, true);
  assert.deepEqual(stub.requests[1].json, { text: "hello", aclReaders: [] });
});

const SSE = [
  "event: delta\ndata: {\"delta\": \"Ber\"}\n\n",
  "event: delta\ndata: {\"delta\": \"lin\"}\n",
  "\nevent: done\ndata: {\"reply\": \"Berlin\", \"sessionId\": \"s\", \"traceId\": \"t\", \"citations\": [], \"memoryUpdates\": "
    + "{\"turnId\": \"u\", \"entities\": [], \"attributes\": [], \"relations\": [], \"actions\": [], \"instructions\": [], "
    + "\"uncertainties\": [], \"corrections\": []}}\n\n",
  "data: [DONE]\n\n",
];

test("chat with stream: true asks for SSE and yields deltas then done", async () => {
  serve(() => ({ headers: { "content-type": "text/event-stream" }, body: SSE }));
  const stream = await memory().chat("Where do I live?", { sessionId: "s", stream: true });
  const events = [];
  for await (const e of stream) events.push(e);
  assert.deepEqual(events.slice(0, 2), [{ type: "delta", delta: "Ber" }, { type: "delta", delta: "lin" }]);
  assert.equal(events[2].type, "done");
  assert.equal(events[2].response.reply, "Berlin");
  assert.equal(stub.requests[0].headers.accept, "text/event-stream");
  assert.deepEqual(stub.requests[0].json, { message: "Where do I live?", sessionId: "s", stream: true });
});

test("chat with stream: true goes to streamUrl when set (same path and key); everything else to baseUrl", async () => {
  const urls = [];
  const fetch = async (url, init) => {
    urls.push([url, init.headers.authorization]);
    const streamed = JSON.parse(init.body ?? "{}").stream === true;
    return streamed
      ? new Response(SSE.join(""), { headers: { "content-type": "text/event-stream" } })
      : new Response(JSON.stringify({ status: "ok" }), { headers: { "content-type": "application/json" } });
  };
  const m = new AgentMemory({ context: "acme", baseUrl: "https://api.example", apiKey: "k1", fetch,
    streamUrl: "https://abc123.lambda-url.us-east-1.on.aws/" });
  assert.equal(m.streamUrl, "https://abc123.lambda-url.us-east-1.on.aws");
  assert.equal(await (await m.chat("hi", { stream: true })).text(), "Berlin");
  await m.health();
  assert.deepEqual(urls, [["https://abc123.lambda-url.us-east-1.on.aws/api/v1/acme/chat", "Bearer k1"],
    ["https://api.example/api/v1/health", "Bearer k1"]]);

  urls.length = 0;
  const saved = process.env.AGENT_MEMORY_STREAM_URL;
  delete process.env.AGENT_MEMORY_STREAM_URL;
  try {
    const buffered = new AgentMemory({ context: "acme", baseUrl: "https://api.example", fetch });
    assert.equal(buffered.streamUrl, null);
    assert.equal(await (await buffered.chat("hi", { stream: true })).text(), "Berlin");
    assert.equal(urls[0][0], "https://api.example/api/v1/acme/chat", "no streamUrl: the buffered route");
  } finally {
    if (saved !== undefined) process.env.AGENT_MEMORY_STREAM_URL = saved;
  }
});

test("chat stream: an error event raises the problem's class; a 503 before the stream is retried", async () => {
  serve(() => ({ headers: { "content-type": "text/event-stream" },
    body: ["event: delta\ndata: {\"delta\": \"a\"}\n\n", `event: error\ndata: ${JSON.stringify(problem(502, "Model failed", { code: "model_failed" }))}\n\n`] }));
  const stream = await memory().chat("hi", { stream: true });
  const seen = [];
  await assert.rejects((async () => { for await (const e of stream) seen.push(e); })(), (err) => err.status === 502 && err.code === "model_failed");
  assert.deepEqual(seen, [{ type: "delta", delta: "a" }]);

  let n = 0;
  serve(() => (n++ === 0 ? { status: 503, headers: { "retry-after": "1" }, body: problem(503, "Busy") }
    : { headers: { "content-type": "text/event-stream" }, body: SSE }));
  assert.equal(await (await memory().chat("hi", { stream: true })).text(), "Berlin");
  assert.equal(stub.requests.length, 2);
});

test("chat without streaming decorates corrections with previous/current", async () => {
  serve(() => ({ body: { reply: "ok", memoryUpdates: { corrections: [{ entityId: "e", key: "location", oldValue: "London", newValue: "Berlin" }] } } }));
  const result = await memory().chat("I moved to Berlin.");
  const [c] = result.memoryUpdates.corrections;
  assert.equal(`${c.previous.value} → ${c.current.value}`, "London → Berlin");
});

test("sessions: create binds methods; close/turns/context reach the session's routes", async () => {
  serve((req) => {
    if (req.path.endsWith("/turns")) return { body: { turns: [{ role: "user" }], page: { hasMore: false, nextCursor: null } } };
    if (req.path.endsWith("/context")) return { body: { context: "c", sources: [] } };
    return { status: req.path.endsWith("/close") ? 200 : 201,
      body: { id: "sess 1", scopes: [["org/acme"]], labels: [], createdAt: "now", closedAt: req.path.endsWith("/close") ? "later" : null, metadata: null } };
  });
  const m = new Spectron({ context: "acme", baseUrl: stub.url });
  const session = await m.sessions.create({ scopes: ["org/acme"], labels: ["x"] });
  assert.deepEqual(stub.requests[0].json, { scopes: ["org/acme"], labels: ["x"] });
  assert.deepEqual(Object.keys(session), ["id", "scopes", "labels", "createdAt", "closedAt", "metadata"]);
  assert.equal((await session.close()).closedAt, "later");
  assert.equal(stub.requests[1].path, "/api/v1/acme/sessions/sess%201/close");
  assert.deepEqual(await session.turns().toArray(), [{ role: "user" }]);
  assert.equal((await session.context("q", { k: 3 })).context, "c");
  assert.deepEqual(stub.requests.at(-1).json, { query: "q", k: 3 });
});

test("documents: a string goes as JSON text, bytes as a multipart file", async () => {
  serve(() => ({ status: 202, body: { id: "doc_1", status: "ingesting" } }));
  const m = memory();
  await m.documents.upload("# Title\n\nBody", { title: "Handbook", format: "markdown", labels: ["a"] });
  assert.deepEqual(stub.requests[0].json, { text: "# Title\n\nBody", title: "Handbook", format: "markdown", labels: ["a"] });
  await m.documents.upload(new TextEncoder().encode("hello"), { filename: "notes.md", scopes: [["team/a"]] });
  const req = stub.requests[1];
  assert.match(req.headers["content-type"], /^multipart\/form-data; boundary=/);
  assert.match(req.raw, /name="file"; filename="notes.md"\r\nContent-Type: text\/markdown\r\n\r\nhello/);
  assert.match(req.raw, /name="scopes"\r\n\r\n\[\["team\/a"\]\]/);
});

test("documents.waitReady polls until the document leaves ingesting", async () => {
  let polls = 0;
  serve(() => ({ body: { id: "doc_1", status: ++polls < 3 ? "ingesting" : "ready", chunksDone: polls, chunksTotal: 3 } }));
  const progress = [];
  const doc = await memory().documents.waitReady("doc_1", { onProgress: (d) => progress.push(d.chunksDone) });
  assert.equal(doc.status, "ready");
  assert.deepEqual(progress, [1, 2, 3]);
});

test("path segments are escaped; the constructor needs a context", async () => {
  serve(() => ({ body: { history: [{ value: "Berlin" }] } }));
  assert.deepEqual(await memory().entities.history("person", "mary ann", "home/city"), [{ value: "Berlin" }]);
  assert.equal(stub.requests[0].path, "/api/v1/acme/entities/person/mary%20ann/history/home%2Fcity");
  assert.throws(() => new AgentMemory({}), /context is required/);
});

test("documents.uploadLarge: a ticket, the PUT to the presigned URL without the API key, then complete", async () => {
  serve((req) => {
    if (req.path.endsWith("/documents/uploads")) {
      return { status: 201, body: { id: "doc_9", status: "uploading", uploadUrl: `${stub.url}/bucket/doc_9?sig=x`, method: "PUT",
        headers: { "content-type": "text/markdown" }, expiresAt: "2026-01-01T00:15:00Z", size: req.json.size } };
    }
    if (req.path === "/bucket/doc_9") return { status: 200, body: "" };
    return { status: 202, body: { id: "doc_9", status: "ingesting" } };
  });
  const doc = await memory({ apiKey: "secret" }).documents.uploadLarge("# Big\n\nhandbook", { title: "Big", filename: "big.md" });
  assert.equal(doc.status, "ingesting");
  const [ticket, put, complete] = stub.requests;
  assert.deepEqual(ticket.json, { size: 15, title: "Big", filename: "big.md" });
  assert.equal(ticket.headers.authorization, "Bearer secret");
  assert.equal(put.method, "PUT");
  assert.equal(put.raw, "# Big\n\nhandbook");
  assert.equal(put.headers["content-type"], "text/markdown");
  assert.equal(put.headers.authorization, undefined, "the API key never goes to the bucket");
  assert.equal(complete.path, "/api/v1/acme/documents/doc_9/complete");
});

test("chat stream: the caller's signal aborts it mid-stream with the signal's reason; break releases it", async () => {
  const enc = new TextEncoder();
  let cancelled = 0;
  const hanging = async (url, init) => new Response(new ReadableStream({
    start(controller) {
      controller.enqueue(enc.encode('event: delta\ndata: {"delta": "a"}\n\n'));
      init.signal.addEventListener("abort", () => { cancelled += 1; controller.error(init.signal.reason); });
    },
  }), { headers: { "content-type": "text/event-stream" } });
  const caller = new AbortController();
  const stream = await memory({ fetch: hanging }).chat("hi", { stream: true, signal: caller.signal });
  const seen = [];
  await assert.rejects((async () => {
    for await (const e of stream) {
      seen.push(e);
      caller.abort(new Error("user pressed stop"));
    }
  })(), /user pressed stop/);
  assert.deepEqual(seen, [{ type: "delta", delta: "a" }]);

  const second = await memory({ fetch: hanging }).chat("hi", { stream: true });
  for await (const e of second) { void e; break; }
  assert.equal(cancelled, 2, "leaving the loop aborted the request");
});

test("mcpUrl is the context's MCP route under baseUrl, for a host to register with the key", () => {
  const m = new AgentMemory({ context: "acme team", baseUrl: "https://api.example/", apiKey: "k" });
  assert.equal(m.mcpUrl(), "https://api.example/api/v1/acme%20team/mcp");
});

import assert from "node:assert/strict";
import { test } from "node:test";

import { ChatStream, FrameAssembler, LineSplitter, RateLimitError, ValidationError, chatEvent, frames } from "agent-memory";

const enc = new TextEncoder();

async function collect(iterable) {
  const out = [];
  for await (const x of iterable) out.push(x);
  return out;
}

async function* chunks(parts) {
  for (const p of parts) yield typeof p === "string" ? enc.encode(p) : p;
}

const STREAM = 'event: delta\ndata: {"delta": "Hel"}\n\nevent: delta\ndata: {"delta": "lo \u00e9\u20ac"}\n\n'
  + ': a comment\n\nevent: done\ndata: {"reply": "Hello \u00e9\u20ac", "sessionId": "s", "traceId": "t", '
  + '"citations": [], "memoryUpdates": {"turnId": "u", "entities": [], "attributes": [], "relations": [], '
  + '"actions": [], "instructions": [], "uncertainties": [], "corrections": '
  + '[{"entityId": "e", "key": "location", "oldValue": "London", "newValue": "Berlin"}]}}\n\ndata: [DONE]\n\n';

const EXPECTED = [
  { event: "delta", data: '{"delta": "Hel"}' },
  { event: "delta", data: '{"delta": "lo \u00e9\u20ac"}' },
];

test("frames are the same however the bytes are split (every split point, multi-byte characters included)", async () => {
  const bytes = enc.encode(STREAM);
  const whole = await collect(frames(chunks([bytes])));
  assert.equal(whole.length, 4);
  assert.deepEqual(whole.slice(0, 2), EXPECTED);
  assert.equal(whole[2].event, "done");
  assert.deepEqual(whole[3], { event: "message", data: "[DONE]" });
  for (let cut = 1; cut < bytes.length; cut++) {
    const split = await collect(frames(chunks([bytes.slice(0, cut), bytes.slice(cut)])));
    assert.deepEqual(split, whole, `split at byte ${cut}`);
  }
  const byteByByte = await collect(frames(chunks(Array.from(bytes, (b) => new Uint8Array([b])))));
  assert.deepEqual(byteByByte, whole);
});

test("CRLF and CR line endings, a CRLF split across chunks, and a BOM", async () => {
  const crlf = "\uFEFFevent: delta\r\ndata: {\"delta\": \"a\"}\r\n\r\nevent: delta\rdata: {\"delta\": \"b\"}\r\r";
  const bytes = enc.encode(crlf);
  const whole = await collect(frames(chunks([bytes])));
  assert.deepEqual(whole, [{ event: "delta", data: '{"delta": "a"}' }, { event: "delta", data: '{"delta": "b"}' }]);
  for (let cut = 1; cut < bytes.length; cut++) {
    assert.deepEqual(await collect(frames(chunks([bytes.slice(0, cut), bytes.slice(cut)]))), whole, `cut ${cut}`);
  }
});

test("multi-line data joins with newlines; a field without a colon and an unknown field are handled", () => {
  const assembler = new FrameAssembler();
  const lines = ["event: x", "data: one", "data:two", "data", "id: 7", "retry: 10", ""];
  const out = lines.map((l) => assembler.feed(l)).filter(Boolean);
  assert.deepEqual(out, [{ event: "x", data: "one\ntwo\n" }]);
  assert.equal(assembler.feed(""), null, "an empty frame dispatches nothing");
});

test("a last frame without its blank line is still delivered at end of stream", async () => {
  const out = await collect(frames(chunks(['event: delta\ndata: {"delta": "z"}'])));
  assert.deepEqual(out, [{ event: "delta", data: '{"delta": "z"}' }]);
});

test("LineSplitter keeps a partial line for the next chunk", () => {
  const s = new LineSplitter();
  assert.deepEqual(s.push("ab"), []);
  assert.deepEqual(s.push("c\nd\r"), ["abc", "d"]);
  assert.deepEqual(s.push("\ne"), [], "the LF of a split CRLF is not a second line");
  assert.deepEqual(s.end(), ["e"]);
});

test("chat events: delta, done with corrections decorated, [DONE] skipped, error raised as its class", () => {
  assert.deepEqual(chatEvent({ event: "delta", data: '{"delta": "hi"}' }), { type: "delta", delta: "hi" });
  assert.equal(chatEvent({ event: "message", data: "[DONE]" }), null);
  const done = chatEvent({ event: "done", data: JSON.stringify({ reply: "r", memoryUpdates: { corrections: [
    { entityId: "e", key: "k", oldValue: "London", newValue: "Berlin" }] } }) });
  const c = done.response.memoryUpdates.corrections[0];
  assert.equal(c.previous.value, "London");
  assert.equal(c.current.value, "Berlin");
  assert.deepEqual(JSON.parse(JSON.stringify(c)), { entityId: "e", key: "k", oldValue: "London", newValue: "Berlin" });
  assert.throws(() => chatEvent({ event: "error", data: JSON.stringify({ status: 503, title: "Busy", code: "busy" }) }),
    (err) => err instanceof RateLimitError && err.code === "busy");
  assert.throws(() => chatEvent({ event: "error", data: JSON.stringify({ status: 400, title: "Bad", field: "message" }) }),
    (err) => err instanceof ValidationError && err.field === "message");
});

test("ChatStream yields deltas then the done event, and keeps the final response", async () => {
  const body = new ReadableStream({
    start(controller) {
      const bytes = enc.encode(STREAM);
      for (let i = 0; i < bytes.length; i += 7) controller.enqueue(bytes.slice(i, i + 7));
      controller.close();
    },
  });
  const stream = new ChatStream(new Response(body, { headers: { "content-type": "text/event-stream" } }), new AbortController());
  const events = await collect(stream);
  assert.deepEqual(events.map((e) => e.type), ["delta", "delta", "done"]);
  assert.equal(events.filter((e) => e.type === "delta").map((e) => e.delta).join(""), "Hello \u00e9\u20ac");
  assert.equal(stream.response.reply, "Hello \u00e9\u20ac");
  assert.equal((await stream.final()).memoryUpdates.corrections[0].current.value, "Berlin");
});

test("a stream that ends without a done event is an error", async () => {
  const stream = new ChatStream(new Response('event: delta\ndata: {"delta": "x"}\n\n'), new AbortController());
  await assert.rejects(collect(stream), /without a final response/);
});

// The thread flow of modeling-conversations.md (its Python example in JavaScript), a
// streamed chat turn and the document flow, through the client against the real service.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AgentMemory, Memory, NotFoundError } from "agent-memory";
import { skipWithout } from "../support/examples.js";
import { useService } from "../support/service.js";

// A service (and data directory) of this file's own.
const service = useService({ before, after });

test("modeling-conversations.md: Memory.recall is entity-wide, across the entity's threads", async (t) => {
  if (skipWithout(service, t)) return;
  const client = new AgentMemory({ context: service.context("clinic"), baseUrl: service.url });
  const patient = new Memory("patient-7", { client });
  await patient.thread("patient-7-session-3").append("The box breathing exercise before the flight helped a lot.");
  await new Memory("patient-9", { client }).thread("patient-9-session-1").append(
    "The box breathing exercise made me dizzy.");
  const session4 = patient.thread("patient-7-session-4");
  await session4.append("Today I want to talk about the next flight.");
  const question = "Which breathing exercise helped before the flight?";
  const sameThread = await session4.context(question, { lastNTurns: 6 });
  assert.ok(!sameThread.some((item) => (item.text ?? "").includes("helped a lot")));
  const recalled = await patient.recall(question);
  assert.match(recalled.context, /helped a lot/);
  assert.doesNotMatch(recalled.context, /dizzy/);
});

test("modeling-conversations.md: a thread of one entity, appended and read back as context", async (t) => {
  if (skipWithout(service, t)) return;
  const client = new AgentMemory({ context: service.context("support"), baseUrl: service.url });
  const memory = new Memory("customer-42", { client });
  const thread = memory.thread("ticket-8492");

  const first = await thread.append(
    "Sign-in still fails after the password reset.",
    { speaker: "customer", channel: "email" },
  );
  await thread.append(
    "We verified the reset link and are checking the account lock.",
    { speaker: "agent", channel: "email" },
  );

  const context = await thread.context(
    "What has already been tried, and what should the next agent check?",
    { lastNTurns: 8 },
  );
  assert.deepEqual(context.map((item) => item.text), [
    "Sign-in still fails after the password reset.",
    "We verified the reset link and are checking the account lock."]);
  assert.deepEqual(context.map((item) => item.origin), ["recent", "recent"]);
  assert.deepEqual(context[0].metadata, { speaker: "customer", channel: "email" });
  assert.equal(context[0].entityId, "customer-42");

  const again = await client.appendThread("ticket-8492", "Sign-in still fails after the password reset.",
    { entityId: "customer-42", idempotencyKey: "worker-1-msg-1" });
  const replay = await client.appendThread("ticket-8492", "Sign-in still fails after the password reset.",
    { entityId: "customer-42", idempotencyKey: "worker-1-msg-1" });
  assert.equal(again.replayed, false);
  assert.equal(replay.replayed, true);
  assert.equal(replay.turnIndex, again.turnIndex);
  assert.equal(first.turnIndex, 1);
  const turns = await client.threads.turns("ticket-8492").toArray();
  assert.deepEqual(turns.map((x) => x.turnIndex), [1, 2, 3]);
  assert.equal((await client.threads.get("ticket-8492")).threadId ?? "ticket-8492", "ticket-8492");
  await assert.rejects(client.threads.turn("ticket-8492", 99), NotFoundError);
});

test("streamed chat: deltas then the final response, the same turn a plain chat would store", async (t) => {
  if (skipWithout(service, t)) return;
  const memory = new AgentMemory({ context: service.context("stream"), baseUrl: service.url });
  const session = await memory.sessions.create({ scopes: ["org/acme/user/alice"] });
  await memory.remember("I live in Lisbon.", { sessionId: session.id });
  const stream = await memory.chat("Where do I live?", { sessionId: session.id, stream: true });
  const deltas = [];
  let done = null;
  for await (const event of stream) {
    if (event.type === "delta") deltas.push(event.delta);
    else done = event.response;
  }
  assert.ok(deltas.length >= 1);
  assert.equal(deltas.join(""), done.reply);
  assert.match(done.reply, /Lisbon/);
  assert.ok(done.citations.length >= 1);
  assert.equal(done.sessionId, session.id);
  const trace = await memory.traces.get(done.traceId);
  assert.equal(trace.id, done.traceId);
});

test("documents: upload, wait until ready, chunks, recall cites them, delete", async (t) => {
  if (skipWithout(service, t)) return;
  const memory = new AgentMemory({ context: service.context("docs"), baseUrl: service.url });
  const upload = await memory.documents.upload("# Team handbook\n\nAlice is CTO at Acme, based in Berlin.",
    { title: "Team handbook", format: "markdown" });
  const doc = await memory.documents.waitReady(upload.id, { pollIntervalMs: 100 });
  assert.equal(doc.status, "ready");
  const chunks = await memory.documents.chunks(doc.id).toArray();
  assert.ok(chunks.length >= 1);
  const bytes = await memory.documents.upload(new TextEncoder().encode("Bob is CFO at Acme."), { filename: "bob.txt" });
  await memory.documents.waitReady(bytes.id, { pollIntervalMs: 100 });
  assert.deepEqual((await memory.documents.list().toArray()).map((d) => d.id).sort(), [doc.id, bytes.id].sort());
  const hits = await memory.recall("Who is the CTO of Acme?", { include: ["passages"] });
  assert.ok(hits.hits.length >= 1, JSON.stringify(hits));
  await memory.documents.delete(doc.id);
  await assert.rejects(memory.documents.get(doc.id), NotFoundError);
});

// chat-sessions.md's JavaScript examples, run as written (only the import names this
// package) as child processes against the real local service.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AgentMemory } from "agent-memory";
import { runExample, skipWithout } from "../support/examples.js";
import { useService } from "../support/service.js";

// A service (and data directory) of this file's own.
const service = useService({ before, after });

test("chat-sessions.md: the readline chat loop prints the replies and the correction", async (t) => {
  if (skipWithout(service, t)) return;
  const { code, stdout, stderr } = await runExample(service, "chat-loop.mjs",
    { answers: ["I live in London.", "I moved to Berlin.", "Where do I live?", "exit"] });
  assert.equal(code, 0, stderr);
  const lines = stdout.split("You: ").join("\n").split("\n").filter(Boolean);
  const agent = lines.filter((l) => l.startsWith("Agent: "));
  assert.equal(agent.length, 3, stdout);
  assert.match(agent[2], /Berlin/);
  assert.ok(lines.includes("  [memory corrected] London → Berlin"), stdout);
  assert.equal(lines.filter((l) => l.includes("[memory corrected]")).length, 1, stdout);

  // The loop's session was closed on "exit" and holds its three exchanges.
  const memory = new AgentMemory({ context: service.context("acme-prod"), baseUrl: service.url });
  const [session] = await memory.sessions.list().toArray();
  assert.ok(session.closedAt, "the session was closed");
  const turns = await memory.sessions.turns(session.id).toArray();
  assert.deepEqual(turns.map((x) => x.role), ["user", "assistant", "user", "assistant", "user", "assistant"]);
});

test("chat-sessions.md: the quick start prints the reply and the memory updates", async (t) => {
  if (skipWithout(service, t)) return;
  const { code, stdout, stderr } = await runExample(service, "quickstart.mjs");
  assert.equal(code, 0, stderr);
  assert.match(stdout, /corrections: \[\]/);
  assert.match(stdout, /entities: \[/);
});

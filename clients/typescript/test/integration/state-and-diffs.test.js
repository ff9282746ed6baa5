// state-and-diffs.md's JavaScript examples, run as written (only the import names this
// package) as a child process against the real local service.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AgentMemory, ValidationError } from "agent-memory";
import { runExample, skipWithout } from "../support/examples.js";
import { useService } from "../support/service.js";

// A service (and data directory) of this file's own.
const service = useService({ before, after });

test("state-and-diffs.md: remember with corrections, state, state({ limit: 200 }), profile", async (t) => {
  if (skipWithout(service, t)) return;
  const { code, stdout, stderr } = await runExample(service, "state-and-diffs.mjs");
  assert.equal(code, 0, stderr);
  const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
  assert.ok(line, stdout);
  const { seen, state, profile } = JSON.parse(line.slice("RESULT ".length));
  assert.deepEqual(seen.updated, [{ key: "location", old: "London", new: "Berlin" }]);
  assert.ok(seen.added.some((a) => a.key === "location" && a.value === "Berlin"), JSON.stringify(seen.added));
  const locations = state.identity.attributes.filter((a) => a.key === "location").map((a) => a.value);
  assert.deepEqual(locations, ["Berlin"], "state shows the current value only");
  assert.ok(Array.isArray(state.instructions) && Array.isArray(state.unknowns));
  assert.equal(typeof state.truncated.attributes, "boolean");
  assert.match(stdout, /Berlin/, "the state example printed the identity attributes");
  assert.ok(profile && typeof profile === "object");

  // The supersession chain and asOf reads behind the correction.
  const memory = new AgentMemory({ context: service.context("acme-prod"), baseUrl: service.url });
  const chain = await memory.entities.history("person", "user", "location");
  assert.deepEqual(chain.map((a) => a.value).sort(), ["Berlin", "London"]);
  // "last month" back-dates Berlin's validity: read as of then, and as of a day before.
  const berlin = chain.find((a) => a.value === "Berlin");
  const locationAt = async (asOf) => (await memory.entities.get("person", "user", { asOf })).attributes
    .filter((a) => a.key === "location").map((a) => a.value);
  assert.deepEqual(await locationAt(berlin.validFrom), ["Berlin"]);
  const dayBefore = new Date(Date.parse(berlin.validFrom) - 86_400_000).toISOString();
  assert.deepEqual(await locationAt(dayBefore), []);
  // A limit above 500 is capped (the spec's rule), never refused; one below 1 is a 400.
  const capped = await memory.state({ limit: 501 });
  assert.deepEqual(capped.identity.attributes.filter((a) => a.key === "location").map((a) => a.value), ["Berlin"]);
  await assert.rejects(memory.state({ limit: 0 }), (err) => err instanceof ValidationError && err.status === 400);
});

test("one fact by id: get, update (a correction with previous/current), delete; 404 after", async (t) => {
  if (skipWithout(service, t)) return;
  const { NotFoundError } = await import("agent-memory");
  const memory = new AgentMemory({ context: service.context("acme-byid"), baseUrl: service.url });
  await memory.remember("I live in London.");
  await memory.remember("I like sushi.");
  const [home] = await memory.attributes.list({ key: "location" }).toArray();
  assert.deepEqual(await memory.attributes.get(home.id), home);
  const fixed = await memory.attributes.update(home.id, "Leeds", { note: "misheard" });
  const [c] = fixed.corrections;
  assert.deepEqual([c.previous.value, c.current.value], ["London", "Leeds"]);
  assert.equal(fixed.previous.supersededBy, fixed.fact.id);
  const chain = await memory.entities.history("person", "user", "location");
  assert.deepEqual(chain.map((a) => a.value), ["London", "Leeds"]);
  const [sushi] = await memory.attributes.list({ key: "likes" }).toArray();
  const gone = await memory.attributes.delete(sushi.id, { purge: true });
  assert.equal(gone.deleted, 1);
  await assert.rejects(memory.attributes.get(sushi.id), (err) => err instanceof NotFoundError && err.status === 404);
  await assert.rejects(memory.actions.get("act_missing"), (err) => err instanceof NotFoundError);
});

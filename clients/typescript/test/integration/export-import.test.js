// exportContext streams a context's NDJSON export and importContext writes it into another
// context, against the real local service (docs/export.md).
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AgentMemory, ValidationError } from "agent-memory";
import { skipWithout } from "../support/examples.js";
import { useService } from "../support/service.js";

const service = useService({ before, after });

test("a context exported line by line imports into another, and a second import writes nothing", async (t) => {
  if (skipWithout(service, t)) return;
  const source = new AgentMemory({ context: service.context("export-src"), baseUrl: service.url });
  await source.remember("I live in London.");
  await source.remember("I moved to Berlin.");
  const lines = [];
  for await (const line of source.exportContext()) lines.push(line);
  assert.equal(JSON.parse(lines[0]).type, "header");
  const end = JSON.parse(lines.at(-1));
  assert.equal(end.type, "end");
  assert.equal(end.records, lines.length - 2);

  const copy = new AgentMemory({ context: service.context("export-copy"), baseUrl: service.url });
  const first = await copy.importContext(lines);
  assert.equal(first.written, first.records);
  const again = await copy.importContext((await source.exportContext().toArray()).join("\n"));
  assert.equal(again.written, 0);
  const chain = await copy.entities.history("person", "user", "location");
  assert.deepEqual(chain.map((a) => a.value), ["London", "Berlin"]);
  await assert.rejects(copy.importContext('{"type":"header","format":"agent-memory-export","version":9}\n'),
    (err) => err instanceof ValidationError && err.status === 400 && err.code === "export_version_unsupported");
});

test("exportJob and importJob move a context through the job form, and a bad stream throws its line", async (t) => {
  if (skipWithout(service, t)) return;
  const source = new AgentMemory({ context: service.context("job-src"), baseUrl: service.url });
  await source.remember("I live in Lisbon.");
  const states = [];
  const text = await source.exportJob({ pollIntervalMs: 50, onProgress: (job) => states.push(job.state) });
  assert.equal(states.at(-1), "succeeded");
  const inline = await source.exportContext().toArray();
  // the same records (the trailer's skipped rows include audit rows written meanwhile)
  assert.deepEqual(text.trimEnd().split("\n").slice(1, -1), inline.slice(1, -1));

  const copy = new AgentMemory({ context: service.context("job-copy"), baseUrl: service.url });
  const result = await copy.importJob(text, { pollIntervalMs: 50 });
  assert.equal(result.written, result.records);
  assert.ok(result.records > 0);
  const job = await copy.startExportJob();
  assert.equal(job.kind, "export");
  assert.equal((await copy.getExportJob(job.id)).id, job.id);
  const bad = text.replace('"type":"end"', '"type":"nope"');
  await assert.rejects(copy.importJob(bad, { pollIntervalMs: 50 }),
    (err) => err instanceof ValidationError && err.code === "invalid_export_line"
      && err.problem.line === text.trimEnd().split("\n").length);
});

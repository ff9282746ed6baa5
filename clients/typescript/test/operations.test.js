// Every operation in openapi.yaml has a client method (or is in OMITTED with a reason), and
// each method sends its operation's method and path.
import assert from "node:assert/strict";
import { after, before, test } from "node:test";

import { AgentMemory, OMITTED, OPERATIONS } from "agent-memory";
import { startStub } from "./support/stub.js";
import { specOperations } from "./support/spec.js";

const spec = specOperations();

test("openapi.yaml parses into its operations", () => {
  assert.ok(Object.keys(spec).length >= 40, `only ${Object.keys(spec).length} operations found`);
  assert.deepEqual(spec.chat, ["POST", "/api/v1/{context_id}/chat"]);
});

test("every operation of openapi.yaml has a client method or a reason to have none", () => {
  const missing = Object.keys(spec).filter((id) => !(id in OPERATIONS) && !(id in OMITTED));
  assert.deepEqual(missing, [], `operations without a client method: ${missing.join(", ")} `
    + "(add them to src/operations.js and the client, or to OMITTED with the reason)");
  for (const [id, reason] of Object.entries(OMITTED)) {
    assert.ok(typeof reason === "string" && reason.length > 10, `${id}: OMITTED needs a reason`);
    assert.ok(!(id in OPERATIONS), `${id} is both implemented and omitted`);
  }
});

test("the operation table matches openapi.yaml's methods and paths, and names no stale operation", () => {
  for (const [id, [method, path]] of Object.entries(OPERATIONS)) {
    assert.ok(id in spec, `${id} is not in openapi.yaml`);
    assert.deepEqual([method, path], spec[id], id);
  }
});

// Arguments that reach each method's route; path parameters take these values.
const PARAMS = { context_id: "acme", session_id: "s1", thread_id: "t1", turn_index: "2", trace_id: "tr1",
  document_id: "d1", type: "person", name: "alice", key: "location", uncertainty_id: "u1",
  fact_id: "f1", key_name: "k1", principal_id: "p1", normalised: "refund", job_id: "job_1",
  receipt_id: "rcpt_1" };
const ARGS = {
  "sessions.create": [{}], "sessions.delete": ["s1"], "sessions.close": ["s1"], "sessions.turns": ["s1"],
  "sessions.context": ["s1", "q"], remember: ["t"], rememberMany: [["t"]], "threads.get": ["t1"],
  "threads.append": ["t1", "x"], "threads.turns": ["t1"], "threads.turn": ["t1", 2], "threads.context": ["t1", "q"],
  "threads.setAcl": ["t1", ["r"]], chat: ["hi"], "traces.get": ["tr1"],
  "receipts.get": ["rcpt_1"], "receipts.verify": ["rcpt_1"], "documents.upload": ["text"],
  "documents.createUpload": [10], "documents.completeUpload": ["d1"], "documents.get": ["d1"],
  "documents.delete": ["d1"], "documents.chunks": ["d1"], "documents.fetchRaw": ["d1"], "documents.reprocess": ["d1"],
  "documents.query": ["q"], "documents.keyword": ["refund"], "documents.searchKeywords": ["q"],
  "documents.documentKeywords": ["d1"], "entities.get": ["person", "alice"],
  "entities.delete": ["person", "alice"], "entities.allHistory": ["person", "alice"],
  "entities.history": ["person", "alice", "location"], "uncertainty.resolve": ["u1", "v"], forget: ["q"],
  reflect: ["q"], recall: ["q"], context: ["q"], inspect: ["entity:person/alice"],
  "keys.rotate": ["k1"], "keys.delete": ["k1"],
  "principals.get": ["p1"], "principals.grant": ["p1", "/", ["memory:read"]],
  "principals.revoke": ["p1", "/", ["memory:read"]], "principals.effective": ["p1", "/"],
  "scopes.register": ["org/acme"], "scopes.delete": ["org/acme"], "scopes.forget": ["org/acme"],
  importContext: ['{"type":"header"}\n'],
  getExportJob: ["job_1"], getImportJob: ["job_1"], startImportJob: ["job_1"], createImportJob: [10],
  ...Object.fromEntries(["attributes", "relations", "actions", "instructions"].flatMap((c) =>
    [[`${c}.get`, ["f1"]], [`${c}.delete`, ["f1"]], [`${c}.update`, ["f1", "v"]]])),
};

let stub;
before(async () => {
  stub = await startStub(() => ({ status: 200, body: { items: [], history: [], page: { hasMore: false, nextCursor: null } } }));
});
after(() => stub.close());

test("each client method sends its operation's method and path", async () => {
  const memory = new AgentMemory({ context: "acme", baseUrl: stub.url });
  for (const [id, [, , sdkMethod]] of Object.entries(OPERATIONS)) {
    const parts = sdkMethod.split(".");
    const owner = parts.length === 2 ? memory[parts[0]] : memory;
    const fn = owner?.[parts.at(-1)];
    assert.equal(typeof fn, "function", `${id}: memory.${sdkMethod} is not a method`);
    stub.requests.length = 0;
    let result = fn.apply(owner, ARGS[sdkMethod] || []);
    if (result && typeof result.toArray === "function") result = result.toArray();
    await result;
    const [method, template] = spec[id];
    const path = template.replace(/\{([a-z_]+)\}/g, (_, name) => PARAMS[name]);
    assert.ok(stub.requests.length >= 1, `${sdkMethod} sent nothing`);
    assert.deepEqual([stub.requests[0].method, stub.requests[0].path], [method, path], `${id} via ${sdkMethod}`);
  }
});

// src/index.d.ts declares every method of the operation table, as a function, on the same
// path of an `AgentMemory` (checked with the TypeScript compiler on a generated snippet).
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { join } from "node:path";
import { test } from "node:test";

import { OPERATIONS } from "agent-memory";

const ROOT = fileURLToPath(new URL("..", import.meta.url));

test("index.d.ts declares each operation's client method", async (t) => {
  let ts;
  try {
    ts = createRequire(join(ROOT, "package.json"))("typescript");
  } catch {
    if (process.env.AGENT_MEMORY_TS_REQUIRED) assert.fail("typescript is missing: run npm ci");
    t.skip("typescript is not installed (npm ci)");
    return;
  }
  const lines = Object.entries(OPERATIONS).map(([id, [, , method]]) =>
    `const _${id}: (...args: never[]) => unknown = m.${method}; void _${id};`);
  const source = `import type { AgentMemory } from "agent-memory";\ndeclare const m: AgentMemory;\n${lines.join("\n")}\n`;
  const file = join(ROOT, "test", "types", "__operations__.ts");
  const host = ts.createCompilerHost({});
  const read = host.readFile.bind(host);
  host.readFile = (name) => (name === file ? source : read(name));
  const exists = host.fileExists.bind(host);
  host.fileExists = (name) => name === file || exists(name);
  const program = ts.createProgram([file], {
    strict: true, noEmit: true, module: ts.ModuleKind.NodeNext, moduleResolution: ts.ModuleResolutionKind.NodeNext,
    target: ts.ScriptTarget.ES2022, lib: ["lib.es2022.d.ts", "lib.dom.d.ts"], types: [],
  }, host);
  const errors = ts.getPreEmitDiagnostics(program).map((d) => ts.flattenDiagnosticMessageText(d.messageText, "\n"));
  assert.deepEqual(errors, []);
});

// The client runs in browsers: src/ imports only its own modules (no node: built-ins, no
// packages) and names no Node global except the guarded `globalThis.process`.
import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { test } from "node:test";

const SRC = new URL("../../src/", import.meta.url);

test("src/*.js imports only relative modules and touches no Node-only global", () => {
  const files = readdirSync(SRC).filter((f) => f.endsWith(".js"));
  assert.ok(files.includes("client.js"));
  for (const file of files) {
    const text = readFileSync(new URL(file, SRC), "utf8");
    for (const [, spec] of text.matchAll(/\b(?:import|export)\b[^;]*?\bfrom\s+["']([^"']+)["']/g)) {
      assert.ok(spec.startsWith("./"), `${file} imports ${spec}`);
    }
    assert.doesNotMatch(text, /\bimport\s*\(/, `${file} has a dynamic import`);
    assert.doesNotMatch(text, /\brequire\s*\(|\bBuffer\b|__dirname/, `${file} uses a Node-only API`);
    const processUses = [...text.matchAll(/\bprocess\b/g)].length;
    const guarded = [...text.matchAll(/globalThis\.process\b/g)].length;
    assert.equal(processUses, guarded, `${file} reads process outside the globalThis guard`);
  }
});

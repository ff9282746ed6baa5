// src/openapi.d.ts is what `npm run generate` makes from openapi.yaml today.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

import { OPENAPI } from "./support/spec.js";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const CLI = join(ROOT, "node_modules", "openapi-typescript", "bin", "cli.js");

test("src/openapi.d.ts matches openapi.yaml (run `npm run generate` in clients/typescript)", (t) => {
  if (!existsSync(CLI)) {
    if (process.env.AGENT_MEMORY_TS_REQUIRED) assert.fail(`${CLI} is missing: run npm ci`);
    t.skip("openapi-typescript is not installed (npm ci)");
    return;
  }
  const dir = mkdtempSync(join(tmpdir(), "agent-memory-types-"));
  try {
    const out = join(dir, "openapi.d.ts");
    execFileSync(process.execPath, [CLI, OPENAPI, "--output", out], { cwd: ROOT, stdio: "pipe" });
    const fresh = readFileSync(out, "utf8");
    const committed = readFileSync(join(ROOT, "src", "openapi.d.ts"), "utf8");
    if (fresh !== committed) {
      const a = committed.split("\n");
      const b = fresh.split("\n");
      const line = a.findIndex((l, i) => l !== b[i]);
      assert.fail(`src/openapi.d.ts is stale against openapi.yaml (first difference at line ${line + 1}: `
        + `${JSON.stringify(a[line])} vs ${JSON.stringify(b[line])}); run \`npm run generate\``);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

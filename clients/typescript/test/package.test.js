// The package as npm would publish it: `npm pack --dry-run --json` lists README, LICENSE and the
// sources and nothing else; the license is declared; the `engines` range is what require() and
// import both work on (require(esm) without a flag: Node 20.19+ and 22.12+), and both do here.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";
import { test } from "node:test";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const pkg = JSON.parse(readFileSync(new URL("../package.json", import.meta.url), "utf8"));

function packed() {
  let out;
  try {
    out = execFileSync("npm", ["pack", "--dry-run", "--json", "--ignore-scripts"],
      { cwd: ROOT, encoding: "utf8", stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    if (err.code === "ENOENT" && !process.env.AGENT_MEMORY_TS_REQUIRED) return null;
    throw err;
  }
  return JSON.parse(out)[0];
}

test("npm pack: publishable, with README, LICENSE and the sources only", (t) => {
  assert.equal(pkg.private, undefined, "a private package cannot be published");
  assert.equal(pkg.license, "Apache-2.0");
  const result = packed();
  if (result === null) {
    t.skip("npm is not installed");
    return;
  }
  const files = result.files.map((f) => f.path).sort();
  for (const name of ["README.md", "LICENSE", "package.json", "src/index.js", "src/index.d.ts",
    "src/openapi.d.ts"]) {
    assert.ok(files.includes(name), `${name} is missing from the tarball: ${files.join(", ")}`);
  }
  const stray = files.filter((f) => !/^(README\.md|LICENSE|package\.json|src\/[\w.-]+\.(js|d\.ts))$/.test(f));
  assert.deepEqual(stray, [], "only the sources, README and LICENSE are published");
  const readme = readFileSync(new URL("../README.md", import.meta.url), "utf8");
  assert.match(readme, /^# agent-memory/);
  assert.match(readme, /Apache-2\.0/);
  const license = readFileSync(new URL("../LICENSE", import.meta.url), "utf8");
  assert.match(license, /Apache License\s+Version 2\.0/);
});

test("engines admits only Node versions that both import and require() the package", () => {
  assert.equal(pkg.engines.node, "^20.19.0 || >=22.12.0");
  const [major, minor] = process.versions.node.split(".").map(Number);
  const supported = (major === 20 && minor >= 19) || (major === 22 && minor >= 12) || major >= 23;
  assert.ok(supported, `this Node (${process.version}) is outside engines; the suite runs on a supported one`);
  assert.deepEqual(Object.keys(pkg.exports["."]), ["types", "default"]);
});

test("require() and import of the package give the same client", async () => {
  const require = createRequire(import.meta.url);
  const viaRequire = require("agent-memory"); // through package.json "exports", as a dependent resolves it
  const viaImport = await import("agent-memory");
  assert.equal(typeof viaRequire.AgentMemory, "function");
  assert.equal(viaRequire.AgentMemory, viaImport.AgentMemory);
  assert.equal(viaRequire.Spectron, viaImport.Spectron);
});

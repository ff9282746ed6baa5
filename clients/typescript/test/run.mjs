// `npm test`'s runner: node --test over every suite, one file at a time, with one run id (the
// suffix of this run's contexts). Its last line says whether the integration tests ran: a run
// whose service could not start skips them (test/support/service.js), and must not read as a
// whole green run. Under CI=true or AGENT_MEMORY_TS_REQUIRED they fail instead of skipping.
import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
import { existsSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const SUITES = ["test/unit/", "test/operations.test.js", "test/declarations.test.js", "test/drift.test.js", "test/package.test.js",
  "test/integration/"];
const root = fileURLToPath(new URL("..", import.meta.url));
const scratch = mkdtempSync(join(tmpdir(), "agent-memory-ts-run-"));
const skips = join(scratch, "skips.txt");
const runId = process.env.AGENT_MEMORY_TS_RUN_ID || randomBytes(4).toString("hex");

const result = spawnSync(process.execPath,
  ["--test", "--test-concurrency=1", "--test-reporter=spec", ...SUITES],
  { cwd: root, stdio: "inherit", env: { ...process.env, AGENT_MEMORY_TS_SKIPS: skips, AGENT_MEMORY_TS_RUN_ID: runId } });
const reasons = existsSync(skips) ? [...new Set(readFileSync(skips, "utf8").split("\n").filter(Boolean))] : [];
rmSync(scratch, { recursive: true, force: true });

const where = process.env.AGENT_MEMORY_URL ? `against ${process.env.AGENT_MEMORY_URL}` : "against a local service";
const code = result.status ?? 1;
if (reasons.length && code !== 0) {
  console.log(`integration tests FAILED: no service (${reasons.join("; ")}); CI or AGENT_MEMORY_TS_REQUIRED ` +
    "makes a missing service a failure: set AGENT_MEMORY_URL or AGENT_MEMORY_BIN, or run `make install`");
} else if (reasons.length) {
  console.log(`integration tests SKIPPED (${reasons.join("; ")}): set AGENT_MEMORY_URL, or AGENT_MEMORY_BIN, ` +
    "or run `make install` at the repository root; CI=true makes this a failure");
} else {
  console.log(`integration tests ran ${where} (contexts suffixed -${runId}-*); exit ${code}`);
}
process.exit(code);

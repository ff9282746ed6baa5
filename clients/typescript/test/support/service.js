// The service the integration tests run against.
//
// With AGENT_MEMORY_URL set, that service (a deployed stack included; AGENT_MEMORY_API_KEY is
// sent when set): it is not empty, so every test names its contexts through `service.context()`,
// which adds this run's random suffix. Otherwise the tests start the real local service
// (`agent-memory serve`) on a free port with a fresh data directory and the offline models:
// the executable is AGENT_MEMORY_BIN, else the repository's .venv/bin/agent-memory, else
// `agent-memory` on PATH; the repository's shared/ goes first on PYTHONPATH so a worktree's
// code is what runs.
//
// When no service can be had the tests skip with the reason, and `test/run.mjs` repeats it as
// the run's last line; under CI=true or AGENT_MEMORY_TS_REQUIRED (as `make ts-test` sets) they
// fail instead.
import { spawn } from "node:child_process";
import { randomBytes } from "node:crypto";
import { appendFileSync, existsSync, mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { delimiter, join } from "node:path";
import { fileURLToPath } from "node:url";

export const REPO = fileURLToPath(new URL("../../../../", import.meta.url));
const STARTUP_MS = Number(process.env.AGENT_MEMORY_TS_STARTUP_MS || 120_000);
// Settings that would point the service at real models or another store.
const CLEARED = ["OPENAI_API_KEY", "OPENAI_BASE_URL", "AGENT_MEMORY_CONFIG", "AGENT_MEMORY_STORE", "AGENT_MEMORY_SEARCH",
  "AGENT_MEMORY_DATA_DIR", "AWS_PROFILE", "AGENT_MEMORY_API_KEY", "AGENT_MEMORY_URL"];

const truthy = (value) => Boolean(value) && !["0", "false", "no"].includes(String(value).toLowerCase());
export const required = truthy(process.env.AGENT_MEMORY_TS_REQUIRED) || truthy(process.env.CI);
// One suffix per run (test/run.mjs passes it to every file; a file run alone draws its own).
const RUN_ID = process.env.AGENT_MEMORY_TS_RUN_ID || randomBytes(4).toString("hex");

function executable() {
  if (process.env.AGENT_MEMORY_BIN) return process.env.AGENT_MEMORY_BIN;
  const venv = join(REPO, ".venv", "bin", "agent-memory");
  return existsSync(venv) ? venv : "agent-memory";
}

function freePort() {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address();
      server.close(() => resolve(port));
    });
  });
}

/** `{url, external}` of the service AGENT_MEMORY_URL names once it answers /api/v1/health, or
 * `{skip: reason}`. */
async function externalService(url) {
  const base = url.replace(/\/+$/, "");
  try {
    const response = await fetch(`${base}/api/v1/health`, { signal: AbortSignal.timeout(15_000) });
    if (!response.ok) return { skip: `AGENT_MEMORY_URL=${base}: /api/v1/health answered ${response.status}` };
  } catch (err) {
    return { skip: `AGENT_MEMORY_URL=${base} does not answer: ${err.cause?.code || err.message}` };
  }
  return { url: base, external: true };
}

/** `{url, stop(), log()}` of a running service, or `{skip: reason}`. */
export async function startService() {
  const bin = executable();
  const port = await freePort();
  const dataDir = mkdtempSync(join(tmpdir(), "agent-memory-ts-"));
  const env = { ...process.env };
  for (const name of CLEARED) delete env[name];
  env.PYTHONPATH = [join(REPO, "shared"), process.env.PYTHONPATH].filter(Boolean).join(delimiter);
  let output = "";
  let exited = null;
  let child;
  try {
    child = spawn(bin, ["serve", "--host", "127.0.0.1", "--port", String(port), "--data-dir", dataDir],
      { env, stdio: ["ignore", "pipe", "pipe"] });
  } catch (err) {
    return { skip: `cannot start ${bin}: ${err.message}` };
  }
  const spawnError = new Promise((resolve) => child.once("error", (err) => resolve(err)));
  child.stdout.on("data", (d) => { output += d; });
  child.stderr.on("data", (d) => { output += d; });
  child.once("exit", (code, signal) => { exited = code ?? signal; });
  const url = `http://127.0.0.1:${port}`;
  const stop = async () => {
    if (exited === null) {
      const done = new Promise((resolve) => child.once("exit", resolve));
      child.kill("SIGTERM");
      const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
      await done;
      clearTimeout(timer);
    }
    rmSync(dataDir, { recursive: true, force: true });
  };
  const deadline = Date.now() + STARTUP_MS;
  while (Date.now() < deadline) {
    const failed = await Promise.race([spawnError, new Promise((r) => setTimeout(() => r(null), 200))]);
    if (failed) {
      rmSync(dataDir, { recursive: true, force: true });
      return { skip: `cannot start ${bin} (${failed.code || failed.message}); set AGENT_MEMORY_BIN or run make install` };
    }
    if (exited !== null) {
      await stop();
      return { skip: `${bin} serve exited (${exited}):\n${output.slice(-2000)}` };
    }
    try {
      const response = await fetch(`${url}/api/v1/health`);
      if (response.ok) return { url, stop, log: () => output };
    } catch { /* not listening yet */ }
  }
  await stop();
  return { skip: `${bin} serve did not answer /api/v1/health within ${STARTUP_MS} ms:\n${output.slice(-2000)}` };
}

/** The service for a test file: `before` sets `service.url` (AGENT_MEMORY_URL's service, else
 * a local one of its own), or skips (or fails when required) with the reason.
 * `service.context(name)` is `name` with this run's and this file's suffix. */
export function useService({ before, after }) {
  // Each file's own contexts too: a local service is the file's own, a shared one is not.
  const suffix = `${RUN_ID}-${randomBytes(2).toString("hex")}`;
  const service = { url: null, skip: null, external: false, runId: suffix,
    context: (name) => `${name}-${suffix}` };
  before(async () => {
    const started = process.env.AGENT_MEMORY_URL
      ? await externalService(process.env.AGENT_MEMORY_URL) : await startService();
    if (started.skip) {
      if (process.env.AGENT_MEMORY_TS_SKIPS) appendFileSync(process.env.AGENT_MEMORY_TS_SKIPS, `${started.skip.split("\n")[0]}\n`);
      if (required) {
        throw new Error(`the agent-memory service is required (CI or AGENT_MEMORY_TS_REQUIRED is set): ${started.skip}`);
      }
      service.skip = started.skip;
      console.log(`skipping the integration tests: ${started.skip}`);
      return;
    }
    Object.assign(service, started);
  });
  after(async () => { if (service.stop) await service.stop(); });
  return service;
}

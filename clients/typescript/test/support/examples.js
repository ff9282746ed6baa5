// Runs the spec's JavaScript examples (examples/spec) as child processes
// against a service from useService.
import { spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

const example = (name) => fileURLToPath(new URL(`../../examples/spec/${name}`, import.meta.url));
// Inside the package, so the example's `import ... from "agent-memory"` still resolves to it.
const RUN_DIR = fileURLToPath(new URL("../../.examples-run/", import.meta.url));

/** The example as written, but for its `context: "..."` literals, which become this run's
 * contexts (`service.context(name)`): a shared service already holds other runs' data. */
function runCopy(service, name) {
  const text = readFileSync(example(name), "utf8")
    .replace(/context: "([a-z0-9-]+)"/g, (_, ctx) => `context: "${service.context(ctx)}"`);
  mkdirSync(RUN_DIR, { recursive: true });
  const path = `${RUN_DIR}${service.runId}-${name}`;
  writeFileSync(path, text);
  return path;
}

/** Runs an example with AGENT_MEMORY_URL pointing at the service (and AGENT_MEMORY_API_KEY as
 * the spec's SPECTRON_API_KEY, when set); with `answers`, types each one after a "You: " prompt
 * appears (as a person at the terminal would). */
export function runExample(service, name, { answers = [] } = {}) {
  const script = runCopy(service, name);
  return new Promise((resolve, reject) => {
    const env = { ...process.env, AGENT_MEMORY_URL: service.url };
    delete env.SPECTRON_API_KEY;
    if (service.external && process.env.AGENT_MEMORY_API_KEY) env.SPECTRON_API_KEY = process.env.AGENT_MEMORY_API_KEY;
    else delete env.AGENT_MEMORY_API_KEY;
    const child = spawn(process.execPath, [script], { env, stdio: ["pipe", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    let prompts = 0;
    const queue = [...answers];
    child.stdout.on("data", (d) => {
      stdout += d;
      const seen = stdout.split("You: ").length - 1;
      while (prompts < seen) {
        prompts += 1;
        const next = queue.shift();
        if (next === undefined) child.stdin.end();
        else child.stdin.write(`${next}\n`);
      }
    });
    child.stderr.on("data", (d) => { stderr += d; });
    child.once("error", (err) => { rmSync(script, { force: true }); reject(err); });
    child.once("exit", (code) => { rmSync(script, { force: true }); resolve({ code, stdout, stderr }); });
  });
}

/** Skips the test when the service could not start (useService says why). */
export function skipWithout(service, t) {
  if (service.skip) t.skip(service.skip);
  return Boolean(service.skip);
}

// Runs the spec's JavaScript examples (examples/spec) as child processes
// against a service started by useService.
import { spawn } from "node:child_process";
import { fileURLToPath } from "node:url";

const example = (name) => fileURLToPath(new URL(`../../examples/spec/${name}`, import.meta.url));

/** Runs an example with AGENT_MEMORY_URL pointing at the service; with `answers`, types
 * each one after a "You: " prompt appears (as a person at the terminal would). */
export function runExample(service, name, { answers = [] } = {}) {
  return new Promise((resolve, reject) => {
    const env = { ...process.env, AGENT_MEMORY_URL: service.url };
    delete env.SPECTRON_API_KEY;
    delete env.AGENT_MEMORY_API_KEY;
    const child = spawn(process.execPath, [example(name)], { env, stdio: ["pipe", "pipe", "pipe"] });
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
    child.once("error", reject);
    child.once("exit", (code) => resolve({ code, stdout, stderr }));
  });
}

/** Skips the test when the service could not start (useService says why). */
export function skipWithout(service, t) {
  if (service.skip) t.skip(service.skip);
  return Boolean(service.skip);
}

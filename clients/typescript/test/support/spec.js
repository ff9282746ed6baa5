// openapi.yaml's operations (operationId, method, path), read without a YAML library: the
// file's `paths:` block is two-space indented (path, then method, then its fields).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";

export const OPENAPI = fileURLToPath(new URL("../../../../openapi.yaml", import.meta.url));

export function specOperations(text = readFileSync(OPENAPI, "utf8")) {
  const out = {};
  let inPaths = false;
  let path = null;
  let method = null;
  for (const line of text.split(/\r?\n/)) {
    if (/^\S/.test(line)) {
      inPaths = /^paths:\s*$/.test(line);
      continue;
    }
    if (!inPaths) continue;
    let m = /^ {2}(\/\S*):\s*$/.exec(line);
    if (m) { [, path] = m; method = null; continue; }
    m = /^ {4}(get|put|post|delete|patch|head|options):\s*$/.exec(line);
    if (m) { method = m[1].toUpperCase(); continue; }
    m = /^ {6}operationId:\s*["']?([A-Za-z0-9_]+)["']?\s*$/.exec(line);
    if (m && path && method) out[m[1]] = [method, path];
  }
  return out;
}

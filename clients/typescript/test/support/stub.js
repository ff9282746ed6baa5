// A local HTTP stub: each request goes to `handler(req, body)`, which answers
// `{status, headers, body}` (body: an object is sent as JSON, a string or an array of
// string chunks as written); every request is recorded.
import http from "node:http";

export async function startStub(handler) {
  const requests = [];
  const server = http.createServer(async (req, res) => {
    const chunks = [];
    for await (const chunk of req) chunks.push(chunk);
    const raw = Buffer.concat(chunks).toString("utf8");
    let json;
    try { json = raw ? JSON.parse(raw) : undefined; } catch { json = undefined; }
    const url = new URL(req.url, "http://stub");
    const record = { method: req.method, path: url.pathname, query: Object.fromEntries(url.searchParams),
      headers: req.headers, raw, json };
    requests.push(record);
    const answer = (await handler(record, requests)) || { status: 200, body: {} };
    const headers = { ...(answer.headers || {}) };
    let { body } = answer;
    if (body !== undefined && typeof body !== "string" && !Array.isArray(body)) {
      headers["content-type"] ??= "application/json";
      body = JSON.stringify(body);
    }
    res.writeHead(answer.status ?? 200, headers);
    if (Array.isArray(body)) {
      for (const part of body) {
        res.write(part);
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    } else {
      res.end(body ?? "");
    }
  });
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () => new Promise((resolve) => { server.closeAllConnections?.(); server.close(resolve); }),
  };
}

/** A sleep that records its waits and returns at once. */
export function recordingSleep() {
  const waits = [];
  const sleep = async (ms) => { waits.push(ms); };
  sleep.waits = waits;
  return sleep;
}

export function problem(status, title, extra = {}) {
  return { type: "about:blank", title, status, detail: `${title} (stub)`, ...extra };
}

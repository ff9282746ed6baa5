// Compiled by `npm run typecheck` (tsc --noEmit): the spec's flows against index.d.ts, so a
// declaration that stops matching them fails the check. Never run.
import {
  AgentMemory, ApiError, Memory, RateLimitError, Spectron, ValidationError,
  type ChatEvent, type ChatResponse, type MemoryItem, type Schema,
} from "agent-memory";

declare const apiKey: string | undefined;
declare const ui: { addFact(a: unknown): void; animateUpdate(key: string, change: { old: string; new: string }): void };

export async function spec(): Promise<void> {
  const memory = new Spectron({ context: "acme-prod", apiKey });
  const session = await memory.sessions.create({ scopes: ["org/acme/user/alice"] });
  const reply = await memory.chat("What do you know about me?", { sessionId: session.id });
  const text: string = reply.reply;
  const corrections = reply.memoryUpdates.corrections;
  for (const c of corrections) {
    const line: string = `${c.previous.value} → ${c.current.value} (${c.oldValue} → ${c.newValue})`;
    void line;
  }
  await session.close();
  void text;

  const state = await memory.state({ limit: 200 });
  const attrs: Schema<"StateCategory">["attributes"] = state.identity.attributes;
  void attrs;
  void state.instructions;
  void state.unknowns;

  const result = await memory.remember("I moved to Berlin last month", { sessionId: session.id });
  for (const attr of result.extraction?.attributes ?? []) ui.addFact(attr);
  for (const c of result.extraction?.corrections ?? []) ui.animateUpdate(c.key, { old: c.oldValue, new: c.newValue });

  const profile = await memory.profile();
  void profile;
}

export async function sdk(): Promise<void> {
  const memory = new AgentMemory({ context: "acme", baseUrl: "http://127.0.0.1:8080", partition: "p1" });
  const stream = await memory.chat("Where do I live?", { stream: true });
  for await (const event of stream) {
    const e: ChatEvent = event;
    if (e.type === "delta") void e.delta.toUpperCase();
    else { const done: ChatResponse = e.response; void done.citations; }
  }
  const hits = await memory.recall("where", { k: 5, asOf: "2026-01-01T00:00:00Z", onBehalfOf: "user:bob" });
  void hits.hits;
  for await (const entity of memory.entities.list({ type: "person", pageSize: 50 })) void entity.name;
  const history = await memory.entities.history("person", "user", "location");
  void history[0]?.value;
  const detail = await memory.entities.get("person", "user", { asOf: "2026-03-01T00:00:00Z" });
  void detail;
  const doc = await memory.documents.upload("# Handbook", { title: "Team handbook", format: "markdown" });
  const ready = await memory.documents.waitReady(doc.id, { onProgress: (d) => void d.chunksDone });
  void ready.status;
  const thread = new Memory("customer-42", { client: memory }).thread("ticket-8492");
  const ref = await thread.append("Sign-in still fails.", { speaker: "customer", channel: "email" });
  void ref.replayed;
  const items: MemoryItem[] = await thread.context("What was tried?", { lastNTurns: 8 });
  void items.map((item) => item.text);
  const turns = await memory.threads.turns("ticket-8492", { afterIndex: 1 }).toArray();
  void turns;
  await memory.remember("x", { idempotencyKey: "k-1", signal: AbortSignal.timeout(1000) });
  try {
    await memory.state({ limit: 9999 });
  } catch (err) {
    if (err instanceof ValidationError) void err.field;
    if (err instanceof RateLimitError) void err.retryAfter;
    if (err instanceof ApiError) void [err.status, err.code, err.title, err.detail, err.problem];
  }
}

// A document query's hits are typed to the chunk, its document and the graph evidence.
export async function documentQuery(memory: AgentMemory): Promise<void> {
  const found = await memory.documents.query("refund policy", { k: 3, expandGraph: true });
  for (const hit of found.results) {
    const text: string = hit.chunk.text;
    const section: string | null | undefined = hit.chunk.section;
    const id: string = hit.document.id;
    const size: number | undefined = "sizeBytes" in hit.document ? hit.document.sizeBytes : undefined;
    const via: string[] = (hit.graphEvidence ?? []).map((e) => `${e.factKind} ${e.fact} via ${e.via}`);
    // @ts-expect-error a chunk has no charStart in a query hit
    void hit.chunk.charStart;
    void text; void section; void id; void size; void via;
  }
}

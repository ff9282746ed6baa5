// state-and-diffs.md's JavaScript examples, as written: only the import names this package.
// The harness lines (marked) give the examples the `ui` and `sessionId` they assume and
// print what they produced as JSON for the test to read.
import { Spectron } from "agent-memory";

const memory = new Spectron({ context: "acme-prod",
    apiKey: process.env.SPECTRON_API_KEY });

// --- harness ---
const seen = { added: [], updated: [] };
const ui = {
    addFact: (attr) => seen.added.push(attr),
    animateUpdate: (key, change) => seen.updated.push({ key, ...change }),
};
const { id: sessionId } = await memory.sessions.create({ scopes: ["org/acme/user/alice"] });
await memory.remember("I live in London.", { sessionId });
// --- end harness ---

const result = await memory.remember("I moved to Berlin last month", { sessionId });

for (const attr of result.extraction.attributes) {
    ui.addFact(attr);
}

for (const c of result.extraction.corrections) {
    ui.animateUpdate(c.key, { old: c.oldValue, new: c.newValue });
}

{
const state = await memory.state();

console.log(state.identity.attributes);
console.log(state.instructions);
console.log(state.unknowns);
}

const profile = await memory.profile();

// --- harness ---
const state = await memory.state({ limit: 200 });
console.log("RESULT " + JSON.stringify({ seen, state, profile }));

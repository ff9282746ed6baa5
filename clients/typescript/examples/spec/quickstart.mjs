// chat-sessions.md's first JavaScript example, as written: only the import names this package.
import { Spectron } from "agent-memory";

const memory = new Spectron({ context: "acme-prod",
    apiKey: process.env.SPECTRON_API_KEY });
const session = await memory.sessions.create({ scopes: ["org/acme/user/alice"] });

const reply = await memory.chat("What do you know about me?", { sessionId: session.id });

console.log(reply.reply);
console.log(reply.memoryUpdates);

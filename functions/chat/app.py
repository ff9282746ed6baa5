"""Chat area: POST /chat (the whole loop), GET /traces (recent), /traces/stats and /traces/{id}.

``stream: true`` answers text/event-stream. The local server and, on AWS, the function's URL
(our runtime loop, agent_memory/http/lambda_runtime.py) stream frames as they are produced (the
handler hands them an iterator when the context ``supports_streaming``); the HTTP API buffers
Lambda responses, so there the same frames arrive together when the reply is complete
(docs/deploying.md, "Streaming chat")."""

from agent_memory.http import api as http
from agent_memory.models.requests import ChatRequest
from agent_memory.observability import instrumented
from agent_memory.presenters import chat as present
from agent_memory.runtime import get_runtime

app = http.make_resolver()
_stream = http.StreamSlot()


@app.post("/api/v1/<context_id>/chat")
def chat(context_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    req = http.body(app, ChatRequest, max_bytes=rt.settings.limits.chat_message_bytes * 2)
    if not req.stream:
        reply = rt.chat.chat(ctx, req)
        return http.answer(present.reply(reply), reply.degraded)
    # The frames outlive this handler: they keep its in-flight slot and deadline.
    events = rt.chat.chat_stream(ctx, req)
    _stream.hold(http.sse_stream(present.stream(events)))
    return http.sse_response(events.degraded)


# Registered before /traces/<trace_id>, which would otherwise take "stats" for an id.
@app.get("/api/v1/<context_id>/traces")
def list_traces(context_id: str):
    ctx = http.context(app, context_id)
    return present.trace_list(get_runtime().traces.recent(ctx, http.query_int(app, "limit", 50, maximum=500)))


@app.get("/api/v1/<context_id>/traces/stats")
def trace_stats(context_id: str):
    ctx = http.context(app, context_id)
    window = http.query_int(app, "windowHours", 24, maximum=720)
    return present.trace_stats(get_runtime().traces.stats(ctx, window))


@app.get("/api/v1/<context_id>/traces/<trace_id>")
def get_trace(context_id: str, trace_id: str):
    ctx = http.context(app, context_id)
    return get_runtime().traces.get(ctx, trace_id)


@instrumented
def lambda_handler(event, lambda_context):
    return _stream.resolve(app, event, lambda_context)

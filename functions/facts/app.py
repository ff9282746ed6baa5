"""Facts area: POST /facts and /facts/batch (store turns, extract and reconcile facts), and
POST /forget (semantic soft delete, ``agent_memory.services.facts.forget``)."""

from agent_memory.http import api as http
from agent_memory.models.reads import ForgetRequest
from agent_memory.models.requests import WriteFactsBatchRequest, WriteFactsRequest
from agent_memory.observability import instrumented
from agent_memory.presenters import facts
from agent_memory.runtime import get_runtime

app = http.make_resolver()


@app.post("/api/v1/<context_id>/facts")
def write_facts(context_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    req = ctx.scoped(http.body(app, WriteFactsRequest, max_bytes=rt.settings.limits.facts_text_bytes * 2))
    return http.idempotent(app, ctx, "facts", req, lambda: facts.write(rt.facts.write(ctx, req)))


@app.post("/api/v1/<context_id>/facts/batch")
def write_facts_batch(context_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    req = ctx.scoped(http.body(app, WriteFactsBatchRequest, max_bytes=rt.settings.limits.facts_text_bytes * 8))
    return http.idempotent(app, ctx, "facts-batch", req, lambda: facts.write_batch(rt.facts.write_batch(ctx, req)))



@app.post("/api/v1/<context_id>/forget")
def forget(context_id: str):
    # Not idempotency-keyed on purpose: a stored reply would keep the forgotten text.
    ctx = http.context(app, context_id)
    req = http.body(app, ForgetRequest)
    return facts.forget(get_runtime().forget.forget(ctx, req))


@instrumented
def lambda_handler(event, lambda_context):
    return app.resolve(event, lambda_context)

"""Facts area: POST /facts (store a turn, extract and reconcile facts)."""

from agent_memory import http
from agent_memory.models.requests import WriteFactsRequest
from agent_memory.runtime import get_runtime

app = http.make_resolver()


@app.post("/api/v1/<context_id>/facts")
def write_facts(context_id: str):
    ctx = http.context(app, context_id)
    limits = get_runtime().settings.limits
    req = http.body(app, WriteFactsRequest, max_bytes=limits.facts_text_bytes + 64 * 1024)
    return get_runtime().facts.write(ctx, req)


def lambda_handler(event, context):
    return app.resolve(event, context)

"""Recall area: POST /query (ranked hits), /context and /sessions/{id}/context (formatted,
delimited prompt context). Retrieval lives in ``agent_memory.services.retrieval.retrieval_service``, which
ranks through ``agent_memory.ranking``; formatting in ``agent_memory.services.retrieval.context_format``."""

from agent_memory.http import api as http
from agent_memory.models.retrieval import ContextRequest, QueryRequest, SessionContextRequest
from agent_memory.observability import instrumented
from agent_memory.presenters import retrieval
from agent_memory.runtime import get_runtime

app = http.make_resolver()

BODY_CAP = 64 * 1024


@app.post("/api/v1/<context_id>/query")
def query(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, QueryRequest, max_bytes=BODY_CAP)
    result = get_runtime().retrieval.retrieve(ctx, req.query, k=req.k, mode=req.mode, **req.filters())
    return http.answer(retrieval.query(result), result.degraded)


@app.post("/api/v1/<context_id>/context")
def context(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, ContextRequest, max_bytes=BODY_CAP)
    result = get_runtime().prompt_context.context(ctx, req.query, k=req.k, subject=req.subject, **req.filters())
    return http.answer(retrieval.context(result), result.degraded)


@app.post("/api/v1/<context_id>/sessions/<session_id>/context")
def session_context(context_id: str, session_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, SessionContextRequest, max_bytes=BODY_CAP)
    result = get_runtime().prompt_context.session_context(ctx, http.path_id(session_id), req.query, k=req.k)
    return http.answer(retrieval.context(result), result.degraded)


@instrumented
def lambda_handler(event, lambda_context):
    return app.resolve(event, lambda_context)

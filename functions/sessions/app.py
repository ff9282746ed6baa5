"""Sessions area: health, the API's own description (openapi.json and .yaml), sessions, a
session's raw turns."""

from agent_memory.access import grants
from agent_memory.http import api as http
from agent_memory.models.requests import CreateSessionRequest
from agent_memory.models.threads import check_metadata
from agent_memory.observability import instrumented
from agent_memory.presenters import catalogue as catalogue_wire
from agent_memory.presenters import sessions as sessions_wire
from agent_memory.runtime import get_runtime

app = http.make_resolver()


@app.get("/api/v1/health")
def health():
    # No key needed, even where keys are required (openapi.yaml declares no security): a load
    # balancer or uptime probe holds none. The answer names the deployment's backends only,
    # nothing of any tenant, context or caller.
    settings = get_runtime().settings
    return {"status": "ok", "store": settings.store, "search": settings.search}


@app.get("/api/v1/openapi.json")
def openapi_json():
    http.authenticate(app)  # a deployed stack answers no anonymous caller (health aside)
    return http.openapi_response("json")


@app.get("/api/v1/openapi.yaml")
def openapi_yaml():
    http.authenticate(app)
    return http.openapi_response("yaml")


@app.get("/api/v1/contexts")
def list_contexts():
    caller = http.authenticate(app, grants.READ)
    limit = http.page_limit(app)
    return catalogue_wire.context_page(get_runtime().catalogue.list_contexts(
        bound_contexts=caller.contexts if caller is not None else None,
        bound_partitions=caller.partitions if caller is not None else None,
        limit=limit, page_cursor=http.query_str(app, "cursor"), unreadable=http.unreadable_contexts(caller)))


@app.get("/api/v1/<context_id>/sessions")
def list_sessions(context_id: str):
    ctx = http.context(app, context_id)
    limit = http.page_limit(app)
    return sessions_wire.session_page(get_runtime().catalogue.list_sessions(ctx, limit, http.query_str(app, "cursor")))


@app.post("/api/v1/<context_id>/sessions")
def create_session(context_id: str):
    ctx = http.context(app, context_id)
    req = ctx.scoped(http.body(app, CreateSessionRequest, optional=True))
    check_metadata(req.metadata)
    session = get_runtime().sessions.create(ctx, req.scopes, req.labels, req.metadata)
    return http.json_response(sessions_wire.session_wire(session), 201)


@app.post("/api/v1/<context_id>/sessions/<session_id>/close")
def close_session(context_id: str, session_id: str):
    ctx = http.context(app, context_id)
    return sessions_wire.session_wire(get_runtime().sessions.close(ctx, http.path_id(session_id)))


@app.delete("/api/v1/<context_id>/sessions/<session_id>")
def delete_session(context_id: str, session_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    with rt.receipts.collect(ctx, "session.delete") as erasure:
        rt.sessions.delete(ctx, http.path_id(session_id))
    return http.receipted_empty(erasure.receipt)


@app.get("/api/v1/<context_id>/sessions/<session_id>/turns")
def list_session_turns(context_id: str, session_id: str):
    ctx = http.context(app, context_id)
    limit = http.page_limit(app)
    offset = http.query_int(app, "offset", 0, minimum=0)
    return sessions_wire.turn_page(get_runtime().sessions.list_turns(ctx, http.path_id(session_id), limit, http.query_str(app, "cursor"),
                                                                     offset))


@instrumented
def lambda_handler(event, lambda_context):
    return app.resolve(event, lambda_context)

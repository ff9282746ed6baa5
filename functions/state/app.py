"""State area: GET /state (a bounded snapshot of current memory), GET /profile, the
admin's GET /audit (admin bypasses and delegated calls, newest first), and POST /mcp (the
service's tools for an MCP host with the caller's own key: ``agent_memory.http.mcp_route``).

Shapes and rules: ``agent_memory.services.facts.state`` and ``agent_memory.services.facts.profile``."""

from agent_memory.http import api as http
from agent_memory.http import mcp_route
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.observability import instrumented
from agent_memory.presenters import facts, paging
from agent_memory.runtime import get_runtime

app = http.make_resolver()

STATE_LIMIT_DEFAULT = 100
STATE_LIMIT_MAX = 500  # a larger limit is capped to this, as the spec says (never a 400)
AUDIT_KINDS = ("decision", "retrieval", "response")  # the Spectron client's row kinds


@app.get("/api/v1/<context_id>/state")
def get_state(context_id: str):
    ctx = http.context(app, context_id)
    limit = min(http.query_int(app, "limit", STATE_LIMIT_DEFAULT), STATE_LIMIT_MAX)
    return facts.state(get_runtime().state.state(ctx, limit))


@app.get("/api/v1/<context_id>/profile")
def get_profile(context_id: str):
    ctx = http.context(app, context_id)
    limit = min(http.query_int(app, "limit", STATE_LIMIT_DEFAULT), STATE_LIMIT_MAX)
    return facts.profile(get_runtime().state.profile(ctx, limit))


@app.get("/api/v1/<context_id>/audit")
def get_audit(context_id: str):
    # Admin only (``agent_memory.access.grants.required_verb``): admin bypasses and delegated calls.
    ctx = http.context(app, context_id)
    rt = get_runtime()
    if http.query_text(app, "key") is not None:
        raise InvalidRequest("key: audit records name the principal, not the key; filter by principal",
                             field="key")
    kind = http.query_choice(app, "kind", AUDIT_KINDS)
    return paging.audit_page(rt.audit.page(ctx, rt.cursor_secret, http.page_limit(app),
                                           http.query_str(app, "cursor"), principal=http.query_text(app, "principal"),
                                           since=http.query_instant(app, "since"),
                                           until=http.query_instant(app, "until"),
                                           kinds=None if kind is None else [kind]))


@app.post("/api/v1/<context_id>/mcp")
def post_mcp(context_id: str):
    # The caller is resolved (401/403 answered) before this, like every context route's; each
    # tool call is then a REST request of its own with the same key.
    http.context(app, context_id)
    event = app.current_event
    status, headers, body = mcp_route.answer(
        context_id, "POST", event.raw_path, dict(event.headers or {}), http.raw_body(app),
        invoke_api=getattr(app.lambda_context, "invoke_api", None), domain=event.request_context.domain_name)
    return http.raw_response(status, headers, body)


@instrumented
def lambda_handler(event, lambda_context):
    return app.resolve(event, lambda_context)

"""Threads area: ordered conversation turns, their reader lists, and prompt context.

Behaviour (indexes, reader lists, entity filtering, projection lag, size budgets) is
documented in ``agent_memory.services.conversation.threads``; this module only parses and answers.
Turn-bearing responses are written with ``ensure_ascii=False``: escaping every non-ASCII
character would triple the size of a 1 MiB turn against Lambda's 6 MB response limit.
"""

from urllib.parse import unquote

from agent_memory.http import api as http
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.threads import AppendThreadTurnRequest, SetThreadAclRequest, ThreadContextRequest
from agent_memory.observability import instrumented
from agent_memory.presenters import threads as threads_wire
from agent_memory.runtime import get_runtime

app = http.make_resolver()

BASE = "/api/v1/<context_id>/threads/<thread_id>"


def _json(body, status: int = 200, headers: dict[str, str] | None = None):
    return http.json_response(body, status, headers, ensure_ascii=False)


def _thread(raw: str) -> str:
    """The thread id as the client meant it: the route matches the raw path, so ``a%3Ab``
    arrives still percent-encoded (``a:b``)."""
    return unquote(raw)


def _index(raw: str | None, name: str) -> int | None:
    if raw is None:
        return None
    if not (raw.isascii() and raw.isdigit()) or len(raw) > 12:
        raise InvalidRequest(f"{name} must be a non-negative integer", field=name)
    return int(raw)


def _append_body_cap() -> int:
    # JSON may escape each character of the text as up to 12 bytes per 4 UTF-8 bytes (\\uXXXX
    # surrogate pairs): 3x the text cap, plus room for metadata and reader lists.
    return 3 * get_runtime().settings.limits.thread_turn_bytes + 64 * 1024


@app.get("/api/v1/<context_id>/threads")
def list_threads(context_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().catalogue.list_threads(ctx, http.page_limit(app), http.query_str(app, "cursor"))
    return _json(threads_wire.thread_page(page))


@app.post(f"{BASE}/turns")
def append_turn(context_id: str, thread_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, AppendThreadTurnRequest, max_bytes=_append_body_cap())
    threads, tid = get_runtime().threads, _thread(thread_id)
    threads.check_append(tid, req)  # input errors answer before the key is looked up
    return http.idempotent(app, ctx, "thread-append", req.fingerprint_payload(tid),
                           lambda: threads_wire.appended(threads.append(ctx, tid, req)), 201,
                           body_key=req.idempotency_key, refs=threads_wire.appended_refs, ensure_ascii=False)


@app.get(f"{BASE}/turns")
def list_turns(context_id: str, thread_id: str):
    ctx = http.context(app, context_id)
    return _json(threads_wire.turn_page(get_runtime().threads.list_turns(
        ctx, _thread(thread_id), limit=http.page_limit(app), page_cursor=http.query_str(app, "cursor"),
        after_index=_index(http.query_text(app, "after_index"), "after_index"),
        entity_id=http.query_text(app, "entity_id"))))


@app.get(f"{BASE}/turns/<turn_index>")
def get_turn(context_id: str, thread_id: str, turn_index: str):
    ctx = http.context(app, context_id)
    turn = get_runtime().threads.get_turn(ctx, _thread(thread_id), _index(turn_index, "turn_index"))
    return _json(threads_wire.turn_wire(turn))


@app.post(f"{BASE}/context")
def thread_context(context_id: str, thread_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, ThreadContextRequest, max_bytes=64 * 1024)
    return _json(threads_wire.recalled_turns(get_runtime().threads.recall_turns(ctx, _thread(thread_id), req)))


@app.get(BASE)
def get_thread(context_id: str, thread_id: str):
    ctx = http.context(app, context_id)
    return _json(threads_wire.thread_wire(get_runtime().threads.get_thread(ctx, _thread(thread_id))))


@app.put(f"{BASE}/acl")
def set_acl(context_id: str, thread_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, SetThreadAclRequest, max_bytes=64 * 1024)
    return _json(threads_wire.thread_wire(get_runtime().threads.set_acl(ctx, _thread(thread_id), req)))


@instrumented
def lambda_handler(event, lambda_context):
    return app.resolve(event, lambda_context)

"""Entities area: entities (list, read, asOf, soft delete), attribute history, the paged
collections (attributes, relations, actions, instructions, uncertainty) with uncertainty
resolution, one fact by id (read, correct, delete), and one object by reference (inspect).
Behaviour: ``agent_memory.services.facts.entities``, ``.collections``, ``.edits`` and ``.inspect``."""

from agent_memory.http import api as http
from agent_memory.models.reads import CorrectFactRequest, ResolveUncertaintyRequest
from agent_memory.observability import instrumented
from agent_memory.presenters import facts
from agent_memory.runtime import get_runtime
from agent_memory.services.facts.edits import CORRECTABLE, EDITABLE
from agent_memory.services.facts.entities import entity_ref, parse_entity_param
from agent_memory.services.facts.inspect import View, parse_ref

app = http.make_resolver()

BASE = "/api/v1/<context_id>"
ENTITY = f"{BASE}/entities/<type>/<name>"
DETAIL_LIMIT_DEFAULT = 500
DETAIL_LIMIT_MAX = 1000


def _count() -> bool:
    return bool(http.query_bool(app, "count"))


@app.get(f"{BASE}/entities")
def list_entities(context_id: str):
    ctx = http.context(app, context_id)
    return facts.page(get_runtime().entities.list(ctx, http.query_text(app, "type"), http.page_limit(app),
                                                   http.query_str(app, "cursor"), _count()), "entities")


@app.get(ENTITY)
def get_entity(context_id: str, type: str, name: str):
    ctx = http.context(app, context_id)
    limit = http.query_int(app, "limit", DETAIL_LIMIT_DEFAULT, maximum=DETAIL_LIMIT_MAX)
    return facts.entity_view(get_runtime().entities.get(ctx, entity_ref(type, name), http.query_instant(app, "asOf"),
                                                         limit))


@app.delete(ENTITY)
def delete_entity(context_id: str, type: str, name: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    with rt.receipts.collect(ctx, "entity.delete", purge=False) as erasure:
        rt.entities.delete(ctx, entity_ref(type, name))
    return http.receipted_empty(erasure.receipt)


@app.get(f"{ENTITY}/history")
def entity_history(context_id: str, type: str, name: str):
    ctx = http.context(app, context_id)
    return facts.page(get_runtime().entities.history_all(ctx, entity_ref(type, name), http.page_limit(app),
                                                          http.query_str(app, "cursor"), _count()), "history")


@app.get(f"{ENTITY}/history/<key>")
def attribute_history(context_id: str, type: str, name: str, key: str):
    ctx = http.context(app, context_id)
    return facts.history(get_runtime().entities.history(ctx, entity_ref(type, name), key))


@app.get(f"{BASE}/attributes")
def list_attributes(context_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().collections.attributes(
        ctx, entity=parse_entity_param(http.query_text(app, "entity"), "entity"), key=http.query_text(app, "key"),
        limit=http.page_limit(app), page_cursor=http.query_str(app, "cursor"), with_total=_count())
    return facts.page(page)


@app.get(f"{BASE}/relations")
def list_relations(context_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().collections.relations(
        ctx, src=parse_entity_param(http.query_text(app, "src"), "src"),
        dst=parse_entity_param(http.query_text(app, "dst"), "dst"), label=http.query_text(app, "label"),
        limit=http.page_limit(app), page_cursor=http.query_str(app, "cursor"), with_total=_count())
    return facts.page(page)


@app.get(f"{BASE}/actions")
def list_actions(context_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().collections.actions(
        ctx, actor=parse_entity_param(http.query_text(app, "actor"), "actor"), verb=http.query_text(app, "verb"),
        since=http.query_instant(app, "since"), until=http.query_instant(app, "until"),
        limit=http.page_limit(app), page_cursor=http.query_str(app, "cursor"), with_total=_count())
    return facts.page(page)


@app.get(f"{BASE}/instructions")
def list_instructions(context_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().collections.instructions(ctx, limit=http.page_limit(app),
                                                  page_cursor=http.query_str(app, "cursor"), with_total=_count())
    return facts.page(page)


# --- one fact by id (services/facts/edits.py) ---------------------------------------------


def _fact_route(collection: str) -> str:
    return f"{BASE}/{collection}/<fact_id>"


def _get_fact(context_id: str, collection: str, fact_id: str):
    ctx = http.context(app, context_id)
    return facts.record_wire(get_runtime().fact_edits.get(ctx, EDITABLE[collection], fact_id))


def _delete_fact(context_id: str, collection: str, fact_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    purge = bool(http.query_bool(app, "purge"))
    with rt.receipts.collect(ctx, "fact.delete", purge=purge) as erasure:
        outcome = rt.fact_edits.delete(ctx, EDITABLE[collection], fact_id, purge=purge)
    return facts.forget(outcome, erasure.receipt)


def _correct_fact(context_id: str, collection: str, fact_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, CorrectFactRequest)
    kind = EDITABLE[collection]
    # The id is part of what makes two corrections "the same" under one Idempotency-Key.
    payload = {"id": fact_id, **req.model_dump(mode="json")}
    return http.idempotent(app, ctx, f"correct-{kind}", payload,
                           lambda: facts.corrected(get_runtime().fact_edits.correct(ctx, kind, fact_id, req)))


for _collection in EDITABLE:
    _route = _fact_route(_collection)
    app.get(_route)(lambda context_id, fact_id, c=_collection: _get_fact(context_id, c, fact_id))
    app.delete(_route)(lambda context_id, fact_id, c=_collection: _delete_fact(context_id, c, fact_id))
    if EDITABLE[_collection] in CORRECTABLE:
        app.patch(_route)(lambda context_id, fact_id, c=_collection: _correct_fact(context_id, c, fact_id))


@app.get(f"{BASE}/uncertainty")
def list_uncertainty(context_id: str):
    ctx = http.context(app, context_id)
    page = get_runtime().collections.uncertainties(
        ctx, entity=parse_entity_param(http.query_text(app, "entity"), "entity"),
        resolved=http.query_bool(app, "resolved"), limit=http.page_limit(app),
        page_cursor=http.query_str(app, "cursor"), with_total=_count())
    return facts.page(page)


@app.post(f"{BASE}/uncertainty/<uncertainty_id>/resolve")
def resolve_uncertainty(context_id: str, uncertainty_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, ResolveUncertaintyRequest)
    return facts.resolved_uncertainty(get_runtime().collections.resolve(ctx, uncertainty_id, req))


@app.get(f"{BASE}/inspect")
def inspect(context_id: str):
    ctx = http.context(app, context_id)
    ref = parse_ref(http.query_text(app, "ref"))
    view = View.of(http.query_instant(app, "asOf"), http.query_instant(app, "atInstant"),
                   http.query_instant(app, "validFrom"), http.query_instant(app, "validUntil"))
    return facts.inspection(get_runtime().inspector.inspect(ctx, ref, view))


@instrumented
def lambda_handler(event, lambda_context):
    return app.resolve(event, lambda_context)

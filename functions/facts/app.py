"""Facts area: POST /facts and /facts/batch (store turns, extract and reconcile facts),
POST /forget (semantic soft delete, ``agent_memory.services.facts.forget``), erasure receipts
(GET /receipts/{id}, POST /receipts/{id}/verify: ``services.operations.receipts``), and the
memory-care verbs: POST /consolidate, /reflect, /elaborate, /lifecycle/decay,
/lifecycle/expire and /fsck (``agent_memory.services.care``, docs/memory-care.md).

The stack's ``LifecycleSchedule`` (template.yaml, off by default) also invokes it with
``{"care": "lifecycle"}``: decay and expire for every context and partition of the tenant
(``services/care/schedule.py``, the routes' use cases), within the invocation's time."""

import logging
import random

from agent_memory.http import api as http
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.care import (
    ConsolidateRequest,
    ElaborateRequest,
    ExpireRequest,
    FsckRequest,
    ReflectRequest,
)
from agent_memory.models.reads import ForgetRequest
from agent_memory.models.requests import WriteFactsBatchRequest, WriteFactsRequest
from agent_memory.observability import count, instrumented
from agent_memory.presenters import care, facts
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
    rt = get_runtime()
    # A dry run previews the receipt (same shape, nothing stored); a forget stores it.
    with (rt.receipts.preview(ctx, "forget", purge=req.purge) if req.dry_run
          else rt.receipts.collect(ctx, "forget", purge=req.purge)) as erasure:
        outcome = rt.forget.forget(ctx, req)
    return facts.forget(outcome, erasure.receipt)


@app.get("/api/v1/<context_id>/receipts/<receipt_id>")
def get_receipt(context_id: str, receipt_id: str):
    ctx = http.context(app, context_id)
    return get_runtime().receipts.get(ctx, http.path_id(receipt_id))


@app.post("/api/v1/<context_id>/receipts/<receipt_id>/verify")
def verify_receipt(context_id: str, receipt_id: str):
    ctx = http.context(app, context_id)
    return get_runtime().receipts.verify(ctx, http.path_id(receipt_id))


# --- memory care ----------------------------------------------------------------------------


def _at_most(value: int | None, cap: int, field: str) -> None:
    if value is not None and value > cap:
        raise InvalidRequest(f"{field}: at most {cap} (this deployment's limit)", field=field)


@app.post("/api/v1/<context_id>/consolidate")
def consolidate(context_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    req = http.body(app, ConsolidateRequest, optional=True)
    _at_most(req.fact_limit, rt.settings.limits.consolidate_fact_cap, "factLimit")
    _at_most(req.observation_limit, rt.settings.limits.consolidate_observation_cap, "observationLimit")
    if req.dry_run:
        http.idempotency_key(app)  # checked though unused: the route documents it
        return care.consolidated(rt.consolidation.consolidate(ctx, req))
    return http.idempotent(app, ctx, "consolidate", req, lambda: care.consolidated(rt.consolidation.consolidate(ctx, req)))


@app.post("/api/v1/<context_id>/reflect")
def reflect(context_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    req = http.body(app, ReflectRequest)
    if not req.persist:
        http.idempotency_key(app)  # checked though unused: the route documents it
        return care.reflected(rt.reflection.reflect(ctx, req))
    return http.idempotent(app, ctx, "reflect", req, lambda: care.reflected(rt.reflection.reflect(ctx, req)))


@app.post("/api/v1/<context_id>/elaborate")
def elaborate(context_id: str):
    ctx = http.context(app, context_id)
    rt = get_runtime()
    req = http.body(app, ElaborateRequest, optional=True)
    cap = rt.settings.limits.care_model_calls_per_call
    _at_most(req.budget, cap, "budget")
    if req.dry_run:
        http.idempotency_key(app)  # checked though unused: the route documents it
        return care.elaborated(rt.elaboration.elaborate(ctx, req, cap))
    return http.idempotent(app, ctx, "elaborate", req, lambda: care.elaborated(rt.elaboration.elaborate(ctx, req, cap)))


@app.post("/api/v1/<context_id>/lifecycle/decay")
def lifecycle_decay(context_id: str):
    ctx = http.context(app, context_id)
    http.body(app, ExpireRequest, optional=True)  # no fields but dryRun; decay writes nothing either way
    return care.lifecycle(get_runtime().lifecycle.decay(ctx))


@app.post("/api/v1/<context_id>/lifecycle/expire")
def lifecycle_expire(context_id: str):
    # Not idempotency-keyed, as forget: a stored reply would name removed rows. Running it
    # again removes nothing more.
    ctx = http.context(app, context_id)
    req = http.body(app, ExpireRequest, optional=True)
    return care.lifecycle(get_runtime().lifecycle.expire(ctx, req.dry_run))


@app.post("/api/v1/<context_id>/fsck")
def fsck(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, FsckRequest, optional=True)
    return care.fsck(get_runtime().fsck.fsck(ctx, req))


# --- the lifecycle schedule ------------------------------------------------------------------

log = logging.getLogger("agent_memory.facts")


def scheduled_lifecycle(lambda_context):
    run = get_runtime().lifecycle_schedule.run(http.request_budget_s(lambda_context), start=random.randrange)
    count("LifecycleExpired", run.expired)
    if run.stopped:
        log.warning("lifecycle schedule reached %d of %d partitions: %s", run.reached, run.partitions, run.stopped)
    return {"partitions": run.partitions, "reached": run.reached, "decayed": run.decayed, "expired": run.expired,
            "stopped": run.stopped}


@instrumented
def lambda_handler(event, lambda_context):
    if event.get("care") == "lifecycle":
        return scheduled_lifecycle(lambda_context)
    return app.resolve(event, lambda_context)

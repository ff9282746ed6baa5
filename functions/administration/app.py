"""Administration area: who am I (GET /me), keys (/keys), principals and their grants
(/principals), the scopes registry (/scopes, /scopes/forget), a context's export and import
(/export, /import, and their job form /export/jobs, /import/jobs: docs/export.md). Its own
function and role: the only one that writes key records. The stack's
``ScopeIndexBackfillSchedule`` also invokes it with ``{"scopeIndex": "backfill"}``: the scope
index's backfill, within the invocation's time. The same code, as ``PortabilityWorkerFunction``
(its own role and a longer timeout), consumes the portability queue: SQS records of export and
import jobs (``portability_jobs.PortabilityJobs.run``).

Rules: ``agent_memory.services.operations.administration``; shapes: ``presenters.administration``."""

import json
import logging
from urllib.parse import urljoin

from agent_memory.http import api as http
from agent_memory.models.requests import (
    CreateKeyRequest,
    ExportJobRequest,
    ForgetScopeRequest,
    GrantChangeRequest,
    ImportJobRequest,
    RegisterScopeRequest,
)
from agent_memory.observability import count, instrumented
from agent_memory.presenters import administration as wire
from agent_memory.runtime import get_runtime

app = http.make_resolver()
log = logging.getLogger("agent_memory.portability")
_stream = http.StreamSlot()

OVERLAP_MAX_S = 30 * 86_400


def _ttl() -> int | None:
    raw = http.query_text(app, "ttlSeconds")
    return None if raw is None else http.query_int(app, "ttlSeconds", 0)


@app.get("/api/v1/<context_id>/me")
def whoami(context_id: str):
    return wire.whoami(get_runtime().administration.whoami(http.context(app, context_id)))


@app.post("/api/v1/<context_id>/keys")
def create_key(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, CreateKeyRequest, optional=True)
    minted = get_runtime().administration.create_key(ctx, name=req.name, grant_map=req.grants,
                                                     ttl_seconds=_ttl(), contexts=req.contexts)
    return http.json_response(wire.minted_key(minted), 201)


@app.get("/api/v1/<context_id>/keys")
def list_keys(context_id: str):
    return http.json_response(wire.key_list(get_runtime().administration.list_keys(http.context(app, context_id))))


@app.post("/api/v1/<context_id>/keys/<key_name>/rotate")
def rotate_key(context_id: str, key_name: str):
    ctx = http.context(app, context_id)
    overlap = http.query_int(app, "overlapSeconds", 0, minimum=0, maximum=OVERLAP_MAX_S)
    return wire.minted_key(get_runtime().administration.rotate_key(ctx, key_name, ttl_seconds=_ttl(),
                                                                   overlap_seconds=overlap))


@app.delete("/api/v1/<context_id>/keys/<key_name>")
def delete_key(context_id: str, key_name: str):
    get_runtime().administration.delete_key(http.context(app, context_id), key_name)
    return http.empty_response()


@app.get("/api/v1/<context_id>/principals")
def list_principals(context_id: str):
    principals = get_runtime().administration.list_principals(http.context(app, context_id))
    return http.json_response(wire.principal_list(principals))


@app.get("/api/v1/<context_id>/principals/<principal_id>")
def get_principal(context_id: str, principal_id: str):
    return wire.principal(get_runtime().administration.get_principal(http.context(app, context_id), principal_id))


@app.post("/api/v1/<context_id>/principals/<principal_id>/grants")
def grant(context_id: str, principal_id: str):
    req = http.body(app, GrantChangeRequest)
    return wire.principal(get_runtime().administration.change_grant(
        http.context(app, context_id), principal_id, req.path, req.verbs, revoke=False))


@app.delete("/api/v1/<context_id>/principals/<principal_id>/grants")
def revoke(context_id: str, principal_id: str):
    req = http.body(app, GrantChangeRequest)
    return wire.principal(get_runtime().administration.change_grant(
        http.context(app, context_id), principal_id, req.path, req.verbs, revoke=True))


@app.get("/api/v1/<context_id>/principals/<principal_id>/effective")
def effective(context_id: str, principal_id: str):
    path = http.query_text(app, "path")
    if path is None:
        from agent_memory.kernel.errors import InvalidRequest

        raise InvalidRequest("path is required ('/' for the whole context)", field="path")
    return wire.effective(get_runtime().administration.effective(
        http.context(app, context_id), principal_id, path, http.query_instant(app, "asOf")))


@app.post("/api/v1/<context_id>/scopes")
def register_scope(context_id: str):
    req = http.body(app, RegisterScopeRequest)
    node, created = get_runtime().scope_registry.register(http.context(app, context_id), req.path,
                                                          req.display_name, req.description)
    return http.json_response(wire.scope_node(node), 201 if created else 200)


@app.get("/api/v1/<context_id>/scopes")
def list_scopes(context_id: str):
    return http.json_response(wire.scope_list(get_runtime().scope_registry.list(http.context(app, context_id))))


@app.delete("/api/v1/<context_id>/scopes")
def delete_scope(context_id: str):
    ctx = http.context(app, context_id)
    path = http.query_text(app, "path")
    if path is None:
        from agent_memory.kernel.errors import InvalidRequest

        raise InvalidRequest("path is required", field="path")
    get_runtime().scope_registry.delete(ctx, path)
    return http.empty_response()


@app.post("/api/v1/<context_id>/scopes/forget")
def forget_scope(context_id: str):
    req = http.body(app, ForgetScopeRequest)
    ctx = http.context(app, context_id)
    rt = get_runtime()
    with rt.receipts.collect(ctx, "scope.forget") as erasure:
        outcome = rt.scope_registry.forget(ctx, req.path, req.continuation)
    return {**wire.scope_forgotten(outcome), "receipt": erasure.receipt}


def scheduled_backfill(lambda_context):
    """The stack's ``ScopeIndexBackfillSchedule``: move the scope index's backfill on within
    this invocation's time (once it is complete, one read a run)."""
    state = get_runtime().scope_index.backfill(seconds=http.request_budget_s(lambda_context))
    return state.wire()


@app.get("/api/v1/<context_id>/export")
def export_context(context_id: str):
    ctx = http.context(app, context_id)
    lines = get_runtime().portability.export(
        ctx, partition=http.query_text(app, "partition"),
        include_principals=bool(http.query_bool(app, "includePrincipals")),
        include_originals=http.query_bool(app, "originals") is not False)
    # The lines outlive this handler: the local server streams them as they are read.
    _stream.hold(lines)
    return http.ndjson_response(f"{context_id}.ndjson")


@app.post("/api/v1/<context_id>/import")
def import_context(context_id: str):
    ctx = http.context(app, context_id)
    result = get_runtime().portability.import_(ctx, http.raw_body(app).splitlines())
    return wire.imported(result)


def _job_response(context_id: str, job, status: int):
    body = wire.portability_job(job)
    # The local store signs paths on this server: made absolute against the caller's origin.
    for name in ("uploadUrl", "downloadUrl"):
        if name in body:
            body[name] = urljoin(http.request_origin(app) + "/", body[name])
    location = f"/api/v1/{context_id}/{job.kind}/jobs/{job.id}"
    return http.json_response(body, status, headers={"Location": location} if status in (201, 202) else None)


@app.post("/api/v1/<context_id>/export/jobs")
def start_export_job(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, ExportJobRequest, optional=True)
    job = get_runtime().portability_jobs.start_export(ctx, partition=req.partition,
                                                      include_principals=req.include_principals,
                                                      include_originals=req.originals)
    return _job_response(context_id, job, 202)


@app.get("/api/v1/<context_id>/export/jobs/<job_id>")
def get_export_job(context_id: str, job_id: str):
    job = get_runtime().portability_jobs.get(http.context(app, context_id), job_id, "export")
    return _job_response(context_id, job, 200)


@app.post("/api/v1/<context_id>/import/jobs")
def create_import_job(context_id: str):
    ctx = http.context(app, context_id)
    req = http.body(app, ImportJobRequest)
    return _job_response(context_id, get_runtime().portability_jobs.create_import(ctx, req.size), 201)


@app.post("/api/v1/<context_id>/import/jobs/<job_id>/start")
def start_import_job(context_id: str, job_id: str):
    job, queued = get_runtime().portability_jobs.start_import(http.context(app, context_id), job_id)
    return _job_response(context_id, job, 202 if queued else 200)


@app.get("/api/v1/<context_id>/import/jobs/<job_id>")
def get_import_job(context_id: str, job_id: str):
    job = get_runtime().portability_jobs.get(http.context(app, context_id), job_id, "import")
    return _job_response(context_id, job, 200)


def portability_worker(event):
    """``PortabilityWorkerFunction``: one export or import job per SQS record; a record whose
    run raised is reported failed, so SQS delivers it again (the job fails for good after
    ``MAX_ATTEMPTS`` runs)."""
    from agent_memory.services.operations.portability_jobs import PortabilityJobMessage

    failures = []
    for record in event["Records"]:
        try:
            state = get_runtime().portability_jobs.run(PortabilityJobMessage.from_message(json.loads(record["body"])))
            count({"succeeded": "PortabilityJobsSucceeded", "failed": "PortabilityJobsFailed"}.get(
                state, "PortabilityJobsSkipped"))
        except Exception:
            log.exception("portability message %s did not finish", record.get("messageId"))
            count("PortabilityJobsRetried")
            failures.append({"itemIdentifier": record["messageId"]})
    return {"batchItemFailures": failures}


@instrumented
def lambda_handler(event, lambda_context):
    if event.get("scopeIndex") == "backfill":
        return scheduled_backfill(lambda_context)
    if event.get("Records") and event["Records"][0].get("eventSource") == "aws:sqs":
        return portability_worker(event)
    return _stream.resolve(app, event, lambda_context)

"""Export and import of a context as jobs (docs/export.md "The job form").

A Lambda response or request carries at most 6 MB, less than a context of 10,000 turns. So an
export can run as a job that writes the NDJSON stream to the stack's object store and hands
back a short-lived presigned GET, and an import as a job that reads a stream the caller PUT
to a presigned URL. The stream is exactly ``GET /export``'s and ``POST /import``'s (one
format, one validator: ``portability.Portability``); this module only schedules the work,
keeps each job's state and progress in a row of the context, and signs the URLs.

A job's row (``c#~portability#<context>``, sort key the job id, kind ``portability_job``,
expiring after ``JOB_TTL_S``: outside the context's own keys, so no export carries it) is read by the status routes; the queue (SQS when deployed, an
in-process worker locally) carries only ``{jobId, contextId}``, so a job runs from its row.
Only an admin of the context starts or reads a job, as for the inline routes; a job id read
under another context is not found there (the row lives under its own context's key).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import (
    DomainError,
    InvalidRequest,
    NotAvailable,
    NotFound,
    PayloadTooLarge,
)
from agent_memory.kernel.ids import new_id
from agent_memory.ports import Condition, ConditionFailed, Record, RecordStore, UploadStore
from agent_memory.services.operations.portability import Portability, admin_only

log = logging.getLogger("agent_memory.portability")

JOB_KIND = "portability_job"
KINDS = ("export", "import")
STATES = ("awaiting_upload", "queued", "running", "succeeded", "failed")
NDJSON = "application/x-ndjson"
JOB_TTL_S = 7 * 86_400          # a job's row; its objects expire sooner (the bucket's lifecycle rules)
#: An import stream is held whole to be checked before anything is written (as POST /import).
IMPORT_MAX_BYTES = 256 * 1024 * 1024
#: Runs of one job (a worker that crashed or timed out is retried by the queue): then it fails.
MAX_ATTEMPTS = 3
PROGRESS_EVERY = 1000           # records between progress writes


def jobs_pk(context_id: str) -> str:
    # "~" is in no context id: no context's rows (c#<ctx>#...) share it, nor its export's scan.
    return f"c#~portability#{context_id}"


def object_key(kind: str, job_id: str) -> str:
    return f"{kind}s/{job_id}"


@dataclass
class PortabilityJob:
    id: str
    context_id: str
    kind: str
    state: str
    principal: str
    created_at: str
    updated_at: str
    options: dict[str, Any] = field(default_factory=dict)
    size: int | None = None               # an import's declared upload size
    records_done: int = 0
    records_total: int | None = None
    bytes: int | None = None
    attempts: int = 0
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    upload_expires_at: str | None = None
    # Filled in for the caller, never stored:
    upload_url: str | None = None
    download_url: str | None = None
    download_expires_at: str | None = None

    @property
    def object_key(self) -> str:
        return object_key(self.kind, self.id)

    def to_item(self) -> dict[str, Any]:
        return {"kind": JOB_KIND, "id": self.id, "contextId": self.context_id, "jobKind": self.kind,
                "state": self.state, "principal": self.principal, "createdAt": self.created_at,
                "updatedAt": self.updated_at, "options": self.options, "size": self.size,
                "recordsDone": self.records_done, "recordsTotal": self.records_total, "bytes": self.bytes,
                "attempts": self.attempts, "result": self.result, "error": self.error,
                "uploadExpiresAt": self.upload_expires_at}

    @classmethod
    def from_item(cls, d: dict[str, Any]) -> PortabilityJob:
        return cls(id=d["id"], context_id=d["contextId"], kind=d["jobKind"], state=d["state"],
                   principal=d.get("principal") or "", created_at=d["createdAt"], updated_at=d["updatedAt"],
                   options=dict(d.get("options") or {}), size=d.get("size"), records_done=int(d.get("recordsDone") or 0),
                   records_total=d.get("recordsTotal"), bytes=d.get("bytes"), attempts=int(d.get("attempts") or 0),
                   result=d.get("result"), error=d.get("error"), upload_expires_at=d.get("uploadExpiresAt"))


@dataclass(frozen=True)
class PortabilityJobMessage:
    """What the queue carries: the job's row says the rest."""

    job_id: str
    context_id: str

    def to_message(self) -> dict[str, Any]:
        return {"portabilityJob": self.job_id, "contextId": self.context_id}

    @classmethod
    def from_message(cls, body: dict[str, Any]) -> PortabilityJobMessage:
        job_id, context_id = body.get("portabilityJob"), body.get("contextId")
        if not isinstance(job_id, str) or not isinstance(context_id, str):
            raise ValueError(f"not a portability job message: {body!r}")
        return cls(job_id, context_id)


def _problem(exc: DomainError) -> dict[str, Any]:
    out: dict[str, Any] = {"status": exc.status, "title": exc.title, "detail": exc.detail}
    if exc.code:
        out["code"] = exc.code
    out.update({k: v for k, v in exc.extensions.items() if v is not None})
    return out


class PortabilityJobs:
    """Start, run and report export and import jobs. ``uploads`` and ``queue`` are providers
    (built on first use); ``url_ttl_s`` is how long a presigned URL stays valid."""

    def __init__(self, store: RecordStore, portability: Portability, *, uploads: Callable[[], UploadStore | None],
                 queue: Callable[[], Any], url_ttl_s: int):
        self.store = store
        self.portability = portability
        self._uploads = uploads
        self._queue = queue
        self._url_ttl_s = url_ttl_s

    # --- the routes ---------------------------------------------------------------------

    def start_export(self, ctx: RequestContext, *, partition: str | None = None, include_principals: bool = False,
                     include_originals: bool = True) -> PortabilityJob:
        self.portability.check_export(ctx, partition, include_principals)  # 403 / 400 before any row
        self._store_needed()
        job = self._new(ctx, "export", "queued", options={"partition": partition,
                                                          "includePrincipals": include_principals,
                                                          "originals": include_originals})
        self._send(job)
        return job

    def create_import(self, ctx: RequestContext, size: int) -> PortabilityJob:
        admin_only(ctx, "import")
        if size > IMPORT_MAX_BYTES:
            raise PayloadTooLarge(f"an import stream is at most {IMPORT_MAX_BYTES} bytes", limit=IMPORT_MAX_BYTES)
        uploads = self._store_needed()
        expires = timeutil.iso(timeutil.now() + timedelta(seconds=self._url_ttl_s))
        job = self._new(ctx, "import", "awaiting_upload", size=size, upload_expires_at=expires)
        job.upload_url = uploads.presign_put(job.object_key, size, NDJSON, self._url_ttl_s)
        return job

    def start_import(self, ctx: RequestContext, job_id: str) -> tuple[PortabilityJob, bool]:
        """Queue an uploaded import; ``(job, queued)``. A job already queued or further answers
        as it is (a repeated call queues nothing)."""
        job, version = self._load(ctx, job_id, "import")
        if job.state != "awaiting_upload":
            return job, False
        job.state = "queued"
        try:
            version = self._save(job, version)
        except ConditionFailed:  # a concurrent start won
            return self._load(ctx, job_id, "import")[0], False
        try:
            self._queue().send(PortabilityJobMessage(job.id, job.context_id))
        except BaseException:
            # The upload is still there: back to awaiting it, so the caller's retried start queues it.
            job.state = "awaiting_upload"
            try:
                self._save(job, version)
            except Exception:
                log.exception("could not put portability job %s back to awaiting_upload", job.id)
            raise
        return job, True

    def get(self, ctx: RequestContext, job_id: str, kind: str) -> PortabilityJob:
        job, _ = self._load(ctx, job_id, kind)
        if job.kind == "export" and job.state == "succeeded":
            uploads = self._uploads()
            if uploads is not None:
                job.download_url = uploads.presign_get(job.object_key, self._url_ttl_s, NDJSON,
                                                       filename=f"{job.context_id}.ndjson")
                job.download_expires_at = timeutil.iso(timeutil.now() + timedelta(seconds=self._url_ttl_s))
        return job

    # --- the worker -----------------------------------------------------------------------

    def run(self, message: PortabilityJobMessage) -> str:
        """Run one job to its end; returns its state. A job already finished is left alone
        (a redelivered message); a domain refusal (a bad line, a conflict) ends it ``failed``
        with the problem; anything else is raised for the queue to retry, and the job fails
        after ``MAX_ATTEMPTS`` runs."""
        record = self.store.get(jobs_pk(message.context_id), message.job_id)
        if record is None or record.data.get("kind") != JOB_KIND:
            log.warning("portability job %s of %s: no such job", message.job_id, message.context_id)
            return "gone"
        job = PortabilityJob.from_item(record.data)
        if job.state in ("succeeded", "failed", "awaiting_upload"):
            return job.state
        job.attempts += 1
        job.state, job.records_done = "running", 0
        version = self._save(job, record.version)
        ctx = RequestContext(context_id=job.context_id, principal=job.principal, admin=True)
        try:
            if job.kind == "export":
                self._run_export(ctx, job, version)
            else:
                self._run_import(ctx, job, version)
        except DomainError as exc:
            self._finish(job, "failed", error=_problem(exc))
        except Exception as exc:
            if job.attempts >= MAX_ATTEMPTS:
                log.exception("portability job %s failed on its last attempt", job.id)
                self._finish(job, "failed", error={"status": 500, "title": "Internal error",
                                                   "detail": f"the job failed {job.attempts} times "
                                                             f"({type(exc).__name__}); start a new one",
                                                   "code": "job_failed"})
            else:
                raise
        return job.state

    def _run_export(self, ctx: RequestContext, job: PortabilityJob, version: int) -> None:
        opts = job.options
        lines = self.portability.export(ctx, partition=opts.get("partition"),
                                        include_principals=bool(opts.get("includePrincipals")),
                                        include_originals=opts.get("originals") is not False)
        parts: list[bytes] = []
        for n, line in enumerate(lines, start=1):
            parts.append(line.encode("utf-8"))
            if n % PROGRESS_EVERY == 0:
                job.records_done = n
                version = self._save(job, version)
        trailer = json.loads(parts[-1])  # the stream's last line: {"type": "end", ...counts}
        body = b"".join(parts)
        self._store_needed().write(job.object_key, body, NDJSON)
        job.records_done = job.records_total = int(trailer.get("records") or 0)
        job.bytes = len(body)
        self._finish(job, "succeeded", result={"records": trailer.get("records"), "originals": trailer.get("originals"),
                                               "principals": trailer.get("principals"), "bytes": len(body),
                                               "lines": len(parts), "byType": trailer.get("counts") or {}})

    def _run_import(self, ctx: RequestContext, job: PortabilityJob, version: int) -> None:
        uploads = self._store_needed()
        try:
            raw = uploads.read(job.object_key, IMPORT_MAX_BYTES)
        except ValueError as exc:
            raise PayloadTooLarge(str(exc), limit=IMPORT_MAX_BYTES) from exc
        if raw is None:
            raise InvalidRequest("nothing was uploaded to the job's upload URL (or it expired); create a new "
                                 "import job", code="upload_missing")
        job.bytes = len(raw)
        lines = raw.splitlines()
        done = [0]
        state = {"version": version}

        def progress(n: int) -> None:
            done[0] += n
            if done[0] // PROGRESS_EVERY != (done[0] - n) // PROGRESS_EVERY:
                job.records_done = done[0]
                state["version"] = self._save(job, state["version"])

        result = self.portability.import_(ctx, lines, progress=progress)
        job.records_done = job.records_total = result.records
        self._finish(job, "succeeded", result={
            "contextId": result.context_id, "records": result.records, "written": result.written,
            "unchanged": result.unchanged, "originals": result.originals, "principals": result.principals,
            "byType": dict(sorted(result.by_type.items()))})
        uploads.delete(job.object_key)  # read once; the lifecycle rule removes what a failed job leaves

    # --- rows -----------------------------------------------------------------------------

    def _store_needed(self) -> UploadStore:
        uploads = self._uploads()
        if uploads is None:
            raise NotAvailable("export and import jobs need the stack's bucket (AGENT_MEMORY_UPLOAD_BUCKET), and "
                               "this deployment has none configured; GET /export and POST /import still work",
                               code="uploads_unavailable")
        return uploads

    def _new(self, ctx: RequestContext, kind: str, state: str, **fields: Any) -> PortabilityJob:
        now = timeutil.now_iso()
        job = PortabilityJob(id=new_id("job"), context_id=ctx.context_id, kind=kind, state=state,
                             principal=ctx.principal, created_at=now, updated_at=now, **fields)
        self.store.put(self._record(job, 1), Condition.absent())
        return job

    def _record(self, job: PortabilityJob, version: int) -> Record:
        expires = int(timeutil.now().timestamp()) + JOB_TTL_S
        return Record(jobs_pk(job.context_id), job.id, job.to_item(), version=version, expires_at=expires)

    def _save(self, job: PortabilityJob, version: int) -> int:
        job.updated_at = timeutil.now_iso()
        self.store.put(self._record(job, version + 1), Condition.version_is(version))
        return version + 1

    def _finish(self, job: PortabilityJob, state: str, *, result: dict[str, Any] | None = None,
                error: dict[str, Any] | None = None) -> None:
        job.state, job.result, job.error = state, result, error
        record = self.store.get(jobs_pk(job.context_id), job.id)
        self._save(job, record.version if record is not None else 0)

    def _load(self, ctx: RequestContext, job_id: str, kind: str) -> tuple[PortabilityJob, int]:
        admin_only(ctx, f"an {kind} job")
        record = self.store.get(jobs_pk(ctx.context_id), job_id)
        if record is None or record.data.get("kind") != JOB_KIND or record.data.get("jobKind") != kind:
            raise NotFound(f"no {kind} job {job_id!r} in context {ctx.context_id!r}")
        if record.expires_at is not None and record.expires_at < timeutil.now().timestamp():
            raise NotFound(f"no {kind} job {job_id!r} in context {ctx.context_id!r} (it expired)")
        return PortabilityJob.from_item(record.data), record.version

    def _send(self, job: PortabilityJob) -> None:
        try:
            self._queue().send(PortabilityJobMessage(job.id, job.context_id))
        except BaseException:
            # The caller's retry starts afresh; the row is marked so a status read says why.
            try:
                self._finish(job, "failed", error={"status": 503, "title": "Service unavailable",
                                                   "detail": "the job queue refused the job; start a new one",
                                                   "code": "queue_unavailable"})
            except Exception:
                log.exception("could not mark portability job %s failed", job.id)
            raise


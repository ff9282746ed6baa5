"""Every API call of the SDK as a ``Call``: path, body, retry class and response model.

The sync and async clients are thin shells over these builders (one line per method), so
both flavours send the same requests and parse into the same models. ``operation`` tags
each public SDK method with the openapi.yaml ``operationId`` it reaches; a test checks
that every operation has one.
"""

from __future__ import annotations

import io
import json
import os
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import IO, Any, TypeVar
from urllib.parse import quote

import httpx
from pydantic import BaseModel

from agent_memory.client.errors import ApiError, error_for
from agent_memory.client.transport import Call
from agent_memory.models import wire

F = TypeVar("F", bound=Callable[..., Any])
M = TypeVar("M", bound=BaseModel)

Scopes = str | Sequence[str | Sequence[str]]
DocumentSource = str | os.PathLike[str] | bytes | IO[bytes] | IO[str]


def operation(operation_id: str) -> Callable[[F], F]:
    """Marks an SDK method as the way to reach one openapi.yaml operation."""

    def mark(fn: F) -> F:
        fn.__operation_id__ = operation_id  # type: ignore[attr-defined]
        return fn

    return mark


def model(cls: type[M]) -> Callable[[httpx.Response], M]:
    return lambda response: cls.model_validate(response.json())


def nothing(response: httpx.Response) -> None:
    return None


def receipt_id(response: httpx.Response) -> str | None:
    """A 204 removal's erasure receipt id (``X-Erasure-Receipt``; ``receipts.get`` reads it)."""
    return response.headers.get("x-erasure-receipt")


def new_idempotency_key() -> str:
    return f"sdk-{uuid.uuid4()}"


ExportSource = bytes | str | os.PathLike[str] | IO[bytes] | Iterable[str]


def export_bytes(source: ExportSource) -> bytes:
    """An export stream's bytes from bytes, text, a file path, a binary file or its lines."""
    if isinstance(source, bytes):
        return source
    if isinstance(source, str):
        return source.encode("utf-8")
    if isinstance(source, os.PathLike):
        return Path(source).read_bytes()
    read = getattr(source, "read", None)
    if read is not None:
        data = read()
        return data.encode("utf-8") if isinstance(data, str) else data
    return "".join(line if line.endswith("\n") else line + "\n" for line in source).encode("utf-8")


def job_failure(job: wire.PortabilityJob) -> ApiError:
    """A failed export or import job's problem as the error the inline route would have raised."""
    problem = dict(job.error or {"status": 500, "title": "Internal error", "detail": "the job failed"})
    return error_for(int(problem.get("status") or 500), problem)


def _seg(value: str, safe: str = "") -> str:
    return quote(str(value), safe=safe)


def _recall_filters(*, include: list[str] | None = None, as_of: str | None = None, session_id: str | None = None,
                    labels: list[str] | None = None, at_instant: str | None = None, valid_from: str | None = None,
                    valid_until: str | None = None, lens: Scopes | None = None, scope_view: str | None = None,
                    source: str | None = None, location: dict[str, Any] | None = None) -> dict[str, Any]:
    """The recall filters of ``/query`` and ``/context``, by their wire names."""
    return {"include": include, "asOf": as_of, "sessionId": session_id, "labels": labels, "atInstant": at_instant,
            "validFrom": valid_from, "validUntil": valid_until, "lens": _scopes(lens), "scopeView": scope_view,
            "source": source, "location": location}


def _body(**fields: Any) -> dict[str, Any]:
    """A JSON body without the arguments left at ``None``."""
    return {k: v for k, v in fields.items() if v is not None}


def _scopes(scopes: Scopes | None) -> Any:
    if scopes is None or isinstance(scopes, str):
        return scopes
    return [s if isinstance(s, str) else list(s) for s in scopes]


def _message(message: Any) -> dict[str, Any]:
    """A batch message: a dict, a ``(role, content)`` pair or a bare string (a user turn)."""
    if isinstance(message, str):
        return {"role": "user", "content": message}
    if isinstance(message, tuple):
        role, content = message
        return {"role": role, "content": content}
    return dict(message)


class Calls:
    """The calls of one context; paths are ``/api/v1/{context}/...``."""

    def __init__(self, context: str):
        self.context_id = context
        self.prefix = f"/api/v1/{_seg(context)}"

    # --- service ----------------------------------------------------------------------

    @staticmethod
    def health() -> Call[wire.Health]:
        return Call("GET", "/api/v1/health", model(wire.Health), idempotent=True)

    @staticmethod
    def openapi() -> Call[dict[str, Any]]:
        return Call("GET", "/api/v1/openapi.json", lambda r: r.json(), idempotent=True)

    @staticmethod
    def openapi_yaml() -> Call[str]:
        return Call("GET", "/api/v1/openapi.yaml", lambda r: r.text, idempotent=True)

    # --- facts --------------------------------------------------------------------------

    def remember(self, text: str, *, session_id: str | None, infer: str | None, triples: list[dict[str, Any]] | None,
                 scopes: Scopes | None, labels: list[str] | None, memory_category: str | None, role: str | None,
                 observed_at: str | None, idempotency_key: str | None) -> Call[wire.WriteFactsResponse]:
        body = _body(text=text, sessionId=session_id, infer=infer, triples=triples, scopes=_scopes(scopes),
                     labels=labels, memoryCategory=memory_category, role=role, observedAt=observed_at)
        return Call("POST", f"{self.prefix}/facts", model(wire.WriteFactsResponse), json=body,
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
                    idempotent=True, keyed_write=True)

    def remember_many(self, messages: Iterable[Any], *, session_id: str | None, extract: str | None,
                      infer: str | None, scopes: Scopes | None, labels: list[str] | None,
                      memory_category: str | None, idempotency_key: str | None
                      ) -> Call[wire.WriteFactsBatchResponse]:
        body = _body(messages=[_message(m) for m in messages], sessionId=session_id, extract=extract, infer=infer,
                     scopes=_scopes(scopes), labels=labels, memoryCategory=memory_category)
        return Call("POST", f"{self.prefix}/facts/batch", model(wire.WriteFactsBatchResponse), json=body,
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
                    idempotent=True, keyed_write=True)

    def forget(self, query: str, *, limit: int | None, min_score: float | None, dry_run: bool | None,
               purge: bool | None) -> Call[wire.ForgetResponse]:
        body = _body(query=query, limit=limit, minScore=min_score, dryRun=dry_run, purge=purge)
        return Call("POST", f"{self.prefix}/forget", model(wire.ForgetResponse), json=body)

    # --- memory care --------------------------------------------------------------------

    def consolidate(self, *, dry_run: bool | None, fact_limit: int | None, observation_limit: int | None,
                    idempotency_key: str | None) -> Call[wire.ConsolidateResponse]:
        body = _body(dryRun=dry_run, factLimit=fact_limit, observationLimit=observation_limit)
        return Call("POST", f"{self.prefix}/consolidate", model(wire.ConsolidateResponse), json=body,
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
                    idempotent=True, keyed_write=True)

    def reflect(self, query: str, *, persist: bool | None, idempotency_key: str | None) -> Call[wire.ReflectResponse]:
        return Call("POST", f"{self.prefix}/reflect", model(wire.ReflectResponse),
                    json=_body(query=query, persist=persist),
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
                    idempotent=True, keyed_write=True)

    def elaborate(self, *, entity_ref: str | None, budget: int | None, dry_run: bool | None, sweep: bool | None,
                  idempotency_key: str | None) -> Call[wire.ElaborateResponse]:
        body = _body(entityRef=entity_ref, budget=budget, dryRun=dry_run, sweep=sweep)
        return Call("POST", f"{self.prefix}/elaborate", model(wire.ElaborateResponse), json=body,
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
                    idempotent=True, keyed_write=True)

    def decay(self) -> Call[wire.LifecycleResponse]:
        return Call("POST", f"{self.prefix}/lifecycle/decay", model(wire.LifecycleResponse), json={}, idempotent=True)

    def expire(self, *, dry_run: bool | None) -> Call[wire.LifecycleResponse]:
        return Call("POST", f"{self.prefix}/lifecycle/expire", model(wire.LifecycleResponse),
                    json=_body(dryRun=dry_run), idempotent=True)

    def fsck(self, *, check: str | None, duplicate_threshold: float | None,
             max_results: int | None, include_echoes: bool | None = None) -> Call[wire.FsckReport]:
        body = _body(check=check, duplicateThreshold=duplicate_threshold, maxResults=max_results,
                     includeEchoes=include_echoes)
        return Call("POST", f"{self.prefix}/fsck", model(wire.FsckReport), json=body, idempotent=True)

    # --- recall -------------------------------------------------------------------------

    def query(self, query: str, *, k: int | None, mode: str | None, **filters: Any) -> Call[wire.QueryResponse]:
        body = _body(query=query, k=k, mode=mode, **_recall_filters(**filters))
        return Call("POST", f"{self.prefix}/query", model(wire.QueryResponse), json=body, idempotent=True)

    def context(self, query: str, *, k: int | None, subject: str | None, **filters: Any) -> Call[wire.ContextResponse]:
        return Call("POST", f"{self.prefix}/context", model(wire.ContextResponse),
                    json=_body(query=query, k=k, subject=subject, **_recall_filters(**filters)), idempotent=True)

    def session_context(self, session_id: str, query: str, *, k: int | None) -> Call[wire.ContextResponse]:
        return Call("POST", f"{self.prefix}/sessions/{_seg(session_id)}/context", model(wire.ContextResponse),
                    json=_body(query=query, k=k), idempotent=True)

    # --- chat -----------------------------------------------------------------------------

    def chat(self, message: str, *, session_id: str | None, stream: bool, scopes: Scopes | None,
             labels: list[str] | None, model_name: str | None, bypass_cache: bool | None,
             suppress_markers: bool | None) -> Call[wire.ChatResponse]:
        body = _body(message=message, sessionId=session_id, scopes=_scopes(scopes), labels=labels, model=model_name,
                     stream=stream or None, bypassCache=bypass_cache, suppressMarkers=suppress_markers)
        headers = {"accept": "text/event-stream"} if stream else None
        return Call("POST", f"{self.prefix}/chat", model(wire.ChatResponse), json=body, headers=headers)

    def receipt(self, receipt_id: str) -> Call[wire.ErasureReceipt]:
        return Call("GET", f"{self.prefix}/receipts/{_seg(receipt_id)}", model(wire.ErasureReceipt), idempotent=True)

    def verify_receipt(self, receipt_id: str) -> Call[wire.ReceiptVerification]:
        return Call("POST", f"{self.prefix}/receipts/{_seg(receipt_id)}/verify", model(wire.ReceiptVerification),
                    idempotent=True)

    def trace(self, trace_id: str) -> Call[wire.Trace]:
        return Call("GET", f"{self.prefix}/traces/{_seg(trace_id)}", model(wire.Trace), idempotent=True)

    def inspect(self, ref: str, *, as_of: str | None, at_instant: str | None, valid_from: str | None,
                valid_until: str | None) -> Call[wire.Inspection]:
        return Call("GET", f"{self.prefix}/inspect", model(wire.Inspection),
                    params={"ref": ref, "asOf": as_of, "atInstant": at_instant, "validFrom": valid_from,
                            "validUntil": valid_until}, idempotent=True)

    def traces(self, *, limit: int | None) -> Call[wire.TraceList]:
        return Call("GET", f"{self.prefix}/traces", model(wire.TraceList), params={"limit": limit}, idempotent=True)

    def trace_stats(self, *, window_hours: int | None) -> Call[wire.TraceStats]:
        return Call("GET", f"{self.prefix}/traces/stats", model(wire.TraceStats),
                    params={"windowHours": window_hours}, idempotent=True)

    # --- sessions -------------------------------------------------------------------------

    def create_session(self, *, scopes: Scopes | None, labels: list[str] | None) -> Call[wire.Session]:
        return Call("POST", f"{self.prefix}/sessions", model(wire.Session),
                    json=_body(scopes=_scopes(scopes), labels=labels))

    def close_session(self, session_id: str) -> Call[wire.Session]:
        return Call("POST", f"{self.prefix}/sessions/{_seg(session_id)}/close", model(wire.Session),
                    idempotent=True)  # closing twice is the same as once

    def delete_session(self, session_id: str) -> Call[str | None]:
        return Call("DELETE", f"{self.prefix}/sessions/{_seg(session_id)}", receipt_id, idempotent=True)

    def session_turns(self, session_id: str, *, limit: int | None, cursor: str | None) -> Call[wire.TurnPage]:
        return Call("GET", f"{self.prefix}/sessions/{_seg(session_id)}/turns", model(wire.TurnPage),
                    params={"limit": limit, "cursor": cursor}, idempotent=True)

    # --- state and the memory graph ------------------------------------------------------

    def state(self, *, limit: int | None) -> Call[wire.State]:
        return Call("GET", f"{self.prefix}/state", model(wire.State), params={"limit": limit}, idempotent=True)

    def audit(self, *, limit: int | None, cursor: str | None) -> Call[wire.AuditPage]:
        return Call("GET", f"{self.prefix}/audit", model(wire.AuditPage), params={"limit": limit, "cursor": cursor},
                    idempotent=True)

    def profile(self, *, limit: int | None) -> Call[wire.Profile]:
        return Call("GET", f"{self.prefix}/profile", model(wire.Profile), params={"limit": limit}, idempotent=True)

    # --- administration -------------------------------------------------------------------

    def whoami(self) -> Call[wire.Whoami]:
        return Call("GET", f"{self.prefix}/me", model(wire.Whoami), idempotent=True)

    def create_key(self, *, name: str | None, grants: dict[str, list[str]] | None, ttl_seconds: int | None,
                   contexts: list[str] | None) -> Call[wire.MintedKey]:
        # Not retried: a lost reply would leave a key minted twice (the second named apart).
        return Call("POST", f"{self.prefix}/keys", model(wire.MintedKey),
                    json=_body(name=name, grants=grants, contexts=contexts), params={"ttlSeconds": ttl_seconds})

    def list_keys(self) -> Call[list[wire.KeyDetail]]:
        return Call("GET", f"{self.prefix}/keys", lambda r: [wire.KeyDetail.model_validate(k) for k in r.json()],
                    idempotent=True)

    def rotate_key(self, name: str, *, ttl_seconds: int | None, overlap_seconds: int | None) -> Call[wire.MintedKey]:
        return Call("POST", f"{self.prefix}/keys/{_seg(name)}/rotate", model(wire.MintedKey),
                    params={"ttlSeconds": ttl_seconds, "overlapSeconds": overlap_seconds})

    def delete_key(self, name: str) -> Call[None]:
        return Call("DELETE", f"{self.prefix}/keys/{_seg(name)}", nothing, idempotent=True)

    def list_principals(self) -> Call[list[wire.Principal]]:
        return Call("GET", f"{self.prefix}/principals",
                    lambda r: [wire.Principal.model_validate(p) for p in r.json()], idempotent=True)

    def get_principal(self, principal_id: str) -> Call[wire.Principal]:
        return Call("GET", f"{self.prefix}/principals/{_seg(principal_id)}", model(wire.Principal), idempotent=True)

    def change_grant(self, principal_id: str, path: str, verbs: Sequence[str], *,
                     revoke: bool) -> Call[wire.Principal]:
        return Call("DELETE" if revoke else "POST", f"{self.prefix}/principals/{_seg(principal_id)}/grants",
                    model(wire.Principal), json={"path": path, "verbs": list(verbs)}, idempotent=True)

    def effective_grants(self, principal_id: str, path: str, *, as_of: str | None) -> Call[wire.EffectiveGrants]:
        return Call("GET", f"{self.prefix}/principals/{_seg(principal_id)}/effective", model(wire.EffectiveGrants),
                    params={"path": path, "asOf": as_of}, idempotent=True)

    def register_scope(self, path: str, *, display_name: str | None, description: str | None) -> Call[wire.ScopeNode]:
        return Call("POST", f"{self.prefix}/scopes", model(wire.ScopeNode),
                    json=_body(path=path, displayName=display_name, description=description), idempotent=True)

    def list_scopes(self) -> Call[list[wire.ScopeNode]]:
        return Call("GET", f"{self.prefix}/scopes", lambda r: [wire.ScopeNode.model_validate(n) for n in r.json()],
                    idempotent=True)

    def delete_scope(self, path: str) -> Call[None]:
        return Call("DELETE", f"{self.prefix}/scopes", nothing, params={"path": path}, idempotent=True)

    def forget_scope(self, path: str, continuation: str | None = None) -> Call[wire.ForgetScopeResponse]:
        body = {"path": path, **({"continuation": continuation} if continuation else {})}
        return Call("POST", f"{self.prefix}/scopes/forget", model(wire.ForgetScopeResponse), json=body,
                    idempotent=True)

    def export_context(self, *, partition: str | None, include_principals: bool | None,
                       originals: bool | None) -> Call[httpx.Response]:
        return Call("GET", f"{self.prefix}/export", lambda response: response,
                    params={"partition": partition, "includePrincipals": include_principals,
                            "originals": originals}, idempotent=True)

    def import_context(self, data: bytes) -> Call[wire.ImportResponse]:
        # Import is idempotent (records already there are left alone): safe to retry.
        return Call("POST", f"{self.prefix}/import", model(wire.ImportResponse), content=data,
                    headers={"content-type": "application/x-ndjson"}, idempotent=True)

    def start_export_job(self, *, partition: str | None, include_principals: bool | None,
                         originals: bool | None) -> Call[wire.PortabilityJob]:
        body = {k: v for k, v in {"partition": partition, "includePrincipals": include_principals,
                                  "originals": originals}.items() if v is not None}
        return Call("POST", f"{self.prefix}/export/jobs", model(wire.PortabilityJob), json=body)

    def get_export_job(self, job_id: str) -> Call[wire.PortabilityJob]:
        return Call("GET", f"{self.prefix}/export/jobs/{_seg(job_id)}", model(wire.PortabilityJob), idempotent=True)

    def create_import_job(self, size: int) -> Call[wire.PortabilityJob]:
        return Call("POST", f"{self.prefix}/import/jobs", model(wire.PortabilityJob), json={"size": size})

    def start_import_job(self, job_id: str) -> Call[wire.PortabilityJob]:
        # A second start answers the job as it is: safe to retry.
        return Call("POST", f"{self.prefix}/import/jobs/{_seg(job_id)}/start", model(wire.PortabilityJob),
                    idempotent=True)

    def get_import_job(self, job_id: str) -> Call[wire.PortabilityJob]:
        return Call("GET", f"{self.prefix}/import/jobs/{_seg(job_id)}", model(wire.PortabilityJob), idempotent=True)

    def _entity_path(self, type: str, name: str) -> str:
        return f"{self.prefix}/entities/{_seg(type)}/{_seg(name)}"

    def get_entity(self, type: str, name: str, *, as_of: str | None, limit: int | None) -> Call[wire.EntityDetail]:
        return Call("GET", self._entity_path(type, name), model(wire.EntityDetail),
                    params={"asOf": as_of, "limit": limit}, idempotent=True)

    def delete_entity(self, type: str, name: str) -> Call[str | None]:
        return Call("DELETE", self._entity_path(type, name), receipt_id, idempotent=True)

    def attribute_history(self, type: str, name: str, key: str) -> Call[wire.AttributeHistory]:
        return Call("GET", f"{self._entity_path(type, name)}/history/{_seg(key)}", model(wire.AttributeHistory),
                    idempotent=True)

    def page(self, path: str, params: dict[str, Any], cursor: str | None, page_size: int | None, *,
             root: bool = False) -> Call[Any]:
        """One page of a collection (``items`` or ``history`` + ``page``), as raw JSON; ``root``:
        ``path`` names no context (``/api/v1/contexts``)."""
        return Call("GET", path if root else f"{self.prefix}{path}", lambda r: r.json(),
                    params={**params, "limit": page_size, "cursor": cursor}, idempotent=True)

    def entity_path(self, type: str, name: str) -> str:
        return f"/entities/{_seg(type)}/{_seg(name)}"

    def resolve_uncertainty(self, uncertainty_id: str, accepted_value: str, *, note: str | None
                            ) -> Call[wire.ResolveUncertaintyResponse]:
        return Call("POST", f"{self.prefix}/uncertainty/{_seg(uncertainty_id)}/resolve",
                    model(wire.ResolveUncertaintyResponse), json=_body(acceptedValue=accepted_value, note=note))

    # --- one fact by id -----------------------------------------------------------------------
    # (``fact_collection`` below names the collection an id belongs to)

    _FACT_MODELS = {"attributes": "MemoryAttribute", "relations": "MemoryRelation", "actions": "MemoryAction",
                    "instructions": "MemoryInstruction"}

    def get_fact(self, collection: str, fact_id: str) -> Call[Any]:
        parse = model(getattr(wire, self._FACT_MODELS[collection]))
        return Call("GET", f"{self.prefix}/{collection}/{_seg(fact_id)}", parse, idempotent=True)

    def delete_fact(self, collection: str, fact_id: str, *, purge: bool | None) -> Call[wire.ForgetResponse]:
        params = {"purge": "true"} if purge else None
        return Call("DELETE", f"{self.prefix}/{collection}/{_seg(fact_id)}", model(wire.ForgetResponse),
                    params=params, idempotent=True)

    def correct_fact(self, collection: str, fact_id: str, value: str, *, note: str | None, observed_at: str | None,
                     idempotency_key: str | None) -> Call[wire.CorrectFactResponse]:
        return Call("PATCH", f"{self.prefix}/{collection}/{_seg(fact_id)}", model(wire.CorrectFactResponse),
                    json=_body(value=value, note=note, observedAt=observed_at),
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
                    idempotent=True, keyed_write=True)

    # --- documents ------------------------------------------------------------------------

    def upload_document(self, source: DocumentSource, *, title: str | None, filename: str | None,
                        format: str | None, scopes: Scopes | None, labels: list[str] | None,
                        observed_at: str | None, content_type: str | None = None
                        ) -> Call[wire.UploadDocumentResponse]:
        name, content = _document_content(source, filename)
        fields = _body(title=title, filename=filename, format=format, observedAt=observed_at,
                       scopes=json.dumps(_scopes(scopes)) if scopes is not None else None,
                       labels=json.dumps(labels) if labels is not None else None)
        ctype = content_type or document_type(name)
        # The service stores the same content once (a repeat answers deduplicated), so a retry
        # after a lost reply cannot store the document twice.
        return Call("POST", f"{self.prefix}/documents", model(wire.UploadDocumentResponse),
                    files={"file": (name, content, ctype)}, data=fields, idempotent=True)

    def create_document_upload(self, size: int, *, title: str | None, filename: str | None, format: str | None,
                               scopes: Scopes | None, labels: list[str] | None, observed_at: str | None,
                               content_type: str | None = None) -> Call[wire.DocumentUploadTicket]:
        body = _body(size=size, title=title, filename=filename, format=format, observedAt=observed_at,
                     scopes=_scopes(scopes) if scopes is not None else None, labels=labels, mimeType=content_type)
        return Call("POST", f"{self.prefix}/documents/uploads", model(wire.DocumentUploadTicket), json=body)

    def complete_document_upload(self, document_id: str) -> Call[wire.Document]:
        # A repeat answers the document as it is: safe to retry.
        return Call("POST", f"{self.prefix}/documents/{_seg(document_id)}/complete", model(wire.Document),
                    idempotent=True)

    def get_document(self, document_id: str) -> Call[wire.Document]:
        return Call("GET", f"{self.prefix}/documents/{_seg(document_id)}", model(wire.Document), idempotent=True)

    def get_document_raw(self, document_id: str) -> Call[httpx.Response]:
        """The original's bytes (200), or a 303 to a presigned URL (a large original on S3)."""
        return Call("GET", f"{self.prefix}/documents/{_seg(document_id)}/raw", lambda response: response,
                    idempotent=True)

    def reprocess_document(self, document_id: str, *, idempotency_key: str | None = None
                           ) -> Call[wire.ReprocessDocumentResponse]:
        # A repeat while one runs queues nothing: safe to retry (and keyed, a replay).
        return Call("PUT", f"{self.prefix}/documents/{_seg(document_id)}", model(wire.ReprocessDocumentResponse),
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()}, idempotent=True,
                    keyed_write=True)

    def recompute_document_links(self, *, idempotency_key: str | None = None) -> Call[wire.RecomputeLinksResponse]:
        return Call("POST", f"{self.prefix}/documents/recompute-links", model(wire.RecomputeLinksResponse),
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()}, idempotent=True,
                    keyed_write=True)

    def delete_document(self, document_id: str) -> Call[str | None]:
        return Call("DELETE", f"{self.prefix}/documents/{_seg(document_id)}", receipt_id, idempotent=True)

    def query_documents(self, query: str, *, k: int | None, mode: str | None, threshold: float | None,
                        expand_graph: bool | None, filter: dict[str, Any] | None) -> Call[wire.DocumentQueryResponse]:
        body = _body(query=query, k=k, mode=mode, threshold=threshold, expandGraph=expand_graph, filter=filter)
        return Call("POST", f"{self.prefix}/documents/query", model(wire.DocumentQueryResponse), json=body,
                    idempotent=True)

    @staticmethod
    def keyword_params(*, q: str | None, min_document_count: int | None, sort: str | None) -> dict[str, Any]:
        return {"q": q, "minDocumentCount": min_document_count, "sort": sort}

    def get_document_keyword(self, normalised: str) -> Call[wire.KeywordDetail]:
        return Call("GET", f"{self.prefix}/documents/keywords/{_seg(normalised)}", model(wire.KeywordDetail),
                    idempotent=True)

    def search_document_keywords(self, query: str, *, k: int | None,
                                 threshold: float | None) -> Call[wire.KeywordSearchResponse]:
        return Call("POST", f"{self.prefix}/documents/keywords/search", model(wire.KeywordSearchResponse),
                    json=_body(query=query, k=k, threshold=threshold), idempotent=True)

    def keywords_of_document(self, document_id: str) -> Call[wire.DocumentKeywords]:
        return Call("GET", f"{self.prefix}/documents/{_seg(document_id)}/keywords", model(wire.DocumentKeywords),
                    idempotent=True)

    # --- threads --------------------------------------------------------------------------

    def thread_path(self, thread_id: str, suffix: str = "") -> str:
        return f"{self.prefix}/threads/{_seg(thread_id, ':')}{suffix}"

    def append_thread(self, thread_id: str, text: str, *, entity_id: str | None, metadata: dict[str, Any] | None,
                      acl_readers: list[str] | None, idempotency_key: str | None
                      ) -> Call[httpx.Response]:
        body: dict[str, Any] = _body(text=text, entity_id=entity_id, metadata=metadata)
        if acl_readers is not None:  # [] is meaningful: quarantine
            body["acl_readers"] = list(acl_readers)
        return Call("POST", self.thread_path(thread_id, "/turns"), lambda r: r, json=body,
                    headers={"Idempotency-Key": idempotency_key or new_idempotency_key()},
                    idempotent=True, keyed_write=True)

    def thread_turns(self, thread_id: str, params: dict[str, Any]) -> Call[Any]:
        return Call("GET", self.thread_path(thread_id, "/turns"), lambda r: r.json(), params=params,
                    idempotent=True)

    def get_thread_turn(self, thread_id: str, turn_index: int) -> Call[wire.ThreadTurn]:
        return Call("GET", self.thread_path(thread_id, f"/turns/{int(turn_index)}"), model(wire.ThreadTurn),
                    idempotent=True)

    def get_thread(self, thread_id: str) -> Call[wire.Thread]:
        return Call("GET", self.thread_path(thread_id), model(wire.Thread), idempotent=True)

    def set_thread_acl(self, thread_id: str, acl_readers: list[str] | None) -> Call[wire.Thread]:
        return Call("PUT", self.thread_path(thread_id, "/acl"), model(wire.Thread),
                    json={"acl_readers": acl_readers}, idempotent=True)

    def thread_context(self, thread_id: str, query: str, *, last_n_turns: int, recent_first: bool,
                       entity_id: str | None) -> Call[list[wire.ThreadContextItem]]:
        body = _body(query=query, last_n_turns=last_n_turns, recent_first=recent_first, entity_id=entity_id)
        return Call("POST", self.thread_path(thread_id, "/context"),
                    lambda r: [wire.ThreadContextItem.model_validate(i) for i in r.json()["items"]],
                    json=body, idempotent=True)


#: The content type an upload declares for its file name's suffix (the service checks it against the bytes).
DOCUMENT_TYPES = {".md": "text/markdown", ".markdown": "text/markdown", ".txt": "text/plain",
                  ".html": "text/html", ".htm": "text/html", ".pdf": "application/pdf",
                  ".docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document"}


def document_type(name: str) -> str:
    """``text/plain`` for a name without a known suffix (``document.txt`` when none was given)."""
    lower = name.lower()
    return next((t for suffix, t in DOCUMENT_TYPES.items() if lower.endswith(suffix)), "text/plain")


def _document_content(source: DocumentSource, filename: str | None) -> tuple[str, bytes]:
    """(file name, bytes) of a path, bytes, or a binary or text file object."""
    if isinstance(source, bytes):
        return filename or "document.txt", source
    if isinstance(source, str | os.PathLike):
        path = Path(source)
        return filename or path.name, path.read_bytes()
    data = source.read()
    name = filename or os.path.basename(getattr(source, "name", "") or "") or "document.txt"
    if isinstance(source, io.TextIOBase) or isinstance(data, str):
        data = data.encode("utf-8")
    return name, data


#: The collection of a fact id, by its prefix (the id names its kind: ``attr_...``).
FACT_COLLECTIONS = {"attr": "attributes", "rel": "relations", "act": "actions", "instr": "instructions"}


def fact_collection(fact_id: str) -> str | None:
    """``attributes``, ``relations``, ``actions`` or ``instructions`` for a fact id, else None."""
    return FACT_COLLECTIONS.get(str(fact_id).split("_", 1)[0])

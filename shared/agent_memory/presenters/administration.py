"""Who am I, keys, principals and scopes on the wire (``/me``, ``/keys``, ``/principals``,
``/scopes``): the official client's shapes (``surrealdb.spectron`` ``WhoamiResponse``,
``MintedKey``, ``KeyDetail``, ``Principal``, ``EffectiveGrants``, ``ScopeNode``,
``ForgetScopeResponse``); lists are bare arrays, as it reads them."""

from __future__ import annotations

from typing import Any

from agent_memory.services.operations.administration import (
    Effective,
    KeyView,
    MintedKey,
    PrincipalView,
    WhoAmI,
)
from agent_memory.services.operations.portability import ImportResult
from agent_memory.services.operations.portability_jobs import NDJSON, PortabilityJob
from agent_memory.services.operations.scope_registry import ScopeForgotten, ScopeNode


def whoami(me: WhoAmI) -> dict[str, Any]:
    return {"principalId": me.principal_id, "displayName": me.display_name, "kind": me.kind,
            "enforce": me.enforce, "grants": me.grants, "effectiveGrants": me.effective_grants,
            "delegatedPrincipalId": me.delegated_principal_id, "tokenGrants": me.token_grants}


def minted_key(key: MintedKey) -> dict[str, Any]:
    return {"id": key.id, "key": key.key, "name": key.name, "validUntil": key.valid_until}


def key_detail(key: KeyView) -> dict[str, Any]:
    return {"id": key.id, "name": key.name, "principal": key.principal, "createdAt": key.created_at,
            "grants": key.grants, "contexts": key.contexts, "lastUsedAt": key.last_used_at,
            "validUntil": key.valid_until}


def key_list(keys: list[KeyView]) -> list[dict[str, Any]]:
    return [key_detail(k) for k in keys]


def principal(p: PrincipalView) -> dict[str, Any]:
    return {"id": p.id, "displayName": p.display_name, "kind": p.kind, "grants": p.grants}


def principal_list(ps: list[PrincipalView]) -> list[dict[str, Any]]:
    return [principal(p) for p in ps]


def effective(e: Effective) -> dict[str, Any]:
    return {"path": e.path, "verbs": e.verbs, "asOf": e.as_of}


def scope_node(node: ScopeNode) -> dict[str, Any]:
    return {"path": node.path, "createdAt": node.created_at, "displayName": node.display_name,
            "description": node.description, "tombstonedAt": node.tombstoned_at}


def scope_list(nodes: list[ScopeNode]) -> list[dict[str, Any]]:
    return [scope_node(n) for n in nodes]


def scope_forgotten(result: ScopeForgotten) -> dict[str, Any]:
    """``forgotten``: what this call removed; ``continuation`` only when more is left (call
    again with it), ``complete`` always."""
    body: dict[str, Any] = {"forgotten": result.forgotten, "complete": result.continuation is None}
    if result.continuation is not None:
        body["continuation"] = result.continuation
    return body


def imported(result: ImportResult) -> dict[str, Any]:
    return {"contextId": result.context_id, "records": result.records, "written": result.written,
            "unchanged": result.unchanged, "originals": result.originals, "principals": result.principals,
            "byType": dict(sorted(result.by_type.items()))}


def portability_job(job: PortabilityJob) -> dict[str, Any]:
    """An export or import job (wire ``PortabilityJob``): fields that do not apply are left out."""
    out: dict[str, Any] = {"id": job.id, "kind": job.kind, "contextId": job.context_id, "state": job.state,
                           "createdAt": job.created_at, "updatedAt": job.updated_at,
                           "recordsDone": job.records_done, "recordsTotal": job.records_total,
                           "bytes": job.bytes, "size": job.size}
    if job.upload_url is not None:
        out.update(uploadUrl=job.upload_url, uploadMethod="PUT",
                   uploadHeaders={"Content-Type": NDJSON, "Content-Length": str(job.size)},
                   uploadExpiresAt=job.upload_expires_at)
    if job.download_url is not None:
        out.update(downloadUrl=job.download_url, downloadExpiresAt=job.download_expires_at)
    if job.result is not None:
        out["result"] = job.result
    if job.error is not None:
        out["error"] = job.error
    return {k: v for k, v in out.items() if v is not None}

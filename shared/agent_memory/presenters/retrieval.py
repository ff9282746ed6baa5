"""Recall on the wire: ``POST /query`` hits and the formatted context of ``POST /context`` and
``POST /sessions/{id}/context``."""

from __future__ import annotations

from typing import Any

from agent_memory.services.retrieval.hits import Hit, RetrievalResult
from agent_memory.services.retrieval.prompt_context import PromptContext


def hit(h: Hit) -> dict[str, Any]:
    """A ``/query`` hit: ``{id, text, source, kind, score, occurredAt, role, ...}`` (``kind``
    repeats ``source`` under a citation's name for it; the official client reads ``source``)."""
    out: dict[str, Any] = {"id": h.id, "text": h.text, "source": h.kind, "kind": h.kind, "score": round(h.score, 6),
                           "occurredAt": h.occurred_at, "role": h.role}
    if h.session_id:
        out["sessionId"] = h.session_id
    if h.source_ids:
        out["sourceIds"] = list(h.source_ids)
    if h.kind == "chunk":
        for key in ("documentId", "documentTitle", "positionPercent", "page"):
            out[key] = h.metadata.get(key)
    return out


def query(result: RetrievalResult) -> dict[str, Any]:
    return {"tier": result.tier, "hits": [hit(h) for h in result.hits], "queryMs": round(result.query_ms, 2),
            "trace": result.trace}


def sources(markers: dict[str, Any]) -> list[dict[str, Any]]:
    """``[{marker, id, source, ...}]``: what each marker of the context stands for."""
    out = []
    for marker, hit in markers.items():
        item = {"marker": f"[{marker}]", "id": hit.id, "source": hit.kind, "score": round(float(hit.score), 6),
                "occurredAt": getattr(hit, "occurred_at", None), "role": getattr(hit, "role", None)}
        meta = getattr(hit, "metadata", None) or {}
        if hit.kind == "chunk":
            item["documentTitle"] = meta.get("documentTitle")
            item["positionPercent"] = meta.get("positionPercent")
            item["page"] = meta.get("page")
        out.append(item)
    return out


def context(result: PromptContext) -> dict[str, Any]:
    body: dict[str, Any] = {"context": result.text, "tier": result.tier, "queryMs": round(result.query_ms, 2),
                            "sources": sources(result.markers)}
    if result.excluded is not None:
        body["excluded"] = list(result.excluded)
    return body

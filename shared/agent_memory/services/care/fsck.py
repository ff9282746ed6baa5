"""``POST /fsck``: read-only integrity checks of the memory the caller can read.

- **contradictions**: current values of one single-valued key of one entity that disagree
  (possible across scopes, and between sources a write never reconciled); observations are
  left out (consolidation supersedes those).
- **duplicates**: pairs of turns, or of current attributes of one entity and key, whose
  word sets overlap at least ``duplicateThreshold`` (Jaccard; identical normalised text is 1.0).
  Turns are compared among the ``TURN_WINDOW`` most recent ones (bounded work); questions and
  assistant replies only with ``includeEchoes`` (asking again is not a duplicate fact).
- **injection**: stored text that tries to steer a model (``rules/injection.py``): turns,
  attribute values, action summaries, instructions and document chunks.

Each finding has the ids involved and a reason; each list holds at most ``maxResults``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline
from agent_memory.kernel import storage_keys as keys
from agent_memory.models.care import FsckRequest
from agent_memory.ports import RecordStore
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.injection import injection_reason
from agent_memory.rules.questions import asks_only
from agent_memory.rules.vocabulary import normalise_value
from agent_memory.services.care.common import current_rows, iter_turns, rows_of

TURN_WINDOW = 500
_WORD = re.compile(r"\w+")


@dataclass
class Finding:
    ids: list[str]
    reason: str
    entity: str | None = None
    key: str | None = None
    values: list[str] = field(default_factory=list)
    score: float | None = None


@dataclass
class FsckResult:
    contradictions: list[Finding] = field(default_factory=list)
    duplicates: list[Finding] = field(default_factory=list)
    injection: list[Finding] = field(default_factory=list)

    @property
    def total(self) -> int:
        return len(self.contradictions) + len(self.duplicates) + len(self.injection)


def _words(text: str) -> frozenset[str]:
    return frozenset(w.lower() for w in _WORD.findall(text or ""))


def similarity(a: frozenset[str], b: frozenset[str]) -> float:
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)


def _observation(data: dict[str, Any]) -> bool:
    return (data.get("source") or {}).get("kind") == "observation"


def _echo(turn: dict[str, Any]) -> bool:
    """A question or an assistant reply (neither is evidence, docs/decisions.md)."""
    return turn.get("role") == "assistant" or asks_only(turn.get("content") or "")


class FsckService:
    def __init__(self, store: RecordStore, *, scan_cap: int):
        self.store = store
        self.scan_cap = scan_cap

    def fsck(self, ctx: RequestContext, req: FsckRequest) -> FsckResult:
        checks = [req.check] if req.check else ["contradictions", "duplicates", "injection"]
        result = FsckResult()
        attrs = [r.data for r in current_rows(self.store, ctx, "attribute", self.scan_cap)
                 if not _observation(r.data)]
        turns = None
        if "duplicates" in checks or "injection" in checks:
            turns = [t.data for t in iter_turns(self.store, ctx, self.scan_cap)]
        if "contradictions" in checks:
            result.contradictions = self._contradictions(attrs)[:req.max_results]
        if "duplicates" in checks:
            compared = turns or []
            if not req.include_echoes:
                compared = [t for t in compared if not _echo(t)]
            result.duplicates = self._duplicates(attrs, compared, req.duplicate_threshold, req.max_results)
        if "injection" in checks:
            result.injection = self._injection(ctx, attrs, turns or [], req.max_results)
        return result

    @staticmethod
    def _contradictions(attrs: list[dict[str, Any]]) -> list[Finding]:
        slots: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for a in attrs:
            if vocab.cardinality(a["key"]) == "single":
                slots.setdefault((a["entityId"], a["key"]), []).append(a)
        out = []
        for (entity, key), rows in sorted(slots.items()):
            values = sorted({normalise_value(r["value"]) for r in rows})
            if len(values) < 2:
                continue
            shown = sorted({r["value"] for r in rows})
            sources = sorted({(r.get("source") or {}).get("kind", "turn") for r in rows})
            scopes = {repr(r.get("scopes") or []) for r in rows}
            where = "scopes" if len(scopes) > 1 else "sources"
            out.append(Finding(sorted(r["id"] for r in rows),
                               f"{len(values)} current values of single-valued {key} across {where} "
                               f"({', '.join(sources)})", entity=entity, key=key, values=shown))
        return out

    @staticmethod
    def _duplicates(attrs: list[dict[str, Any]], turns: list[dict[str, Any]], threshold: float,
                    limit: int) -> list[Finding]:
        out: list[Finding] = []
        by_slot: dict[tuple[str, str], list[dict[str, Any]]] = {}
        for a in attrs:
            by_slot.setdefault((a["entityId"], a["key"]), []).append(a)
        for (entity, key), rows in sorted(by_slot.items()):
            for x, y in combinations(rows, 2):
                score = similarity(_words(x["value"]), _words(y["value"]))
                if normalise_value(x["value"]) == normalise_value(y["value"]):
                    score = 1.0
                if score >= threshold:
                    out.append(Finding(sorted([x["id"], y["id"]]), f"near-identical values of {key} ({score:.2f})",
                                       entity=entity, key=key, values=[x["value"], y["value"]], score=round(score, 4)))
        window = [t for t in turns if (t.get("content") or "").strip()][-TURN_WINDOW:]
        sets = [_words(t["content"]) for t in window]
        for i, j in combinations(range(len(window)), 2):
            if len(out) >= limit:
                break
            if i % 50 == 0 and j == i + 1:
                deadline.check("the duplicate check")
            score = similarity(sets[i], sets[j])
            if score >= threshold:
                out.append(Finding(sorted([window[i]["id"], window[j]["id"]]),
                                   f"near-identical turns ({score:.2f})", score=round(score, 4)))
        return out[:limit]

    def _injection(self, ctx: RequestContext, attrs: list[dict[str, Any]], turns: list[dict[str, Any]],
                   limit: int) -> list[Finding]:
        texts: list[tuple[str, str, str]] = [(t["id"], "turn", t.get("content") or "") for t in turns]
        texts += [(a["id"], "attribute", a.get("value") or "") for a in attrs]
        texts += [(r.data["id"], "action", r.data.get("summary") or "")
                  for r in rows_of(self.store, ctx, keys.actions_pk(ctx), ["action"], self.scan_cap)]
        texts += [(r.data["id"], "instruction", r.data.get("description") or "")
                  for r in rows_of(self.store, ctx, keys.instructions_pk(ctx), ["instruction"], self.scan_cap)]
        for doc in rows_of(self.store, ctx, keys.documents_pk(ctx), ["document"], self.scan_cap):
            chunks = rows_of(self.store, ctx, keys.chunks_pk(ctx, doc.data["id"]), ["chunk"], self.scan_cap)
            texts += [(c.data.get("id") or c.sk, "chunk", c.data.get("text") or "") for c in chunks]
        out = []
        for rid, kind, text in texts:
            found = injection_reason(text)
            if found is not None:
                family, name = found
                out.append(Finding([rid], f"{kind} text looks like a {family.replace('_', ' ')} ({name})"))
                if len(out) >= limit:
                    break
        return out

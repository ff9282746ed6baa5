"""Corpus search, ``POST /documents/query``: retrieval restricted to document chunks.

It is ``RetrievalService.retrieve`` with ``include=["chunk"]`` (the same legs, recipes, ranking
rules, reranker and visibility), plus what the documents route adds (docs/documents.md,
"Corpus search"):

- ``filter``: document metadata every hit's document must match (``FILTER_FIELDS``), resolved
  to document ids first (at most ``FILTER_DOCUMENTS`` documents read) and applied inside the
  search as the unit's source, before any top-k cut;
- ``score``: the retrieval score over the best hit's, so the best chunk scores 1.0 and
  ``threshold`` (0 to 1) drops the chunks scoring below that share of it;
- ``expandGraph``: the entities the top chunks mention (the subjects and objects of the
  facts extracted from them) lead to the other chunks those entities' facts were extracted
  from. Each such chunk comes after the direct hits, scored ``GRAPH_DECAY`` times the score
  of the chunk that led to it, with its ``graphEvidence`` (entity, fact, and the chunk it was
  reached from); at most ``k`` are added, ``threshold`` and ``filter`` apply to them too.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agent_memory.access import scopes
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.document_records import Document
from agent_memory.ports import RecordStore, SearchFilter, SearchIndex, SearchUnavailable, SearchUnit
from agent_memory.ranking.visibility import unit_visible
from agent_memory.services.retrieval.hits import Hit, hit_text
from agent_memory.services.retrieval.retrieval_service import RetrievalService

GRAPH_DECAY = 0.5
SEED_CHUNKS = 5  # top chunks whose entities are followed
GRAPH_FACTS = 50  # facts read per step of the expansion
FILTER_DOCUMENTS = 5000
FACT_KINDS = ["attribute", "relation", "action"]
# filter key -> the document field it matches (a string, or any of a list of strings);
# ``labels``: the document carries every one given.
FILTER_FIELDS = {"id": "id", "documentId": "id", "title": "title", "source": "source", "mimeType": "mime_type",
                 "mime_type": "mime_type", "format": "format", "filename": "filename", "status": "status",
                 "labels": "labels"}


@dataclass
class CorpusHit:
    hit: Hit
    score: float
    graph_evidence: list[dict[str, Any]] | None = None


@dataclass
class CorpusResult:
    hits: list[CorpusHit]
    query_ms: float
    documents: dict[str, Document] = field(default_factory=dict)
    degraded: str | None = None


def check_filter(flt: Mapping[str, Any] | None) -> dict[str, list[str]]:
    """A ``filter`` as field -> accepted values; a key or value it cannot match is a 400."""
    out: dict[str, list[str]] = {}
    for key, value in (flt or {}).items():
        if key not in FILTER_FIELDS:
            raise InvalidRequest(f"filter.{key}: not a document field one can filter by "
                                 f"(known: {', '.join(sorted(FILTER_FIELDS))})", field=f"filter.{key}")
        values = value if isinstance(value, list) else [value]
        if not values or not all(isinstance(v, str) and v and len(v) <= 512 for v in values) or len(values) > 100:
            raise InvalidRequest(f"filter.{key}: a non-empty string or a list of at most 100 of them",
                                 field=f"filter.{key}")
        out.setdefault(FILTER_FIELDS[key], []).extend(values)
    return out


def _matches(doc: Document, wanted: dict[str, list[str]]) -> bool:
    for name, values in wanted.items():
        if name == "labels":
            if not set(values) <= set(doc.labels or []):
                return False
        elif getattr(doc, name) not in values:
            return False
    return True


class CorpusSearch:
    def __init__(self, store: RecordStore, search: SearchIndex | None, retrieval: RetrievalService):
        self._store = store
        self._search = search
        self._retrieval = retrieval

    def query(self, ctx: RequestContext, query: str, *, k: int, mode: str = "hybrid", threshold: float | None = None,
              expand_graph: bool = False, filter: Mapping[str, Any] | None = None) -> CorpusResult:
        started = time.perf_counter()
        wanted = check_filter(filter)
        documents = self._documents(ctx, wanted) if wanted else None
        result = self._retrieval.retrieve(ctx, query, k=k, mode=mode, include=["chunk"],
                                          documents=list(documents) if documents is not None else None)
        best = max((h.score for h in result.hits), default=0.0) or 1.0
        hits = [CorpusHit(h, round(h.score / best, 6)) for h in result.hits if h.kind == "chunk"]
        if threshold is not None:
            hits = [h for h in hits if h.score >= threshold]
        degraded = result.degraded
        if expand_graph and hits:
            try:
                hits += self._expand(ctx, query, hits, k, threshold, documents)
            except SearchUnavailable:
                degraded = degraded or "search-unavailable"
        docs = documents if documents is not None else self._load(ctx, {h.hit.metadata.get("documentId")
                                                                       for h in hits})
        return CorpusResult(hits, (time.perf_counter() - started) * 1000, docs, degraded)

    # --- the metadata filter --------------------------------------------------------------

    def _documents(self, ctx: RequestContext, wanted: dict[str, list[str]]) -> dict[str, Document]:
        """The documents ``ctx`` may read that match the filter, by id."""
        found: dict[str, Document] = {}
        after = None
        read = 0
        while read < FILTER_DOCUMENTS:
            page = self._store.query(keys.documents_pk(ctx), after=after, limit=500, read_region=ctx.read_region)
            for r in page.records:
                if r.data.get("kind") != "document":
                    continue
                doc = Document.from_item(r.data)
                if not doc.deleted and scopes.visible(doc.scopes or [], ctx.read_region) and _matches(doc, wanted):
                    found[doc.id] = doc
            read += len(page.records)
            after = page.last_key
            if not after or not page.records:
                break
        return found

    def _load(self, ctx: RequestContext, ids: set[Any]) -> dict[str, Document]:
        wanted = sorted(i for i in ids if isinstance(i, str) and i)
        pk = keys.documents_pk(ctx)
        out: dict[str, Document] = {}
        for i in range(0, len(wanted), 100):
            for r in self._store.batch_get([(pk, d) for d in wanted[i:i + 100]]):
                doc = Document.from_item(r.data)
                if not doc.deleted:
                    out[doc.id] = doc
        return out

    # --- expandGraph ----------------------------------------------------------------------

    def _filter(self, ctx: RequestContext, **fields: Any) -> SearchFilter:
        """The search filter retrieval applies for ``ctx`` (no admin bypass of reader lists)."""
        return SearchFilter(context_id=ctx.context_id, partition=ctx.partition,
                            read_region=list(ctx.read_region) if ctx.read_region is not None else None,
                            principals=ctx.principals, admin=False, **fields)

    def _expand(self, ctx: RequestContext, query: str, hits: list[CorpusHit], k: int, threshold: float | None,
                documents: dict[str, Document] | None) -> list[CorpusHit]:
        index = self._search
        if index is None:
            return []
        seeds = hits[:SEED_CHUNKS]
        score_of = {h.hit.id: h.score for h in seeds}
        # 1. the facts extracted from the top chunks, and the entities they are about
        mentioned = index.search(query, self._filter(ctx, kinds=FACT_KINDS, source_ids=list(score_of)),
                                 k=GRAPH_FACTS, mode="vector")
        reached_from: dict[str, str] = {}  # entity -> the best seed chunk that mentions it
        for found in mentioned:
            seed = max((s for s in found.unit.source_ids if s in score_of), key=lambda s: score_of[s], default=None)
            for eid in found.unit.entity_ids:
                if seed is not None and (eid not in reached_from or score_of[seed] > score_of[reached_from[eid]]):
                    reached_from[eid] = seed
        if not reached_from:
            return []
        # 2. the other facts about those entities, and the chunks they were extracted from
        about = index.search(query, self._filter(ctx, kinds=FACT_KINDS, any_labels=sorted(reached_from)),
                             k=GRAPH_FACTS, mode="vector")
        have = {h.hit.id for h in hits}
        evidence: dict[str, list[dict[str, Any]]] = {}
        for found in about:
            fact = found.unit
            for chunk_id in fact.source_ids:
                if chunk_id in have or not chunk_id.startswith("chunk_"):
                    continue
                for eid in fact.entity_ids:
                    if eid in reached_from:
                        evidence.setdefault(chunk_id, []).append(
                            {"entity": eid, "factId": fact.id, "factKind": fact.kind, "fact": fact.text,
                             "via": reached_from[eid]})
        # 3. those chunks, as the reader may see them, scored after the chunk that led there
        chunk_filter = self._filter(ctx, kinds=["chunk"],
                                    source_ids=list(documents) if documents is not None else None)
        now = timeutil.now_iso()
        out: list[CorpusHit] = []
        for chunk_id, found_evidence in evidence.items():
            unit = index.get(ctx.context_id, chunk_id)
            if unit is None or not _visible_chunk(unit, chunk_filter, now):
                continue
            score = round(GRAPH_DECAY * max(score_of[e["via"]] for e in found_evidence), 6)
            if threshold is not None and score < threshold:
                continue
            hit = Hit(id=unit.id, kind=unit.kind, text=hit_text(unit), score=score, occurred_at=unit.occurred_at,
                      source_ids=list(unit.source_ids), metadata=dict(unit.metadata))
            out.append(CorpusHit(hit, score, found_evidence))
        out.sort(key=lambda h: (-h.score, h.hit.id))
        return out[:k]


def _visible_chunk(unit: SearchUnit, flt: SearchFilter, now: str) -> bool:
    return unit.kind == "chunk" and unit.partition == flt.partition and unit_visible(unit, flt, now)


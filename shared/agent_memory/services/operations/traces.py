"""Retrieval and response traces, read back with GET /traces/{id}, listed (GET /traces) and
summarised over a window (GET /traces/stats).

A chat call writes its retrieval trace first (always: what was asked, what retrieval
returned) and its response trace only on success (tier, hits used, model, token counts,
latency). Both share the returned ``traceId``. A memory-care verb (consolidate, reflect,
elaborate: ``services/care/common.CareTrace``) writes both parts under its ``traceId``, each
naming its ``verb``: what it read, and what it did.
"""

from __future__ import annotations

import hashlib
import time
from collections import Counter
from typing import Any

from agent_memory.access import scopes as scope_lib
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import NotFound
from agent_memory.kernel.ids import new_id, ulid_floor
from agent_memory.ports import Condition, ConditionFailed, Record, RecordStore
from agent_memory.services import paging

TRACE_TTL_S = 30 * 24 * 3600
#: Trace rows one list or stats call reads at most (two rows a trace): a caller whose own
#: traces are sparse among others' gets a shorter list, and stats say they were truncated.
TRACE_SCAN_CAP = 5000
_SCAN_BATCH = 200
DEFAULT_WINDOW_HOURS = 24
MAX_WINDOW_HOURS = TRACE_TTL_S // 3600
_HIDDEN = ("kind", "part", "traceId", "principal", "readRegion")


def traces_pk(ctx: RequestContext) -> str:
    return f"{keys.base(ctx)}#traces"


def readable(ctx: RequestContext, data: dict[str, Any]) -> bool:
    """A trace shows what one caller's retrieval saw: it is readable by the principal it was
    made for, when the reader's region covers the region it was made with (so a delegated
    or narrower reader never sees hits from outside its own region), and by an admin.
    Anyone else gets the same 404 as for a missing trace."""
    if ctx.admin:
        return True
    if data.get("principal", ctx.principal) != ctx.principal:
        return False
    made_with = data.get("readRegion", ctx.read_region)
    if ctx.read_region is None:
        return True
    if made_with is None:
        return False
    return all(scope_lib.path_covered(p, ctx.read_region) for p in made_with)


class TraceStore:
    def __init__(self, store: RecordStore):
        self.store = store

    def new_id(self) -> str:
        return new_id("trace")

    def put(self, ctx: RequestContext, trace_id: str, part: str, data: dict[str, Any]) -> None:
        self.store.put(self.record(ctx, trace_id, part, data))

    def record(self, ctx: RequestContext, trace_id: str, part: str, data: dict[str, Any]) -> Record:
        """The row ``put`` writes, for a caller that commits it in its own transaction."""
        return Record(pk=traces_pk(ctx), sk=f"{trace_id}#{part}", expires_at=int(time.time()) + TRACE_TTL_S,
                        data={"kind": "trace", "part": part, "traceId": trace_id, "createdAt": timeutil.now_iso(),
                              "principal": ctx.principal,
                              "readRegion": None if ctx.read_region is None else sorted(ctx.read_region),
                              **data})

    def get(self, ctx: RequestContext, trace_id: str) -> dict[str, Any]:
        records = self.store.query(traces_pk(ctx), prefix=f"{trace_id}#", limit=10).records if trace_id else []
        if not records or not all(readable(ctx, r.data) for r in records):
            raise NotFound(f"trace {trace_id} does not exist")
        return _assemble(trace_id, records)

    def _newest(self, ctx: RequestContext, *, since_ms: int | None = None, want: int | None = None,
                ) -> tuple[list[dict[str, Any]], bool]:
        """The caller's readable traces, newest first (trace ids are ULIDs: key order is
        creation order), each assembled from its parts; at most ``want`` of them, only those
        made at or after ``since_ms``; and whether the scan cap cut the read short. A trace
        any of whose parts the caller may not read is left out whole (as ``get`` 404s it)."""
        between = (f"trace_{ulid_floor(since_ms)}", "trace_~") if since_ms is not None else None
        prefix = None if between else "trace_"
        now = int(time.time())
        grouped: dict[str, list[Record]] = {}
        order: list[str] = []
        after: dict[str, str] | None = None
        scanned = 0
        truncated = False
        while True:
            page = self.store.query(traces_pk(ctx), prefix=prefix, between=between, after=after,
                                    limit=_SCAN_BATCH, forward=False)
            for record in page.records:
                if record.expires_at is not None and record.expires_at <= now:
                    continue
                tid = record.data.get("traceId") or record.sk.split("#", 1)[0]
                if tid not in grouped:
                    grouped[tid] = []
                    order.append(tid)
                grouped[tid].append(record)
            scanned += page.scanned if page.scanned is not None else len(page.records)
            readable_ids = [t for t in order if all(readable(ctx, r.data) for r in grouped[t])]
            # one more trace than wanted: the last one's other part may be on the next page
            if page.last_key is None or (want is not None and len(readable_ids) > want):
                break
            if scanned >= TRACE_SCAN_CAP:
                truncated = True
                break
            after = page.last_key
        readable_ids = [t for t in order if all(readable(ctx, r.data) for r in grouped[t])]
        if want is not None:
            readable_ids = readable_ids[:want]
        return [_assemble(t, grouped[t]) for t in readable_ids], truncated

    def recent(self, ctx: RequestContext, limit: int) -> list[dict[str, Any]]:
        """``GET /traces``: the caller's most recent traces (every principal's for an admin),
        newest first, each as its headline (``summary``) with its id."""
        found, _ = self._newest(ctx, want=limit)
        return [{k: v for k, v in t.items() if k not in ("retrieval", "response")} for t in found]

    def stats(self, ctx: RequestContext, window_hours: int = DEFAULT_WINDOW_HOURS) -> dict[str, Any]:
        """``GET /traces/stats``: what the caller's traces of the last ``window_hours`` say
        (every principal's for an admin): the questions asked and how they were answered
        (tier, cache, latency), the kinds of memory retrieval returned, and what the chat
        turns changed (facts superseded by a correction, contradictions held as uncertain)."""
        since_ms = int(time.time() * 1000) - window_hours * 3600 * 1000
        found, truncated = self._newest(ctx, since_ms=since_ms)
        return aggregate(found, window_hours, truncated)


    def redact(self, ctx: RequestContext, ids: frozenset[str] | set[str], texts: frozenset[str] | set[str]) -> list[str]:
        """Erasure (forget, purge, session, entity and fact delete): every trace of the context
        whose question was a removed turn (``turnIds``) loses its ``query``, and every string
        of any trace that holds a removed text becomes ``REDACTED``; ids stay (a hit naming a
        removed record is an id, not its text), and ``redacted`` keeps the SHA-256 of each
        string taken out. Returns the trace ids redacted. Rows are rewritten under a version
        condition (a lost race re-reads)."""
        quoted = _quotes(texts)
        if not ids and not quoted:
            return []
        redacted: list[str] = []
        for trace_id, records in self._all(ctx):
            asked = _asked(records, ids)
            for record in records:
                for _ in range(4):
                    data, hashes = _redacted(record.data, asked, quoted)
                    if not hashes:
                        break
                    data["redacted"] = {"at": timeutil.now_iso(),
                                        "hashes": sorted({*(record.data.get("redacted") or {}).get("hashes", []),
                                                          *hashes})}
                    try:
                        self.store.put(Record(record.pk, record.sk, data, version=record.version + 1,
                                              expires_at=record.expires_at), Condition.version_is(record.version))
                        redacted.append(trace_id)
                        break
                    except ConditionFailed:
                        fresh = self.store.get(record.pk, record.sk)
                        if fresh is None:
                            break
                        record = fresh
        return sorted(set(redacted))

    def quoting(self, ctx: RequestContext, ids: frozenset[str] | set[str],
                texts: frozenset[str] | set[str]) -> list[str]:
        """The trace ids that still hold what ``redact`` would take out (a receipt's verify)."""
        quoted = _quotes(texts)
        return sorted(trace_id for trace_id, records in self._all(ctx)
                      if any(_redacted(r.data, _asked(records, ids), quoted)[1] for r in records))

    def holding(self, ctx: RequestContext, ids: set[str], hashes: set[str]) -> list[str]:
        """The trace ids that still hold erased text, known only by ids and SHA-256 hashes (a
        receipt's verify): a string whose hash is one of ``hashes``, or the unredacted
        question of a trace asked by one of the removed turns ``ids``."""
        def holds(value: Any, key: str | None, asked: bool) -> bool:
            if isinstance(value, str):
                return value != REDACTED and bool(value) and (
                    hashlib.sha256(value.encode("utf-8")).hexdigest() in hashes or (asked and key in _FREE_TEXT))
            if isinstance(value, dict):
                return any(holds(v, k, asked) for k, v in value.items() if k != "redacted")
            if isinstance(value, list):
                return any(holds(v, key, asked) for v in value)
            return False

        return sorted(trace_id for trace_id, records in self._all(ctx)
                      if any(holds(r.data, None, _asked(records, ids)) for r in records))

    def _all(self, ctx: RequestContext) -> list[tuple[str, list[Record]]]:
        """Every trace row of the context (expired ones included: they still hold text), by trace."""
        grouped: dict[str, list[Record]] = {}
        for record in paging.scan(self.store, paging.Source(traces_pk(ctx)), batch=_SCAN_BATCH):
            grouped.setdefault(record.data.get("traceId") or record.sk.split("#", 1)[0], []).append(record)
        return list(grouped.items())


REDACTED = "[redacted]"
#: A removed text shorter than this is not looked for inside other strings (a two-letter
#: turn would redact every trace); the traces that name its record lose their query anyway.
MIN_QUOTE_CHARS = 8
_FREE_TEXT = ("query",)


def _quotes(texts: frozenset[str] | set[str]) -> list[str]:
    return sorted({t.strip() for t in texts if len(t.strip()) >= MIN_QUOTE_CHARS}, key=len, reverse=True)


def _asked(records: list[Record], ids: frozenset[str] | set[str]) -> bool:
    """Whether the trace's question was one of the removed turns (its response part names them)."""
    return any(set(r.data.get("turnIds") or []) & set(ids) for r in records)


def _redacted(data: dict[str, Any], asked: bool, quoted: list[str]) -> tuple[dict[str, Any], list[str]]:
    """``data`` with its quoted text taken out, and the SHA-256 of each string taken out."""
    hashes: list[str] = []

    def clean(key: str | None, value: Any) -> Any:
        if isinstance(value, str):
            if value == REDACTED or not value:
                return value
            if (asked and key in _FREE_TEXT) or any(q in value for q in quoted):
                hashes.append(hashlib.sha256(value.encode("utf-8")).hexdigest())
                return REDACTED
            return value
        if isinstance(value, dict):
            return {k: clean(k, v) for k, v in value.items()}
        if isinstance(value, list):
            return [clean(key, v) for v in value]
        return value

    out = {k: (v if k in _HIDDEN or k in ("redacted", "createdAt") else clean(k, v)) for k, v in data.items()}
    return out, hashes


def _assemble(trace_id: str, records: list[Record]) -> dict[str, Any]:
    out: dict[str, Any] = {"id": trace_id, "retrieval": None, "response": None}
    for record in records:
        out[record.data["part"]] = {k: v for k, v in record.data.items() if k not in _HIDDEN}
    return {**out, **summary(out["retrieval"] or {}, out["response"] or {})}


def aggregate(traces: list[dict[str, Any]], window_hours: int, truncated: bool = False) -> dict[str, Any]:
    """The stats of assembled traces (``_assemble``). Chat traces are the queries; a
    memory-care verb's trace counts under ``verbs`` only. The cache hit rate is over the
    queries that were answered (a response trace), as is the mean latency."""
    queries = [t for t in traces if not ((t["retrieval"] or {}).get("verb") or (t["response"] or {}).get("verb"))]
    answered = [t for t in queries if t["response"] is not None]
    cached = sum(1 for t in answered if t["cached"])
    tiers = Counter(t["resolutionTier"] for t in queries if t["resolutionTier"])
    kinds: Counter[str] = Counter()
    hits = degraded = 0
    for t in queries:
        retrieval = t["retrieval"] or {}
        found = [h for h in retrieval.get("hits") or [] if isinstance(h, dict)]
        hits += len(found)
        kinds.update(str(h.get("kind") or "unknown") for h in found)
        degraded += 1 if retrieval.get("degraded") else 0
    corrections = sum(int((t["response"] or {}).get("corrections") or 0) for t in answered)
    uncertain = sum(int((t["response"] or {}).get("uncertainties") or 0) for t in answered)
    facts = sum(int((t["response"] or {}).get("factsWritten") or 0) for t in answered)
    verbs = Counter(str((t["retrieval"] or {}).get("verb") or (t["response"] or {}).get("verb"))
                    for t in traces if t not in queries)
    latency = [t["latencyMs"] for t in answered]
    return {
        "windowHours": window_hours,
        "totalQueries": len(queries),
        "avgLatencyMs": round(sum(latency) / len(latency), 2) if latency else 0.0,
        "cacheHits": cached,
        "cacheHitRate": round(cached / len(answered), 4) if answered else 0.0,
        "responseTracesTotal": len(answered),
        "responseTracesCached": cached,
        "tierCounts": dict(sorted(tiers.items())),
        "sourceKindDistribution": [{"kind": k, "count": n} for k, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0]))],
        "retrieval": {"queries": len(queries), "hits": hits,
                      "avgHits": round(hits / len(queries), 2) if queries else 0.0, "degraded": degraded},
        "supersession": {"count": corrections, "rate": round(corrections / facts, 4) if facts else 0.0,
                         "factsWritten": facts},
        "contradiction": {"count": uncertain, "rate": round(uncertain / facts, 4) if facts else 0.0},
        "verbs": dict(sorted(verbs.items())),
        "truncated": truncated,
    }


def memory_counts(results: Any) -> dict[str, int]:
    """What a chat turn's fact writes did, for its response trace: facts written, how many
    superseded an earlier value (a correction), how many were held as uncertain instead."""
    done = [r for r in results or () if r is not None]
    return {"factsWritten": sum(len(r.attributes) + len(r.relations) for r in done),
            "corrections": sum(len(r.corrections) for r in done),
            "uncertainties": sum(len(r.uncertainties) for r in done)}


def summary(retrieval: dict[str, Any], response: dict[str, Any]) -> dict[str, Any]:
    """A trace's headline (the Spectron client's ``TraceRecord``): the query, the tier that
    answered it and why, the whole latency in milliseconds, whether the reply came from the
    cache, and when the trace began."""
    cached = bool(response.get("cached"))
    degraded = retrieval.get("degraded")
    verb = retrieval.get("verb") or response.get("verb")
    if verb:
        reason = f"{verb}: memory care" + (" (dry run)" if response.get("dryRun") else "") + (
            f", {response['modelCalls']} model call{'s' if response['modelCalls'] != 1 else ''}"
            if isinstance(response.get("modelCalls"), int) else "")
    elif cached:
        reason = "cache: a semantically equal question was answered from the reply cache"
    elif degraded:
        reason = f"degraded: {degraded.get('reason') if isinstance(degraded, dict) else degraded}"
    elif response and retrieval.get("tier1Key"):
        reason = (f"retrieval: the reply was generated from retrieved memory, led by the current "
                  f"{retrieval['tier1Key']} fact the question asks for")
    elif response:
        reason = "retrieval: the reply was generated from retrieved memory"
    else:
        reason = "retrieval: no reply was recorded (the request failed or is still running)"
    tier = response.get("tier", retrieval.get("tier"))
    latency = response.get("latencyMs", retrieval.get("latencyMs")) or 0
    created = [t for t in (retrieval.get("createdAt"), response.get("createdAt")) if t]
    return {"queryText": retrieval.get("query", ""), "resolutionTier": "" if tier is None else str(tier),
            "tierReason": reason, "latencyMs": int(round(float(latency))), "cached": cached,
            "createdAt": min(created) if created else ""}

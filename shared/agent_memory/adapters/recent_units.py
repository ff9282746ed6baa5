"""Units written within the search index's refresh interval, kept where a search can see them.

OpenSearch shows a write only after its next refresh (Serverless: seconds, and no refresh API).
Reads are safe without help: ``LiveRevisions`` drops every copy that is no longer current, so
a lagging index can hide a new unit for a moment but never show a stale one. Forget is
different: ``POST /forget`` finds what to remove by searching, so a unit written moments
before (a turn, then "forget that") would be invisible to it and stay, and surface after the
refresh.

So every index write also notes its units, with their vectors, as short-lived rows of the
record store (expiring after ``window_s``; written straight to the base store, never
projected). The OpenSearch adapter adds the noted units to the vector leg of a search, filtered
by the same rules as the index (the embedded backend's filter, on an in-memory index of just
those units), before the live-revision check; so a forget right after a write finds the unit,
and a noted unit that has since been superseded, narrowed or deleted is dropped like any stale
copy. ``window_s`` must exceed the index's refresh interval (Serverless documents "within
seconds"; a minute is the default).

Keys: time buckets and shards, so no partition takes a context's whole write rate and no
search reads an expired row:

- ``pk = c#<ctx>#<part>#recent-units#<bucket>#<shard>``: ``bucket`` the ``BUCKET_S``-long
  (5-minute) period the unit was noted in (epoch seconds // ``BUCKET_S``), ``shard`` a hash of
  the unit id over ``SHARDS`` (4). A row is 1-8 KB (its text and a float32 vector): a context
  writing 100 turns a second notes about 1,750 WCU a second of them (``bench/partition_heat.py``),
  440-590 a shard (hash imbalance); a context's ceiling is about 4,000 WCU/s (4 x DynamoDB's 1,000 a partition),
  some 230 writes a second.
- ``sk = <noted at, epoch ms, 13 digits>#<unit id>``: a search range-reads, newest first, only
  the rows noted inside the window, in the buckets the window touches (one, or two in the
  window's first minute of a bucket), of every shard, at most ``ceil(MAX_CANDIDATES / SHARDS)``
  rows a shard: at most ``MAX_CANDIDATES`` rows in all. Expired rows, which DynamoDB deletes up
  to days late, lie outside the range and are never read, and no row is read twice. The reads
  of one search (each shard's bucket or two) run at once (``kernel.fan_out``, at most
  ``READ_CONCURRENCY``: one round trip); a unit noted twice (rewritten) is kept once, its
  newest copy.

Cost: one extra put per indexed unit, and ``SHARDS`` range queries per vector search (twice as
many in the window's first minute of each bucket), run in parallel.
"""

from __future__ import annotations

import base64
import functools
import math
import time
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from agent_memory.kernel import fan_out
from agent_memory.ports import Record, RecordStore, SearchUnit

RECENT_WINDOW_S = 60
# A search reads at most this many noted units of one context and partition (their rows carry
# vectors, and each search ranks them in memory); a bulk write of more within the window (a
# large document ingesting) leaves the rest to the index's refresh.
MAX_CANDIDATES = 1000
KIND = "recent-unit"
PUT_CONCURRENCY = 8
READ_CONCURRENCY = 8
SHARDS = 4
BUCKET_S = 300


def recent_prefix(context_id: str, partition: str) -> str:
    return f"c#{context_id}#{partition}#recent-units"


def recent_pk(context_id: str, partition: str, bucket: int, shard: int) -> str:
    return f"{recent_prefix(context_id, partition)}#{bucket}#{shard}"


def shard_of(unit_id: str) -> int:
    return zlib.crc32(unit_id.encode("utf-8", "surrogatepass")) % SHARDS


def _sk(noted_ms: int, unit_id: str) -> str:
    return f"{noted_ms:013d}#{unit_id}"


class RecentUnits:
    def __init__(self, store: RecordStore, *, window_s: float = RECENT_WINDOW_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.window_s = window_s
        self._clock = clock

    @staticmethod
    def _bucket(at: float) -> int:
        return int(at // BUCKET_S)

    def note(self, units: Sequence[SearchUnit], vectors: np.ndarray) -> None:
        """Keep ``units`` (disjoint, as one index write holds them) for ``window_s`` seconds."""
        from agent_memory.adapters.search_units import unit_to_dict  # lazy: numpy-heavy module

        now = self._clock()
        noted_ms, bucket = int(now * 1000), self._bucket(now)
        expires = int(now + self.window_s) + 1
        rows = [Record(recent_pk(u.context_id, u.partition, bucket, shard_of(u.id)), _sk(noted_ms, u.id),
                       {"kind": KIND, "unit": unit_to_dict(u),
                        "vector": base64.b64encode(np.asarray(v, dtype="<f4").tobytes()).decode()},
                       expires_at=expires)
                for u, v in zip(units, vectors, strict=True)]
        if len(rows) <= 1:
            for row in rows:
                self.store.put(row)
            return
        # One unconditioned put per unit (the projector's role may put only these rows:
        # template.yaml), a few at once; a failure fails the index write, which is retried.
        with ThreadPoolExecutor(max_workers=min(PUT_CONCURRENCY, len(rows)), thread_name_prefix="recent") as pool:
            list(pool.map(self.store.put, rows))

    def candidates(self, context_id: str, partition: str) -> list[tuple[SearchUnit, np.ndarray]]:
        """The units noted in the last ``window_s`` seconds for one context and partition,
        newest first, at most ``MAX_CANDIDATES``."""
        from agent_memory.adapters.search_units import unit_from_dict

        now = self._clock()
        low = _sk(int((now - self.window_s) * 1000), "")
        buckets = list(range(self._bucket(now), self._bucket(now - self.window_s) - 1, -1))  # newest first
        per_shard = math.ceil(MAX_CANDIDATES / SHARDS)

        def bucket_rows(shard: int, bucket: int) -> list[Record]:
            out: list[Record] = []
            after = None
            pk = recent_pk(context_id, partition, bucket, shard)
            while len(out) < per_shard:
                page = self.store.query(pk, between=(low, "9" * 13 + "~"), after=after, forward=False,
                                        limit=min(500, per_shard - len(out)))
                out += page.records
                if page.last_key is None or not page.records:
                    break
                after = page.last_key
            return out

        # Every (shard, bucket) read at once: one round trip, in a bucket's first minute too.
        reads = [(shard, bucket) for shard in range(SHARDS) for bucket in buckets]
        found = fan_out.run_at_once([functools.partial(bucket_rows, shard, bucket) for shard, bucket in reads],
                                    max_workers=READ_CONCURRENCY, name="recent")
        rows: list[Record] = []
        for shard in range(SHARDS):  # each shard's newest rows, newer bucket first, at most per_shard
            rows += [r for (s, _), got in zip(reads, found, strict=True) if s == shard for r in got][:per_shard]
        rows.sort(key=lambda r: r.sk, reverse=True)
        seen: set[str] = set()
        out: list[tuple[SearchUnit, np.ndarray]] = []
        for r in rows:
            if r.data.get("kind") != KIND or (r.expires_at is not None and r.expires_at <= now):
                continue
            unit = unit_from_dict(r.data["unit"])
            if unit.id in seen:
                continue  # noted again later: its newest copy came first
            seen.add(unit.id)
            vector = np.frombuffer(base64.b64decode(r.data["vector"]), dtype="<f4").astype(np.float32)
            out.append((unit, vector))
        return out[:MAX_CANDIDATES]

"""Units written within the search index's refresh interval, kept where a search can see them.

OpenSearch shows a write only after its next refresh (Serverless: seconds, and no refresh API).
Reads are safe without help: ``LiveRevisions`` drops every copy that is no longer current, so
a lagging index can hide a new unit for a moment but never show a stale one. Forget is
different: ``POST /forget`` finds what to remove by searching, so a unit written moments
before (a turn, then "forget that") would be invisible to it and stay, and surface after the
refresh.

So every index write also notes its units, with their vectors, as short-lived rows of the
record store (``c#<ctx>#<part>#recent-units``, one per unit, expiring after ``window_s``;
written straight to the base store, never projected). The OpenSearch adapter adds the noted
units to the vector leg of a search, filtered by the same rules as the index (the embedded
backend's filter, on an in-memory index of just those units), before the live-revision check;
so a forget right after a write finds the unit, and a noted unit that has since been
superseded, narrowed or deleted is dropped like any stale copy. ``window_s`` must exceed the
index's refresh interval (Serverless documents "within seconds"; a minute is the default).
Cost: one extra put per indexed unit, and one query of the context's recent rows per search
(at most ``MAX_CANDIDATES``).
"""

from __future__ import annotations

import base64
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from agent_memory.ports import Record, RecordStore, SearchUnit

RECENT_WINDOW_S = 60
# A search reads at most this many noted units of one context and partition (their rows carry
# vectors, and each search ranks them in memory); a bulk write of more within the window (a
# large document ingesting) leaves the rest to the index's refresh.
MAX_CANDIDATES = 1000
KIND = "recent-unit"
PUT_CONCURRENCY = 8


def recent_pk(context_id: str, partition: str) -> str:
    return f"c#{context_id}#{partition}#recent-units"


class RecentUnits:
    def __init__(self, store: RecordStore, *, window_s: float = RECENT_WINDOW_S,
                 clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.window_s = window_s
        self._clock = clock

    def note(self, units: Sequence[SearchUnit], vectors: np.ndarray) -> None:
        """Keep ``units`` (disjoint, as one index write holds them) for ``window_s`` seconds."""
        from agent_memory.adapters.search_units import unit_to_dict  # lazy: numpy-heavy module

        expires = int(self._clock() + self.window_s) + 1
        rows = [Record(recent_pk(u.context_id, u.partition), u.id,
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
        """The units noted in the last ``window_s`` seconds for one context and partition."""
        from agent_memory.adapters.search_units import unit_from_dict

        now = self._clock()
        out: list[tuple[SearchUnit, np.ndarray]] = []
        after = None
        pk = recent_pk(context_id, partition)
        while True:
            page = self.store.query(pk, after=after, limit=500)
            for r in page.records:
                if r.data.get("kind") != KIND or (r.expires_at is not None and r.expires_at <= now):
                    continue
                vector = np.frombuffer(base64.b64decode(r.data["vector"]), dtype="<f4").astype(np.float32)
                out.append((unit_from_dict(r.data["unit"]), vector))
            if page.last_key is None or not page.records or len(out) >= MAX_CANDIDATES:
                return out[:MAX_CANDIDATES]
            after = page.last_key

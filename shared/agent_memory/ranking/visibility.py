"""Which units a ``SearchFilter`` admits, for units held in memory rather than in an index.

The indexes apply ``ports.SearchFilter`` inside a search; a caller holding units itself (tier-1
reads from the record store, the OpenSearch adapter's units written within the refresh
interval) applies the same rules here, so there is one copy of them outside the indexes.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from agent_memory.access import scopes
from agent_memory.kernel import timeutil
from agent_memory.ports import SearchFilter, SearchUnit


def unit_visible(unit: SearchUnit, flt: SearchFilter, now_iso: str) -> bool:
    """``SearchFilter`` semantics (see ``ports.SearchFilter``) for one unit: the same rules the
    indexes apply inside a search."""
    if unit.context_id != flt.context_id or unit.partition != flt.partition:
        return False
    if flt.kinds is not None and unit.kind not in flt.kinds:
        return False
    if flt.roles is not None and unit.role not in flt.roles:
        return False
    if flt.session_id is not None and unit.session_id != flt.session_id:
        return False
    if flt.thread_id is not None and unit.thread_id != flt.thread_id:
        return False
    if unit.id in flt.exclude_ids:
        return False
    if flt.labels and not set(flt.labels) <= set(unit.labels):
        return False
    if flt.as_of is not None:
        t = timeutil.normalise(flt.as_of)
        if (unit.valid_from and timeutil.normalise(unit.valid_from) > t) or \
                (unit.valid_until and timeutil.normalise(unit.valid_until) <= t):
            return False
    elif flt.valid_window is None and unit.valid_until and timeutil.normalise(unit.valid_until) <= now_iso:
        return False
    if flt.valid_window is not None:
        start, end = flt.valid_window
        if (end is not None and unit.valid_from and timeutil.normalise(unit.valid_from) >= timeutil.normalise(end)) \
                or (start is not None and unit.valid_until
                    and timeutil.normalise(unit.valid_until) <= timeutil.normalise(start)):
            return False
    if not scopes.visible(unit.scopes, flt.read_region):
        return False
    if flt.lens and not scopes.lens_admits(unit.scopes, flt.lens, flt.lens_view):
        return False
    if flt.any_labels is not None and not set(flt.any_labels) & set(unit.labels):
        return False
    if flt.source_ids is not None and not set(flt.source_ids) & set(unit.source_ids):
        return False
    if not flt.admin and unit.acl_readers is not None and not set(flt.principals) & set(unit.acl_readers):
        return False
    return True


def nearest_visible(units: Sequence[tuple[SearchUnit, np.ndarray]], query: np.ndarray, flt: SearchFilter,
                    now_iso: str, depth: int) -> list[tuple[SearchUnit, float]]:
    """The best ``depth`` of ``units`` (each with its vector) that ``flt`` admits, by the dot
    product with ``query`` (the embedders' vectors are unit length: a cosine), best first as
    ``(unit, cosine)``, as an index's vector leg ranks them. A unit id seen twice keeps its
    first position and its last vector; a zero query has no direction and ranks nothing."""
    if depth <= 0 or not np.any(query):
        return []
    latest: dict[str, tuple[SearchUnit, np.ndarray]] = {}
    for unit, vec in units:
        latest[unit.id] = (unit, vec)
    kept = [(u, v) for u, v in latest.values() if unit_visible(u, flt, now_iso)]
    if not kept:
        return []
    matrix = np.stack([np.asarray(v, dtype=np.float32) for _, v in kept])
    scores = matrix @ np.asarray(query, dtype=np.float32)
    order = np.argsort(-scores, kind="stable")[:depth]
    return [(kept[i][0], float(scores[i])) for i in order.tolist()]

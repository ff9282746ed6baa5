"""A Python evaluator of the query-DSL subset ``adapters/opensearch/queries`` emits, used to check filter
semantics without a cluster and by the near-real-time test double (``make test-opensearch``
runs the same filters on a real cluster)."""

from __future__ import annotations

import re
from typing import Any


def _values(doc: dict[str, Any], field: str) -> list[Any]:
    v = doc.get(field)
    if v is None:
        return []
    return v if isinstance(v, list) else [v]


def words(text: str) -> set[str]:
    """Lower-cased words with a plural ``s`` dropped: enough analysis for a double."""
    out = set()
    for w in re.findall(r"\w+", text.lower()):
        out.add(w[:-1] if len(w) > 3 and w.endswith("s") else w)
    return out


def cjk_words(text: str) -> set[str]:
    """What the ``cjk`` analyzer indexes, as the double needs it: ``kernel.cjk``'s bigrams."""
    from agent_memory.kernel.cjk import cjk_bigrams

    return words(cjk_bigrams(text))


def matches(q: dict[str, Any], doc: dict[str, Any]) -> bool:
    """Evaluate the subset of the query DSL that build_filter emits."""
    (kind, body), = q.items()
    if kind == "bool":
        if not all(matches(c, doc) for c in [*body.get("must", []), *body.get("filter", [])]):
            return False
        if any(matches(c, doc) for c in body.get("must_not", [])):
            return False
        should = body.get("should", [])
        return not should or sum(matches(c, doc) for c in should) >= body.get("minimum_should_match", 1)
    if kind == "term":
        (field, value), = body.items()
        return value in _values(doc, field)
    if kind == "terms":
        (field, values), = body.items()
        return bool(set(values) & set(_values(doc, field)))
    if kind == "regexp":
        # Lucene regexps are anchored; the adapter emits only literals, escapes and [^/]+.
        (field, spec), = body.items()
        pattern = spec["value"] if isinstance(spec, dict) else spec
        return any(isinstance(v, str) and re.fullmatch(pattern, v) for v in _values(doc, field))
    if kind == "exists":
        return bool(_values(doc, body["field"]))
    if kind == "range":
        (field, bound), = body.items()
        vals = _values(doc, field)
        if not vals:
            return False
        (op, value), = bound.items()
        return {"lte": vals[0] <= value, "lt": vals[0] < value, "gt": vals[0] > value}[op]
    if kind == "match":
        (field, spec), = body.items()
        if field == "text.cjk":  # the cjk analyzer: bigrams of the indexed text
            return bool(cjk_words(spec["query"]) & cjk_words(" ".join(map(str, _values(doc, "text")))))
        return bool(words(spec["query"]) & words(" ".join(map(str, _values(doc, field)))))
    if kind == "ids":
        return doc.get("_id") in body["values"]
    if kind == "nested":
        path = body["path"]
        return any(matches(body["query"], {f"{path}.{k}": v for k, v in obj.items()})
                   for obj in doc.get(path) or [])
    raise AssertionError(f"unexpected query {kind}")

"""The read-region filter both RecordStore adapters apply *inside* their queries.

``RecordStore.query(read_region=...)`` returns only records whose ``data["scopes"]`` (DNF,
``agent_memory.access.scopes``) a caller with that region may read. A record without scopes is
visible to every region. The filter runs in the store, so a page is filled from visible
records instead of being cut down afterwards (the services still check each record: an
exact second check, never the only one).

SQLite evaluates ``scopes.visible`` itself as a deterministic SQL function
(``scope_visible(json_extract(data, '$.scopes'), :region)``): exact, wildcards included.

DynamoDB keeps ``data`` as one JSON string, so each item carries top-level copies a
``FilterExpression`` can test (``dynamo_attributes``):

- ``ss``: present when the record is scoped (absent: visible to everyone);
- ``sa`` (string set): the ancestors of every path of a single-path clause; literal region
  path ``r`` covers such a path exactly when ``contains(sa, r)``;
- ``st`` (string set): positional segment tokens ``<i>:<segment>`` and ``<i>:*`` of those
  paths; region path ``users/*/private`` becomes ``contains(st, "0:users") AND
  contains(st, "1:*") AND contains(st, "2:private")``. Over several clauses this may admit
  a record whose tokens come from different paths: a superset, removed by the exact check;
- ``sm``: present when some clause has two or more paths (AND). Such records pass the
  filter and are decided by the exact check (rare: most records have one-path clauses).

Items written before these attributes existed lack ``ss`` and pass the filter; the exact
check decides them, so the filter is never less safe than the check alone.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from functools import lru_cache
from typing import Any

from agent_memory.access import scopes as scope_lib
from agent_memory.kernel import stored_item

Item = dict[str, dict[str, Any]]


def dynamo_attributes(data: dict[str, Any]) -> Item:
    """The top-level filter attributes of an item whose data is ``data``, as attribute values
    (computed by ``kernel.stored_item.scope_attributes``, which sizes them too)."""
    return {name: _attribute_value(value) for name, value in stored_item.scope_attributes(data).items()}


def _attribute_value(value: Any) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    return {"SS": list(value)}


def dynamo_filter(region: Sequence[str]) -> tuple[str, dict[str, str], dict[str, dict[str, Any]]]:
    """``FilterExpression``, names and values admitting what ``region`` may read."""
    names = {"#ss": "ss"}
    values: dict[str, dict[str, Any]] = {}
    terms = ["attribute_not_exists(#ss)"]
    paths = sorted(set(region))
    if paths:
        names["#sm"] = "sm"
        terms.append("attribute_exists(#sm)")
    for i, path in enumerate(paths):
        segments = path.split("/")
        if scope_lib.WILDCARD not in segments:
            values[f":r{i}"] = {"S": path}
            names["#sa"] = "sa"
            terms.append(f"contains(#sa, :r{i})")
            continue
        parts = []
        names["#st"] = "st"
        for j, seg in enumerate(segments):
            values[f":r{i}_{j}"] = {"S": f"{j}:{seg}"}
            parts.append(f"contains(#st, :r{i}_{j})")
        terms.append("(" + " AND ".join(parts) + ")")
    return " OR ".join(terms), names, values


@lru_cache(maxsize=256)
def _region(region_json: str) -> tuple[str, ...]:
    return tuple(json.loads(region_json))


def sqlite_visible(scopes_json: str | None, region_json: str) -> int:
    """SQL function ``scope_visible``: 1 when a record with these scopes is readable."""
    if not scopes_json:
        return 1
    try:
        scopes = json.loads(scopes_json)
    except ValueError:
        return 0
    if not isinstance(scopes, list):
        return 0
    return int(scope_lib.visible(scopes, _region(region_json)))


def region_json(region: Sequence[str]) -> str:
    return json.dumps(sorted(set(region)))

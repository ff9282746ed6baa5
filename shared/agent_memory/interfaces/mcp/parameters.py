"""What each tool parameter means: the descriptions the tools' input schemas carry."""

from __future__ import annotations

from typing import Any

_RFC3339 = "an RFC 3339 timestamp, e.g. 2026-03-10T10:00:00Z"
_SCOPES = ("where the memory lives, as an OR of AND-clauses of scope paths, e.g. "
           '[["org/acme/user/alice"]]; a bare path string or a flat list of paths is accepted too')

#: ``field`` or ``tool.field`` (or ``$defs`` name ``Model.field``) -> its description.
PARAMETERS: dict[str, str] = {
    "text": "the statement to store, as the user said it (at most 64 KiB)",
    "thread_append.text": "the turn's text (at most 1 MiB of UTF-8)",
    "infer": "what to extract: full - extract facts and store them (default); preview - extract and return "
             "them without storing anything; none - store the turn only, no extraction; triples - not offered "
             "by this tool (it needs pre-extracted triples)",
    "session_id": "a session id (sess_...) to append to, as an earlier remember or chat returned it; omit "
                  "for a new session",
    "recall.session_id": "only memory from this session (sess_...)",
    "get_context.session_id": "only memory from this session (sess_...)",
    "chat.session_id": "continue this session (sess_...), as an earlier chat returned it; omit to start one",
    "scopes": _SCOPES + "; omit for the key's default write scope",
    "labels": "labels to attach (non-empty strings of at most 128 characters), e.g. [\"work\"]",
    "recall.labels": "only memory carrying every one of these labels",
    "get_context.labels": "only memory carrying every one of these labels",
    "chat.labels": "labels for what this turn stores, and only memory carrying them is retrieved",
    "memory_category": "identity (who the user is), knowledge (what they know or work on) or context (the "
                       "current situation); omit to let extraction choose",
    "role": "who said the text: user (default), assistant, system or tool",
    "observed_at": f"when the statement was made, {_RFC3339}; omit for now. Facts take effect from it",
    "query": "what to look for, in plain words (at most 8192 characters)",
    "get_context.query": "what the prompt is about (at most 8192 characters); empty: the latest session's "
                         "recent turns and the standing instructions, no search",
    "forget.query": "what to forget, in plain words: the closest matching memory goes",
    "reflect.query": "the topic to reflect on, in plain words",
    "thread_context.query": "what to look for among the thread's older turns, in plain words",
    "k": "how many hits to return, 1 to 50 (default 10)",
    "mode": "how to search: hybrid - words and meaning together (default); vector - meaning only; bm25 - "
            "exact words only; graph - only facts about the entities the query names",
    "include": "the kinds of hit to return, any of attribute, relation, action, instruction, entity (one "
               "profile line per named entity), turn, chunk (document text); facts stands for attribute and "
               "relation, passages for turn and chunk; default all but entity",
    "as_of": f"read facts as they were valid at this instant instead of now, {_RFC3339}",
    "entity.as_of": f"read the record as it was at this instant, {_RFC3339}; omit for now",
    "at_instant": f"the state at one instant ({_RFC3339}): a superseded value that held then comes back; "
                  "the same reading as as_of",
    "valid_from": f"with valid_until: facts whose validity overlaps this window, closed ones included; "
                  f"its start, {_RFC3339}",
    "valid_until": f"the window's exclusive end, {_RFC3339}",
    "lens": "narrow the read to scopes, as an OR of AND-clauses of scope paths without '*', e.g. "
            '[["org/acme/team/a"]]; it never widens what the key may read',
    "scope_view": "how the lens is read: strict (default; alone, everything the key may read) - the lens paths "
                  "and below; merged - also their ancestors and unscoped memory; crossTeam - also the lens "
                  "paths' siblings (these two need a lens)",
    "source": "turn or chunk: only hits of that kind; any other value: only chunks of the documents "
              "uploaded with that source (1 to 256 characters)",
    "location": "only memory about entities whose current lat/lng lie in an area: give near (a circle) or "
                "within (a WKT polygon)",
    "Location.near": "a circle: lat, lng and one of radius_km and radius_m",
    "Location.within": "a WKT POLYGON or MULTIPOLYGON in 'lng lat' order",
    "Near.lat": "the centre's latitude in degrees, -90 to 90",
    "Near.lng": "the centre's longitude in degrees, -180 to 180",
    "Near.radius_km": "the radius in kilometres, 0.001 to 20038 (or radius_m)",
    "Near.radius_m": "the radius in metres, 1 to 20038000 (or radius_km)",
    "subject": "the entity the prompt is about: type/name (person/alice), entity:type/name or a name",
    "message": "the user's message (at most 32 KiB)",
    "model": "a model name to answer with instead of the configured one; it must be in models.allowed",
    "suppress_markers": "true: the reply carries no [S1]-style citation markers (the citations still come "
                        "back); default false",
    "limit": "rows per table, 1 to 1000 (default 100)",
    "entity.limit": "attributes and relations at most, 1 to 1000 (default 100)",
    "forget.limit": "matching items to forget at most, 1 to 20 (default 5)",
    "min_score": "forget only items at least this similar to the query, -1 to 1 (default 0.25)",
    "dry_run": "true: only list what would be affected, change nothing; default false",
    "purge": "true: hard-delete, superseded history included (no undo); default false: a soft delete",
    "persist": "true: store the reflection's conclusions as facts; default false: only report",
    "fact_limit": "current facts to read at most, 1 to 5000 (default: the configured cap)",
    "observation_limit": "observations to return at most, 1 to 500 (default: the configured cap)",
    "check": "run one check: contradictions, duplicates or injection (text that tries to steer a model); "
             "omit for all three",
    "duplicate_threshold": "similarity from which two facts count as duplicates, 0.01 to 1 (default 0.9)",
    "max_results": "findings per check at most, 1 to 500 (default 50)",
    "include_echoes": "also compare questions and assistant replies as duplicates (default false: asking "
                      "again is not a duplicate fact)",
    "entity_id": "the entity the turn is about, entity:type/name, e.g. entity:person/alice",
    "thread_context.entity_id": "only turns about this entity (entity:type/name), after taking the last N",
    "metadata": "a flat JSON object of strings, numbers and booleans kept with the turn",
    "acl_readers": "principals who may read this turn (default: whoever may read the thread)",
    "idempotency_key": "any string; a retry with the same key appends the turn once",
    "last_n_turns": "how many of the latest turns to return, 1 to 1000 (default 10)",
    "recent_first": "true: newest turn first; default false: oldest first",
}


def describe(schema: dict[str, Any], tool: str) -> dict[str, Any]:
    """Sets each property's description from ``PARAMETERS`` (a tool's own entry first),
    keeping one the model gives only where the table has none."""
    for name, prop in schema.get("properties", {}).items():
        text = PARAMETERS.get(f"{tool}.{name}") or PARAMETERS.get(name) or prop.get("description")
        if text:
            prop["description"] = text
    for def_name, definition in schema.get("$defs", {}).items():
        for name, prop in definition.get("properties", {}).items():
            text = PARAMETERS.get(f"{def_name}.{name}") or prop.get("description")
            if text:
                prop["description"] = text
    return schema

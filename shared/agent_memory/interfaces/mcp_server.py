"""``agent-memory mcp``: the service as an MCP server, over stdio or streamable HTTP.

It is a client of the API like any other: every tool and resource calls the service through
the async SDK (``AsyncAgentMemory``) with the API's own auth (``--api-key`` or
``AGENT_MEMORY_API_KEY``), so a key sees through MCP exactly what it sees over HTTP.

Tools take JSON objects whose schemas come from the service's request models
(``agent_memory.models``): ``remember`` is ``WriteFactsRequest``, ``recall`` is
``QueryRequest`` and so on, less the fields a tool does not offer. Arguments are validated
by the same models before anything is sent. An error response comes back as an MCP tool
error (``isError``) carrying the problem document's status and detail.

Resources: ``agent-memory://{context}/state`` (the context's state) and
``agent-memory://{context}/entities/{type}/{name}`` (an entity's current record).

Needs the ``mcp`` extra: ``pip install 'agent-memory[mcp]'``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, unquote

import pydantic
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agent_memory.client import AgentMemoryError, ApiError, AsyncAgentMemory
from agent_memory.client._calls import fact_collection
from agent_memory.kernel.errors import InvalidRequest
from agent_memory.models.care import ConsolidateRequest, FsckRequest, ReflectRequest
from agent_memory.models.reads import ForgetRequest
from agent_memory.models.requests import ChatRequest, WriteFactsRequest, rfc3339
from agent_memory.models.retrieval import ContextRequest, QueryRequest
from agent_memory.models.threads import AppendThreadTurnRequest, ThreadContextRequest
from agent_memory.models.wire_base import WireModel

log = logging.getLogger(__name__)

SERVER_NAME = "agent-memory"
URI_SCHEME = "agent-memory"
JSON = "application/json"


# --- tool inputs the HTTP API takes as path or query parameters -------------------------


class _Input(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StateInput(_Input):
    """GET /state: the current snapshot, by category."""

    limit: int | None = Field(default=None, ge=1, le=1000, description="rows per table (service default 100)")


class EntityInput(_Input):
    """GET /entities/{type}/{name}: an entity's current attributes and relations."""

    type: str = Field(min_length=1, max_length=256, description="entity type, e.g. person")
    name: str = Field(min_length=1, max_length=256, description="entity name, e.g. user")
    as_of: str | None = Field(default=None, description="read the record as it was at this RFC 3339 instant")
    limit: int | None = Field(default=None, ge=1, le=1000, description="rows per list")

    _as_of = field_validator("as_of")(classmethod(lambda cls, v: rfc3339(v)))


class HistoryInput(_Input):
    """GET /entities/{type}/{name}/attributes/{key}/history: one attribute's supersession chain."""

    type: str = Field(min_length=1, max_length=256, description="entity type, e.g. person")
    name: str = Field(min_length=1, max_length=256, description="entity name, e.g. user")
    key: str = Field(min_length=1, max_length=256, description="attribute key, e.g. location")


_FACT_ID = Field(min_length=5, max_length=128, pattern=r"^(attr|rel|act|instr)_[A-Za-z0-9]+$",
                 description="the fact's id (attr_..., rel_..., act_... or instr_...), as recall, state and "
                             "remember report it")


class FactInput(_Input):
    """DELETE /{attributes|relations|actions|instructions}/{id}: forget one fact."""

    id: str = _FACT_ID
    purge: bool = Field(default=False, description="also hard-delete its superseded history")


class CorrectFactInput(_Input):
    """PATCH /{attributes|relations}/{id}: correct one fact (its history is kept)."""

    id: str = Field(min_length=5, max_length=128, pattern=r"^(attr|rel)_[A-Za-z0-9]+$",
                    description="the attribute's or relation's id (attr_... or rel_...)")
    value: str = Field(min_length=1, max_length=4096,
                       description="the correct value (a relation: its object, e.g. person/erin)")
    note: str | None = Field(default=None, max_length=4096, description="why it was wrong, kept with the change")


class ThreadAppendInput(AppendThreadTurnRequest):
    thread_id: str = Field(min_length=1, max_length=256, description="the thread to append to")


class ThreadContextInput(ThreadContextRequest):
    thread_id: str = Field(min_length=1, max_length=256, description="the thread to read")


# --- the tools -------------------------------------------------------------------------


Run = Callable[[AsyncAgentMemory, Any], Awaitable[Any]]


@dataclass(frozen=True)
class ToolSpec:
    """One MCP tool: its input is ``model`` (a request model of the service) less ``hidden``."""

    name: str
    description: str
    model: type[BaseModel]
    run: Run
    hidden: tuple[str, ...] = ()

    def input_schema(self) -> dict[str, Any]:
        """The model's JSON schema (field names as the SDK spells them), without the hidden
        fields; ``additionalProperties: false`` then refuses them."""
        schema = self.model.model_json_schema(by_alias=False)
        properties = schema.get("properties", {})
        for name in self.hidden:
            properties.pop(name, None)
        if "required" in schema:
            schema["required"] = [n for n in schema["required"] if n in properties]
        schema["additionalProperties"] = False
        schema.pop("title", None)
        schema.pop("description", None)  # the model's docstring; the tool has its own
        return _describe(_prune_defs(schema), self.name)

    def parse(self, arguments: dict[str, Any]) -> BaseModel:
        hidden = sorted(set(arguments) & set(self.hidden))
        if hidden:
            raise ToolInputError(f"{', '.join(hidden)}: not an argument of {self.name}")
        return self.model.model_validate(arguments)


class ToolInputError(Exception):
    pass


def _prune_defs(schema: dict[str, Any]) -> dict[str, Any]:
    """Drops the ``$defs`` only hidden fields referred to."""
    defs = schema.get("$defs")
    if not defs:
        return schema
    keep: set[str] = set()
    todo = [{k: v for k, v in schema.items() if k != "$defs"}]
    while todo:
        for name in re.findall(r'"#/\$defs/([^"]+)"', json.dumps(todo.pop())):
            if name not in keep and name in defs:
                keep.add(name)
                todo.append(defs[name])
    if keep:
        schema["$defs"] = {k: v for k, v in defs.items() if k in keep}
    else:
        del schema["$defs"]
    return schema


async def _remember(m: AsyncAgentMemory, a: WriteFactsRequest) -> Any:
    return await m.remember(a.text, session_id=a.session_id, infer=a.infer, scopes=a.scopes or None,
                            labels=a.labels or None, memory_category=a.memory_category, role=a.role,
                            observed_at=a.observed_at)


def _filters(a: QueryRequest | ContextRequest) -> dict[str, Any]:
    """The recall filters of a tool call, as the SDK's keyword arguments."""
    return {"include": a.include, "as_of": a.as_of, "session_id": a.session_id, "labels": a.labels,
            "at_instant": a.at_instant, "valid_from": a.valid_from, "valid_until": a.valid_until, "lens": a.lens,
            "scope_view": a.scope_view, "source": a.source,
            "location": a.location.model_dump(by_alias=True, exclude_none=True) if a.location else None}


async def _recall(m: AsyncAgentMemory, a: QueryRequest) -> Any:
    return await m.query(a.query, k=a.k, mode=a.mode, **_filters(a))


async def _get_context(m: AsyncAgentMemory, a: ContextRequest) -> Any:
    return await m.context(a.query, k=a.k, subject=a.subject, **_filters(a))


async def _chat(m: AsyncAgentMemory, a: ChatRequest) -> Any:
    return await m.chat(a.message, session_id=a.session_id, scopes=a.scopes or None, labels=a.labels or None,
                        model=a.model, suppress_markers=a.suppress_markers or None)


async def _state(m: AsyncAgentMemory, a: StateInput) -> Any:
    return await m.state(limit=a.limit)


async def _entity(m: AsyncAgentMemory, a: EntityInput) -> Any:
    return await m.entities.get(a.type, a.name, as_of=a.as_of, limit=a.limit)


async def _history(m: AsyncAgentMemory, a: HistoryInput) -> Any:
    return {"history": await m.entities.history(a.type, a.name, a.key)}


async def _forget(m: AsyncAgentMemory, a: ForgetRequest) -> Any:
    return await m.forget(a.query, limit=a.limit, min_score=a.min_score, dry_run=a.dry_run, purge=a.purge)


async def _delete_fact(m: AsyncAgentMemory, a: FactInput) -> Any:
    return await getattr(m, fact_collection(a.id)).delete(a.id, purge=a.purge or None)


async def _correct_fact(m: AsyncAgentMemory, a: CorrectFactInput) -> Any:
    return await getattr(m, fact_collection(a.id)).update(a.id, a.value, note=a.note)


async def _reflect(m: AsyncAgentMemory, a: ReflectRequest) -> Any:
    return await m.reflect(a.query, persist=a.persist)


async def _consolidate(m: AsyncAgentMemory, a: ConsolidateRequest) -> Any:
    return await m.consolidate(dry_run=a.dry_run, fact_limit=a.fact_limit, observation_limit=a.observation_limit)


async def _fsck(m: AsyncAgentMemory, a: FsckRequest) -> Any:
    return await m.fsck(check=a.check, duplicate_threshold=a.duplicate_threshold, max_results=a.max_results,
                        include_echoes=a.include_echoes)


async def _thread_append(m: AsyncAgentMemory, a: ThreadAppendInput) -> Any:
    a.check()
    return await m.append_thread(a.thread_id, a.text, entity_id=a.entity_id, metadata=a.metadata,
                                 acl_readers=a.acl_readers, idempotency_key=a.idempotency_key)


async def _thread_context(m: AsyncAgentMemory, a: ThreadContextInput) -> Any:
    a.check()
    return {"items": await m.thread_context(a.thread_id, a.query, last_n_turns=a.last_n_turns,
                                            recent_first=a.recent_first, entity_id=a.entity_id)}


TOOLS: tuple[ToolSpec, ...] = (
    ToolSpec("remember", "Store a statement in memory (one user turn) and return the facts extracted from it: "
             "attributes, relations, actions, instructions, corrections of earlier facts.",
             WriteFactsRequest, _remember, hidden=("triples", "speaker")),
    ToolSpec("recall", "Ranked memory for a query: facts, turns and document chunks with scores "
             "(as_of reads facts valid at an instant).", QueryRequest, _recall),
    ToolSpec("get_context", "Retrieved memory for a query formatted for a prompt, with numbered sources.",
             ContextRequest, _get_context),
    ToolSpec("chat", "One chat turn with the memory-backed assistant: the reply, its citations and the "
             "memory it updated.", ChatRequest, _chat, hidden=("stream", "bypass_cache")),
    ToolSpec("state", "What the agent believes now: entities, attributes, relations and actions by category, "
             "instructions and open uncertainties.", StateInput, _state),
    ToolSpec("entity", "One entity's current record: its attributes and relations (as_of: at an instant).",
             EntityInput, _entity),
    ToolSpec("history", "One attribute's history: each value with its validity window, oldest first.",
             HistoryInput, _history),
    ToolSpec("forget", "Delete the memory matching a query (dry_run: only list what would go).",
             ForgetRequest, _forget),
    ToolSpec("correct_fact", "Correct one remembered fact by its id when the user says it is wrong: the new "
             "value replaces it, the old one stays as history, and the correction is returned.",
             CorrectFactInput, _correct_fact),
    ToolSpec("delete_fact", "Forget one remembered fact by its id (from recall, state or remember).",
             FactInput, _delete_fact),
    ToolSpec("reflect", "What memory holds on a topic, synthesised, with the ids of its evidence (persist: "
             "store its conclusions as facts).", ReflectRequest, _reflect),
    ToolSpec("consolidate", "Turn facts stated again and again into observations with a proof count "
             "(dry_run: only report).", ConsolidateRequest, _consolidate),
    ToolSpec("fsck", "Check memory for contradictions, near-duplicates and text that tries to steer a model "
             "(read-only).", FsckRequest, _fsck),
    ToolSpec("thread_append", "Append a turn to a thread (shared, ordered agent conversation log).",
             ThreadAppendInput, _thread_append),
    ToolSpec("thread_context", "A thread's latest turns and older turns matching a query, as one list.",
             ThreadContextInput, _thread_context),
)


def _jsonable(value: Any) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v) for v in value]
    return value


def _error_result(types: Any, text: str, problem: dict[str, Any] | None = None) -> Any:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], isError=True,
                                structuredContent={"problem": problem} if problem is not None else None)


def _validation_text(tool: str, exc: pydantic.ValidationError) -> str:
    parts = []
    for err in exc.errors(include_url=False):
        where = ".".join(str(p) for p in err.get("loc", ())) or "arguments"
        parts.append(f"{where}: {err.get('msg')}")
    return f"invalid arguments for {tool}: " + "; ".join(parts)


# --- what each parameter means (the tool's input schema carries it) ----------------------------

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


def _describe(schema: dict[str, Any], tool: str) -> dict[str, Any]:
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


# --- results as text: short lines an agent reads, with the ids a follow-up call takes --------


def _get(d: dict[str, Any], snake: str, default: Any = None) -> Any:
    """A field by its snake_case name or its camelCase spelling (the API uses both)."""
    if snake in d:
        return d[snake]
    head, *rest = snake.split("_")
    return d.get(head + "".join(p.title() for p in rest), default)


def _extraction_lines(x: dict[str, Any] | None) -> list[str]:
    if not x:
        return []
    lines = [f"+ {_get(a, 'entity_id')} {a['key']} = {a['value']} [{a['id']}]" for a in x.get("attributes", [])]
    lines += [f"+ {r['subject']} {r['label']} {r['object']}" for r in x.get("relations", [])]
    lines += [f"+ {a['actor']} {a['verb']}: {a['summary']}" for a in x.get("actions", [])]
    lines += [f"+ instruction ({i['label']}): {i['description']} [{i['id']}]" for i in x.get("instructions", [])]
    lines += [f"~ corrected {_get(c, 'entity_id')} {c['key']}: {_get(c, 'old_value')} -> "
              f"{_get(c, 'new_value') or '(no longer true)'}" for c in x.get("corrections", [])]
    lines += [f"? unsure about {u['about']}: {u['reason']}" for u in x.get("uncertainties", [])]
    return lines


def _fact_line(f: dict[str, Any]) -> str:
    if "key" in f and "value" in f:
        line = f"{f.get('entity') or _get(f, 'entity_id')} {f['key']} = {f['value']}"
    elif "label" in f and "subject" in f:
        line = f"{f['subject']} {f['label']} {f['object']}"
    elif "verb" in f:
        line = f"{f['actor']} {f['verb']}: {f['summary']}"
    elif "description" in f:
        line = f"instruction ({f['label']}): {f['description']}"
    else:
        line = f.get("text") or f.get("name") or ""
    since, until = _get(f, "valid_from"), _get(f, "valid_until")
    if since or until:
        line += f" ({since or '(start)'} .. {until or 'now'})"
    return f"{line} [{f['id']}]" if f.get("id") else line


def _text_remember(r: dict[str, Any]) -> str:
    lines = [f"Stored turn {_get(r, 'turn_id')} in session {_get(r, 'session_id')}."
             if _get(r, "turn_id") else f"Nothing stored ({r.get('mode')}); session {_get(r, 'session_id')}."]
    extracted = _extraction_lines(r.get("extraction"))
    lines += extracted or ["Nothing extracted."]
    return "\n".join(lines)


def _text_hits(r: dict[str, Any]) -> str:
    hits = r.get("hits", [])
    if not hits:
        return "Nothing found."
    lines = []
    for n, h in enumerate(hits, 1):
        when = f" {_get(h, 'occurred_at')}" if _get(h, "occurred_at") else ""
        lines.append(f"{n}. [{h.get('kind') or h.get('source')}{when}] {h['text']} (score {h['score']:.2f}, "
                     f"id {h['id']})")
    return "\n".join(lines)


def _text_context(r: dict[str, Any]) -> str:
    sources = [f"{s['marker']} {s.get('kind') or s.get('source')} {s['id']}" for s in r.get("sources", [])]
    return (r.get("context") or "(no memory for this query)") + ("\n\nSources: " + "; ".join(sources)
                                                                 if sources else "")


def _text_chat(r: dict[str, Any]) -> str:
    lines = [r["reply"], "", f"session {_get(r, 'session_id')} (pass it as session_id to continue), "
             f"trace {_get(r, 'trace_id')}"]
    lines += [f"{c['marker']} {c['kind']} {c['id']}: {c['snippet']}" for c in r.get("citations", [])]
    lines += _extraction_lines(_get(r, "memory_updates"))
    return "\n".join(lines)


def _text_state(r: dict[str, Any]) -> str:
    lines = []
    for name in ("identity", "knowledge", "context"):
        category = r.get(name) or {}
        rows = [_fact_line(f) for kind in ("attributes", "relations", "actions") for f in category.get(kind, [])]
        lines.append(f"{name}:" + ("" if rows else " (empty)"))
        lines += [f"  {row}" for row in rows]
    if r.get("instructions"):
        lines.append("instructions:")
        lines += [f"  {i['label']}: {i['description']} [{i['id']}]" for i in r["instructions"]]
    if r.get("unknowns"):
        lines.append("open questions:")
        lines += [f"  {u['about']} ({u['reason']})" for u in r["unknowns"]]
    cut = [k for k, v in (r.get("truncated") or {}).items() if v]
    if cut:
        lines.append(f"(truncated: {', '.join(cut)}; raise limit)")
    return "\n".join(lines)


def _text_entity(r: dict[str, Any]) -> str:
    e = r.get("entity") or {}
    head = f"{e.get('name')} ({_get(e, 'entity_type')}, {e.get('id')})"
    if _get(r, "as_of"):
        head += f" as of {_get(r, 'as_of')}"
    rows = [f"  {_fact_line(f)}" for f in [*r.get("attributes", []), *r.get("relations", [])]]
    return "\n".join([head, *(rows or ["  (no current attributes or relations)"])])


def _text_history(r: dict[str, Any]) -> str:
    rows = [f"{_get(a, 'valid_from') or '(start)'} .. {_get(a, 'valid_until') or 'now'}: {a['value']} [{a['id']}]"
            for a in r.get("history", [])]
    return "\n".join(rows) or "No values."


def _text_forgotten(r: dict[str, Any]) -> str:
    dry = r.get("deleted") == 0 and r.get("items")
    lines = [("Would delete:" if dry else f"Deleted {r.get('deleted', 0)}.")]
    lines += [f"- {i.get('kind', 'item')} {i['text']} [{i['id']}]" for i in r.get("items", [])]
    lines += [f"- entity {e['name']} (nothing left about it) [{e['id']}]" for e in r.get("entities", [])]
    return "\n".join(lines)


def _text_corrected(r: dict[str, Any]) -> str:
    lines = [f"~ {_get(c, 'entity_id')} {c['key']}: {_get(c, 'old_value')} -> {_get(c, 'new_value')}"
             for c in r.get("corrections", [])]
    return "\n".join([*lines, f"Now: {_fact_line(r['fact'])}"])


def _text_reflect(r: dict[str, Any]) -> str:
    lines = [r.get("reflection", ""), "evidence: " + (", ".join(r.get("evidence", [])) or "(none)")]
    lines += [f"stored: {_fact_line(a)}" for a in _get(r, "persisted_attributes", [])]
    return "\n".join(lines)


def _text_consolidate(r: dict[str, Any]) -> str:
    head = (f"{'Would create' if _get(r, 'dry_run') else 'Created'} {r.get('created', 0)}, updated "
            f"{r.get('updated', 0)}, superseded {r.get('superseded', 0)}.")
    rows = [f"{o['kind']} {_get(o, 'entity_id')} {o['key']} = {o['value']} (stated {_get(o, 'proof_count')} "
            f"times{', ' + _get(o, 'observation_id') if _get(o, 'observation_id') else ''})"
            for o in r.get("outcomes", [])]
    return "\n".join([head, *rows])


def _text_fsck(r: dict[str, Any]) -> str:
    lines = [f"Checked {r.get('total', 0)} facts."]
    for check in ("contradictions", "duplicates", "injection"):
        findings = r.get(check, [])
        lines.append(f"{check}: {len(findings)}")
        lines += [f"  {f['reason']} [{', '.join(f['ids'])}]" for f in findings]
    return "\n".join(lines)


def _text_thread_append(r: dict[str, Any]) -> str:
    return (f"Appended turn {_get(r, 'turn_index')} ({_get(r, 'turn_id')}) to thread {_get(r, 'thread_id')}.")


def _text_thread_context(r: dict[str, Any]) -> str:
    rows = [f"#{_get(i, 'turn_index')} [{i['origin']}] {i.get('text') or '(text not inline)'} "
            f"({_get(i, 'turn_id')})" for i in r.get("items", [])]
    return "\n".join(rows) or "No turns."


_TEXT: dict[str, Callable[[dict[str, Any]], str]] = {
    "remember": _text_remember, "recall": _text_hits, "get_context": _text_context, "chat": _text_chat,
    "state": _text_state, "entity": _text_entity, "history": _text_history, "forget": _text_forgotten,
    "correct_fact": _text_corrected, "delete_fact": _text_forgotten, "reflect": _text_reflect,
    "consolidate": _text_consolidate, "fsck": _text_fsck, "thread_append": _text_thread_append,
    "thread_context": _text_thread_context,
}


def result_text(tool: str, result: Any) -> str:
    """A tool result as short lines of text (the structured content keeps the full JSON)."""
    render = _TEXT.get(tool)
    if render is not None and isinstance(result, dict):
        try:
            return render(result)
        except (KeyError, TypeError, AttributeError):
            log.debug("no text rendering of this %s result; JSON instead", tool, exc_info=True)
    return json.dumps(result, ensure_ascii=False)


# --- resources ---------------------------------------------------------------------------


def state_uri(context: str) -> str:
    return f"{URI_SCHEME}://{quote(context, safe='')}/state"


def entity_uri(context: str, type_: str, name: str) -> str:
    return f"{URI_SCHEME}://{quote(context, safe='')}/entities/{quote(type_, safe='')}/{quote(name, safe='')}"


def parse_uri(uri: str) -> tuple[str, list[str]]:
    """(context, path segments) of an ``agent-memory://`` URI."""
    prefix = f"{URI_SCHEME}://"
    if not uri.startswith(prefix):
        raise ValueError(f"not an {URI_SCHEME} resource: {uri}")
    context, _, path = uri[len(prefix):].partition("/")
    return unquote(context), [unquote(p) for p in path.split("/")] if path else []


# --- the server --------------------------------------------------------------------------


def build_server(memory: AsyncAgentMemory) -> Any:
    """The MCP server (low-level API of the ``mcp`` SDK 1.x) for one context of the service."""
    from mcp import types
    from mcp.server.lowlevel import Server
    from mcp.server.lowlevel.helper_types import ReadResourceContents

    from agent_memory import __version__

    # our version, not the MCP SDK's (the SDK's default when none is given)
    server: Server = Server(SERVER_NAME, version=__version__, instructions=(
        f"Long-term memory of context {memory.context_id!r}: remember statements, recall facts, read the "
        "current state and an attribute's history, chat with memory, append to and read shared threads."))
    by_name = {t.name: t for t in TOOLS}
    context = memory.context_id

    @server.list_tools()
    async def list_tools() -> list[types.Tool]:
        return [types.Tool(name=t.name, description=t.description, inputSchema=t.input_schema()) for t in TOOLS]

    @server.call_tool()
    async def call_tool(name: str, arguments: dict[str, Any]) -> Any:
        spec = by_name.get(name)
        if spec is None:
            return _error_result(types, f"unknown tool {name!r}")
        try:
            parsed = spec.parse(arguments)
            result = _jsonable(await spec.run(memory, parsed))
        except pydantic.ValidationError as exc:
            return _error_result(types, _validation_text(name, exc))
        except (InvalidRequest, ToolInputError) as exc:
            return _error_result(types, f"invalid arguments for {name}: {exc}")
        except ApiError as exc:
            problem = {**exc.problem, "status": exc.status}
            return _error_result(types, f"{exc.status} {exc.title}: {exc.detail}", problem)
        except AgentMemoryError as exc:
            return _error_result(types, f"agent-memory service unavailable: {exc}")
        return [types.TextContent(type="text", text=result_text(name, result))], result

    @server.list_resources()
    async def list_resources() -> list[types.Resource]:
        return [types.Resource(uri=state_uri(context), name="state", title=f"Memory state of {context}",
                               description="What the agent believes now, by category", mimeType=JSON)]

    @server.list_resource_templates()
    async def list_resource_templates() -> list[types.ResourceTemplate]:
        return [
            types.ResourceTemplate(uriTemplate=f"{URI_SCHEME}://{{context}}/state", name="state",
                                   description="A context's memory state, by category", mimeType=JSON),
            types.ResourceTemplate(uriTemplate=f"{URI_SCHEME}://{{context}}/entities/{{type}}/{{name}}",
                                   name="entity", description="An entity's current attributes and relations",
                                   mimeType=JSON),
        ]

    @server.read_resource()
    async def read_resource(uri: Any) -> Iterable[ReadResourceContents]:
        ctx, path = parse_uri(str(uri))
        if ctx != context:
            raise ValueError(f"this server serves context {context!r}, not {ctx!r}")
        try:
            if path == ["state"]:
                value: Any = await memory.state()
            elif len(path) == 3 and path[0] == "entities":
                value = await memory.entities.get(path[1], path[2])
            else:
                raise ValueError(f"no such resource: {uri}")
        except ApiError as exc:
            raise ValueError(f"{exc.status} {exc.title}: {exc.detail}") from exc
        return [ReadResourceContents(content=json.dumps(_jsonable(value), ensure_ascii=False), mime_type=JSON)]

    return server


def _client(args: argparse.Namespace) -> AsyncAgentMemory:
    return AsyncAgentMemory(args.context, base_url=args.url, api_key=args.api_key, partition=args.partition,
                            on_behalf_of=args.on_behalf_of, timeout=120)


async def serve_stdio(args: argparse.Namespace) -> None:
    from mcp.server.stdio import stdio_server

    async with _client(args) as memory:
        server = build_server(memory)
        async with stdio_server() as (read, write):
            await server.run(read, write, server.create_initialization_options())


def http_app(memory: AsyncAgentMemory, host: str, path: str = "/mcp") -> Any:
    """A Starlette app serving the MCP endpoint at ``path`` (streamable HTTP), with the SDK's
    DNS-rebinding protection when bound to loopback."""
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
    from mcp.server.transport_security import TransportSecuritySettings
    from starlette.applications import Starlette
    from starlette.routing import Route

    from agent_memory.interfaces.netaddr import is_loopback

    security = None
    if is_loopback(host):
        security = TransportSecuritySettings(
            enable_dns_rebinding_protection=True,
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*"],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"])
    manager = StreamableHTTPSessionManager(app=build_server(memory), security_settings=security)

    class _Endpoint:  # an ASGI app: Starlette routes to a class instance as one
        async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
            await manager.handle_request(scope, receive, send)

    return Starlette(routes=[Route(path, endpoint=_Endpoint())], lifespan=lambda app: manager.run())


async def serve_http(args: argparse.Namespace) -> None:
    import uvicorn

    async with _client(args) as memory:
        app = http_app(memory, args.host, args.path)
        config = uvicorn.Config(app, host=args.host, port=args.port, log_level="warning", lifespan="on")
        server = uvicorn.Server(config)
        log.info("agent-memory MCP server on http://%s:%d%s (context %s, service %s)", args.host, args.port,
                 args.path, args.context, args.url or "AGENT_MEMORY_URL")
        await server.serve()


def registration(context: str, url: str | None = None, api_key: str | None = None) -> dict[str, Any]:
    """The ``mcpServers`` block that starts this installation's MCP server over stdio: the
    ``agent-memory`` script beside this interpreter by its absolute path (a host does not
    search a venv's bin/), or this interpreter running the CLI module when there is none."""
    from pathlib import Path

    python = Path(sys.executable).absolute()
    script = python.with_name("agent-memory")
    args = ["mcp", "--context", context]
    if script.is_file():
        entry: dict[str, Any] = {"command": str(script), "args": args}
    else:
        entry = {"command": str(python), "args": ["-m", "agent_memory.interfaces.cli", *args]}
    env = {"AGENT_MEMORY_URL": url or os.environ.get("AGENT_MEMORY_URL") or "http://127.0.0.1:8080"}
    key = api_key or os.environ.get("AGENT_MEMORY_API_KEY")
    if key:
        env["AGENT_MEMORY_API_KEY"] = key
    entry["env"] = env
    return {"mcpServers": {SERVER_NAME: entry}}


def _print_registration(args: argparse.Namespace) -> int:
    print(json.dumps(registration(args.context, args.url, args.api_key), indent=2))
    return 0


def add_command(sub: Any) -> None:
    mcp = sub.add_parser("mcp", help="serve memory to MCP hosts (stdio or streamable HTTP), through the SDK")
    mcp.add_argument("--context", required=True, help="the context the tools read and write")
    mcp.add_argument("--url", default=None, help="service URL (AGENT_MEMORY_URL, default http://127.0.0.1:8080)")
    mcp.add_argument("--api-key", default=None, help="bearer key (AGENT_MEMORY_API_KEY)")
    mcp.add_argument("--partition", default=None, help="a partition within the context (the x-memory-partition header; default: none)")
    mcp.add_argument("--on-behalf-of", default=None, dest="on_behalf_of",
                     help="act for this principal (the key needs 'delegate')")
    mcp.add_argument("--transport", choices=["stdio", "http"], default="stdio",
                     help="stdio (an MCP host starts the process) or streamable HTTP")
    mcp.add_argument("--host", default="127.0.0.1", help="with --transport http")
    mcp.add_argument("--port", type=int, default=8765, help="with --transport http")
    mcp.add_argument("--path", default="/mcp", help="with --transport http: the endpoint's path")
    mcp.add_argument("--allow-remote", action="store_true",
                     help="with --transport http: bind a non-loopback address (anyone who reaches it acts "
                          "with this server's API key)")
    mcp.set_defaults(func=run_command)

    config = sub.add_parser(
        "mcp-config", help="print the mcpServers block that registers this installation's MCP server in a host",
        description="Print the JSON block an MCP host (Claude Desktop, an IDE agent) needs to start "
                    "`agent-memory mcp` over stdio, with this installation's command by its absolute path.")
    config.add_argument("--context", required=True, help="the context the tools read and write, e.g. acme")
    config.add_argument("--url", default=None,
                        help="service URL the server calls (AGENT_MEMORY_URL, default http://127.0.0.1:8080)")
    config.add_argument("--api-key", default=None,
                        help="bearer key to put in the block (AGENT_MEMORY_API_KEY; omitted when unset)")
    config.set_defaults(func=_print_registration)


def run_command(args: argparse.Namespace) -> int:
    try:
        import anyio
        import mcp  # noqa: F401
    except ImportError:
        print("agent-memory: the MCP server needs the mcp extra: `make install` in a checkout, or "
              "pip install 'mcp>=1.25,<2'", file=sys.stderr)
        return 2
    if args.transport == "http":
        from agent_memory.interfaces.netaddr import is_loopback

        if not is_loopback(args.host) and not args.allow_remote:
            print(f"agent-memory: refusing to serve MCP on {args.host}: every caller would act with this "
                  "server's API key; bind a loopback address or pass --allow-remote", file=sys.stderr)
            return 2
        anyio.run(serve_http, args)
    else:
        anyio.run(serve_stdio, args)
    return 0

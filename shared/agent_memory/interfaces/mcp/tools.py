"""The MCP tools: each one's input (a request model of the service, less what it does not
offer) and the async SDK call it makes."""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agent_memory.client import AsyncAgentMemory
from agent_memory.client._calls import fact_collection
from agent_memory.interfaces.mcp.inputs import (
    CorrectFactInput,
    EntityInput,
    FactInput,
    HistoryInput,
    StateInput,
    ThreadAppendInput,
    ThreadContextInput,
)
from agent_memory.interfaces.mcp.parameters import describe
from agent_memory.models.care import ConsolidateRequest, FsckRequest, ReflectRequest
from agent_memory.models.reads import ForgetRequest
from agent_memory.models.requests import ChatRequest, WriteFactsRequest
from agent_memory.models.retrieval import ContextRequest, QueryRequest

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
        return describe(_prune_defs(schema), self.name)

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

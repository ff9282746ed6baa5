"""What keeps the SDK whole: every openapi.yaml operation has an SDK method, the async
client is the sync one's twin, the response models agree with openapi.yaml, and importing
the client loads no AWS, search or model library."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest
from openapi_schemas import spec
from pydantic import BaseModel

from agent_memory.client import aio, sync
from agent_memory.models import extraction, wire

METHODS = {"get", "post", "put", "delete", "patch"}

# sync class -> its async twin
TWINS = [
    (sync.AgentMemory, aio.AsyncAgentMemory), (sync.Session, aio.AsyncSession), (sync.Sessions, aio.AsyncSessions),
    (sync.Entities, aio.AsyncEntities), (sync.Attributes, aio.AsyncAttributes),
    (sync.Relations, aio.AsyncRelations), (sync.Actions, aio.AsyncActions),
    (sync.Instructions, aio.AsyncInstructions), (sync.Uncertainty, aio.AsyncUncertainty),
    (sync.Documents, aio.AsyncDocuments), (sync.Traces, aio.AsyncTraces), (sync.Receipts, aio.AsyncReceipts),
]


def operation_ids() -> set[str]:
    return {op["operationId"] for item in spec()["paths"].values() for method, op in item.items()
            if method in METHODS}


def sdk_operations(classes: list[type]) -> dict[str, list[str]]:
    """operationId -> the SDK methods marked as reaching it."""
    found: dict[str, list[str]] = {}
    for cls in classes:
        for name, member in inspect.getmembers(cls, callable):
            op = getattr(member, "__operation_id__", None)
            if op:
                found.setdefault(op, []).append(f"{cls.__name__}.{name}")
    return found


@pytest.mark.parametrize("flavour", [0, 1], ids=["sync", "async"])
def test_every_openapi_operation_has_an_sdk_method(flavour):
    classes = [pair[flavour] for pair in TWINS]
    found = sdk_operations(classes)
    missing = operation_ids() - set(found)
    assert not missing, f"openapi.yaml operations without an SDK method: {sorted(missing)}"
    unknown = set(found) - operation_ids()
    assert not unknown, f"SDK methods marked with operations openapi.yaml lacks: {sorted(unknown)}"


LOCAL_ONLY = {"handle", "mcp_url"}  # make no request: the same plain method in both flavours


def _public(cls: type) -> dict[str, object]:
    own = set(vars(cls)) | {n for base in cls.__mro__[1:] if base.__module__.startswith("agent_memory.client")
                            for n in vars(base)}
    return {n: getattr(cls, n) for n in own if not n.startswith("_") and callable(getattr(cls, n))
            and not isinstance(getattr(cls, n), type) and n not in dir(BaseModel)}


@pytest.mark.parametrize("sync_cls,async_cls", TWINS, ids=[s.__name__ for s, _ in TWINS])
def test_async_client_is_the_twin_of_the_sync_one(sync_cls, async_cls):
    sync_methods, async_methods = _public(sync_cls), _public(async_cls)
    assert set(sync_methods) == set(async_methods)
    for name, method in sync_methods.items():
        twin = async_methods[name]
        params = [(p.name, p.kind, p.default) for p in inspect.signature(method).parameters.values()]
        twin_params = [(p.name, p.kind, p.default) for p in inspect.signature(twin).parameters.values()]
        assert params == twin_params, f"{async_cls.__name__}.{name} differs from {sync_cls.__name__}.{name}"
        assert getattr(method, "__operation_id__", None) == getattr(twin, "__operation_id__", None)
        lazily_iterated = inspect.isasyncgenfunction(twin) or "AsyncIterator" in str(
            inspect.signature(twin).return_annotation)
        if name not in LOCAL_ONLY:
            assert inspect.iscoroutinefunction(twin) or lazily_iterated, f"{async_cls.__name__}.{name} is not async"


# wire model -> openapi.yaml component
MODELS = {
    wire.Health: "Health", wire.ContextInfo: "ContextInfo", wire.Session: "Session", wire.Turn: "Turn", wire.TurnPage: "TurnPage",
    wire.PageInfo: "PageInfo", wire.AuditRecord: "AuditRecord", wire.AuditPage: "AuditPage", wire.FactSource: "FactSource", wire.MemoryEntity: "MemoryEntity",
    wire.MemoryAttribute: "MemoryAttribute", wire.MemoryRelation: "MemoryRelation",
    wire.MemoryAction: "MemoryAction", wire.StateInstruction: "StateInstruction",
    wire.MemoryInstruction: "MemoryInstruction", wire.MemoryUncertainty: "MemoryUncertainty",
    wire.StateCategory: "StateCategory", wire.State: "State", wire.ProfileEntry: "ProfileEntry",
    wire.Profile: "Profile", wire.EntityDetail: "EntityDetail", wire.AttributeHistory: "AttributeHistory",
    wire.ResolveUncertaintyResponse: "ResolveUncertaintyResponse", wire.ForgetResponse: "ForgetResponse",
    wire.CorrectFactResponse: "CorrectFactResponse",
    wire.WriteFactsResponse: "WriteFactsResponse", wire.WriteFactsBatchResponse: "WriteFactsBatchResponse",
    wire.Citation: "CitationJson", wire.ChatResponse: "ChatResponseJson", wire.Trace: "Trace", wire.TraceSummary: "TraceSummary", wire.TraceList: "TraceList",
    wire.TraceStats: "TraceStats", wire.Inspection: "Inspection",
    wire.ErasureReceipt: "ErasureReceipt", wire.ReceiptVerification: "ReceiptVerification",
    wire.QueryHit: "QueryHit", wire.QueryResponse: "QueryResponse", wire.ContextSource: "ContextSource",
    wire.ContextResponse: "ContextResponse", wire.UploadDocumentResponse: "UploadDocumentResponse",
    wire.Document: "Document", wire.DocumentChunk: "DocumentChunk",
    wire.DocumentUploadTicket: "DocumentUploadTicket",
    wire.ReprocessDocumentResponse: "ReprocessDocumentResponse", wire.RecomputeLinksResponse: "RecomputeLinksResponse",
    wire.DocumentQueryHit: "DocumentQueryHit", wire.DocumentQueryResponse: "DocumentQueryResponse",
    wire.DocumentQueryChunk: "DocumentQueryChunk", wire.DocumentRef: "DocumentRef", wire.GraphEvidence: "GraphEvidence",
    wire.Keyword: "Keyword", wire.KeywordPage: "KeywordPage", wire.KeywordDocument: "KeywordDocument",
    wire.KeywordDetail: "KeywordDetail", wire.KeywordSearchHit: "KeywordSearchHit",
    wire.KeywordSearchResponse: "KeywordSearchResponse", wire.DocumentKeyword: "DocumentKeyword",
    wire.DocumentKeywords: "DocumentKeywords",
    wire.AppendThreadTurnResponse: "AppendThreadTurnResponse", wire.ThreadTurn: "ThreadTurn",
    wire.Thread: "Thread", wire.ThreadContextItem: "ThreadContextItem", wire.Problem: "Problem",
    wire.ConsolidateOutcome: "ConsolidateOutcome", wire.ConsolidateResponse: "ConsolidateResponse",
    wire.ReflectResponse: "ReflectResponse", wire.ProposedRelation: "ProposedRelation",
    wire.ElaborateOutcome: "ElaborateOutcome", wire.ElaborateResponse: "ElaborateResponse",
    wire.LifecycleResponse: "LifecycleResponse", wire.FsckFinding: "FsckFinding", wire.FsckReport: "FsckReport",
    wire.Whoami: "Whoami", wire.MintedKey: "MintedKey", wire.KeyDetail: "KeyDetail", wire.Principal: "Principal",
    wire.EffectiveGrants: "EffectiveGrants", wire.ScopeNode: "ScopeNode", wire.ForgetScopeResponse: "ForgetScopeResponse",
    wire.ImportResponse: "ImportResponse", wire.PortabilityJob: "PortabilityJob",
    extraction.ExtractionResult: "ExtractionResultJson",
}


def _properties(schema: dict) -> tuple[set[str], set[str]]:
    """(property names, required names) of a component, through ``allOf``."""
    if "$ref" in schema:
        return _properties(spec()["components"]["schemas"][schema["$ref"].rsplit("/", 1)[1]])
    props, required = set(schema.get("properties", {})), set(schema.get("required", []))
    for part in schema.get("allOf", []):
        p, r = _properties(part)
        props, required = props | p, required | r
    return props, required


@pytest.mark.parametrize("model,component", MODELS.items(), ids=[c for c in MODELS.values()])
def test_wire_models_match_openapi(model: type[BaseModel], component: str):
    props, required = _properties(spec()["components"]["schemas"][component])
    aliases = {f.alias or name: f for name, f in model.model_fields.items()}
    assert set(aliases) == props, f"{model.__name__} fields differ from {component}"
    demanded = {alias for alias, f in aliases.items() if f.is_required()}
    assert demanded <= required, f"{model.__name__} demands fields {component} does not guarantee"


def test_every_response_schema_has_a_model():
    """A success response naming a component schema must be one the SDK parses into a model."""
    named = set(MODELS.values())
    for path, item in spec()["paths"].items():
        for method, op in item.items():
            if method not in METHODS:
                continue
            for status, response in op["responses"].items():
                for media, body in (response.get("content") or {}).items():
                    if media == "text/event-stream":
                        # one parsed SSE event (event name + data); client/streaming.py reads
                        # its frames, and the done event's data is ChatResponseJson, checked
                        # under application/json
                        continue
                    ref = body["schema"].get("$ref", "")
                    if str(status).startswith("2") and ref:
                        assert _parsed(ref.rsplit("/", 1)[1], named), f"{method} {path}: no model for {ref}"


def _parsed(component: str, named: set[str]) -> bool:
    """A modelled component, or a list wrapper (a page, the thread context) of modelled items."""
    if component in named:
        return True
    schema = spec()["components"]["schemas"][component]
    arrays = [p for p in schema.get("properties", {}).values() if p.get("type") == "array"]
    return len(arrays) == 1 and arrays[0]["items"].get("$ref", "").rsplit("/", 1)[1] in named


HEAVY = ("boto3", "botocore", "opensearchpy", "openai", "numpy", "aws_lambda_powertools", "yaml", "tenacity")


def test_importing_the_client_loads_no_server_library():
    code = ("import sys, json; import agent_memory.client; "
            "print(json.dumps(sorted({m.split('.')[0] for m in sys.modules})))")
    loaded = set(json.loads(subprocess.run([sys.executable, "-c", code], check=True, capture_output=True,
                                           text=True).stdout))
    assert "httpx" in loaded and "pydantic" in loaded
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


@pytest.mark.parametrize("model", [wire.MemoryAttribute, wire.MemoryRelation, wire.MemoryAction, wire.MemoryInstruction],
                         ids=lambda m: m.__name__)
def test_the_facts_built_from_shared_parts_keep_openapis_field_order(model: type[BaseModel]):
    """Their fields come from shared bases (models/wire_memory.py), whose order decides the
    order of every fact's keys on the wire: it must stay the one openapi.yaml lists."""
    schema = spec()["components"]["schemas"][model.__name__]
    if "allOf" in schema:  # an extension of another component: its properties, then its own
        parts = [spec()["components"]["schemas"][p["$ref"].rsplit("/", 1)[1]] if "$ref" in p else p
                 for p in schema["allOf"]]
        listed = [name for part in parts for name in part.get("properties", {})]
    else:
        listed = list(schema["properties"])
    assert [f.alias or name for name, f in model.model_fields.items()] == listed

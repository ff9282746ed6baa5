"""Response models of the HTTP API: the shapes openapi.yaml names, as pydantic models.

The SDK parses every response into these, and tests check each one against its
openapi.yaml component (tests/http/test_wire_models.py), so the wire has one definition.
Attributes are snake_case; the wire is camelCase (``alias``). A model can also be read by
its wire name (``state.identity["attributes"]``, ``correction["oldValue"]``), as the spec's
examples do. Unknown fields are kept (``extra="allow"``), so an older SDK keeps working
when the service adds a field.

This module imports pydantic only: the light client install depends on it.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from agent_memory.models.extraction import CorrectionSummary, ExtractionResult
from agent_memory.models.wire_base import WireModel
from agent_memory.models.wire_memory import (  # noqa: F401 - re-exported: the wire's one namespace
    Category,
    FactSource,
    MemoryAction,
    MemoryAttribute,
    MemoryEntity,
    MemoryInstruction,
    MemoryRelation,
    MemoryUncertainty,
    StateInstruction,
)


class Problem(WireModel):
    type: str = "about:blank"
    title: str = ""
    status: int = 0
    detail: str = ""
    field: str | None = None
    code: str | None = None


class Health(WireModel):
    status: str
    store: str | None = None
    search: str | None = None


class PageInfo(WireModel):
    has_more: bool
    next_cursor: str | None = None
    total_size: int | None = None


# --- contexts ---------------------------------------------------------------------


class ContextInfo(WireModel):
    """A context the key may use, with the partitions it may use there."""

    context_id: str
    partitions: list[str] = Field(default_factory=list)


# --- sessions ---------------------------------------------------------------------


class Session(WireModel):
    id: str
    scopes: list[list[str]] = Field(default_factory=list)
    labels: list[str] = Field(default_factory=list)
    created_at: str
    closed_at: str | None = None
    metadata: dict[str, Any] | None = None


class TurnSpeaker(WireModel):
    name: str
    entity_id: str


class Turn(WireModel):
    id: str
    session: str
    role: Literal["user", "assistant", "system", "tool"]
    content: str
    seq: int
    created_at: str
    observed_at: str | None = None
    speaker: TurnSpeaker | None = None


class TurnPage(WireModel):
    turns: list[Turn]
    page: PageInfo


# --- stored memory ----------------------------------------------------------------


# FactSource, MemoryEntity, MemoryAttribute, MemoryRelation, MemoryAction, StateInstruction,
# MemoryInstruction and MemoryUncertainty live in models.wire_memory (imported above).


class StateCategory(WireModel):
    entities: list[MemoryEntity] = Field(default_factory=list)
    attributes: list[MemoryAttribute] = Field(default_factory=list)
    relations: list[MemoryRelation] = Field(default_factory=list)
    actions: list[MemoryAction] = Field(default_factory=list)


class Unknown(WireModel):
    about: str
    reason: str


class StateTruncation(WireModel):
    entities: bool
    attributes: bool
    relations: bool
    actions: bool
    instructions: bool
    unknowns: bool


class State(WireModel):
    identity: StateCategory
    knowledge: StateCategory
    context: StateCategory
    instructions: list[StateInstruction]
    unknowns: list[Unknown]
    truncated: StateTruncation


class ProfileEntry(WireModel):
    entity: str
    entity_type: str
    key: str
    value: str


class Profile(WireModel):
    self_facts: list[ProfileEntry]
    static: list[ProfileEntry]
    dynamic: list[ProfileEntry]
    preferences: list[ProfileEntry]
    instructions: list[StateInstruction]


class EntityDetailTruncation(WireModel):
    attributes: bool
    relations: bool


class EntityDetail(WireModel):
    entity: MemoryEntity
    attributes: list[MemoryAttribute]
    relations: list[MemoryRelation]
    as_of: str | None
    truncated: EntityDetailTruncation


class AttributeHistory(WireModel):
    history: list[MemoryAttribute]


class ResolveUncertaintyResponse(WireModel):
    uncertainty: MemoryUncertainty
    fact: MemoryAttribute | MemoryRelation | None


class CorrectFactResponse(WireModel):
    """``PATCH /attributes/{id}`` and ``/relations/{id}``: the row now current, the corrected
    row as it reads now, and the correction (``c.previous.value`` -> ``c.current.value``)."""

    fact: MemoryAttribute | MemoryRelation
    previous: MemoryAttribute | MemoryRelation
    corrections: list[CorrectionSummary]
    turn_id: str | None = None


class ForgetItem(WireModel):
    id: str
    kind: Literal["attribute", "relation", "action", "instruction", "turn", "chunk"]
    text: str
    score: float


class ForgottenEntity(WireModel):
    id: str
    name: str


class DerivedFact(WireModel):
    id: str
    kind: Literal["attribute", "relation", "action", "instruction", "turn"]
    text: str
    source_id: str


class ErasureReceipt(WireModel):
    """What one removal took out of each place (ids, keys, SHA-256 hashes; never the text)."""

    id: str | None
    at: str | None
    dry_run: bool
    principal: str
    action: Literal["forget", "fact.delete", "entity.delete", "session.delete", "document.delete", "scope.forget"]
    purge: bool
    records: dict[str, list[str]]
    partitions: int
    search_units: list[str]
    originals: list[str]
    staged_uploads: list[str]
    response_cache: int
    query_embeddings: int
    idempotency_replies: int
    traces: list[str]
    content_hashes: list[str]


class RemainingItem(WireModel):
    place: str
    kind: str | None = None
    id: str
    state: str


class ReceiptVerification(WireModel):
    id: str
    verified_at: str
    clean: bool
    checked: dict[str, int]
    remaining: list[RemainingItem]


class ForgetResponse(WireModel):
    receipt: ErasureReceipt | None = None
    deleted: int
    items: list[ForgetItem]
    entities: list[ForgottenEntity] = []
    derived_facts: list[DerivedFact] = []


# --- writes and chat ----------------------------------------------------------------

class WriteFactsResponse(WireModel):
    mode: Literal["full", "triples", "preview", "none"]
    session_id: str | None
    turn_id: str | None
    extraction: ExtractionResult | None
    memory_category: Category | None = None  # the write's category as applied


class WriteFactsBatchResponse(WireModel):
    session_id: str | None
    turn_ids: list[str]
    extractions: list[ExtractionResult | None]
    memory_category: Category | None = None


class Citation(WireModel):
    marker: str
    id: str
    kind: str
    snippet: str
    score: float
    document_id: str | None = None
    session_id: str | None = None
    document_title: str | None = None
    position_percent: int | None = None
    page: int | None = None
    occurred_at: str | None = None
    role: str | None = None


class ChatResponse(WireModel):
    reply: str
    session_id: str
    trace_id: str
    citations: list[Citation]
    memory_updates: ExtractionResult


class Trace(WireModel):
    id: str
    retrieval: dict[str, Any] | None
    response: dict[str, Any] | None
    query_text: str
    resolution_tier: str
    tier_reason: str
    latency_ms: int
    cached: bool
    created_at: str


class InspectionView(WireModel):
    as_of: str | None
    valid_from: str | None
    valid_until: str | None


class Provenance(WireModel):
    source: FactSource
    fact_ids: list[str]
    first_stated_at: str | None


class Inspection(WireModel):
    """``GET /inspect``: one object by reference, discriminated by ``kind``."""

    kind: Literal["entity", "attribute", "relation", "trace"]
    ref: str
    view: InspectionView
    entity: MemoryEntity | None
    attributes: list[MemoryAttribute]
    relations: list[MemoryRelation]
    history: list[MemoryAttribute | MemoryRelation]
    provenance: list[Provenance]
    truncated: bool
    trace: Trace | None


class TraceSummary(WireModel):
    """A trace's headline (``GET /traces``): the Spectron client's ``TraceRecord``."""

    id: str
    query_text: str
    resolution_tier: str
    tier_reason: str
    latency_ms: int
    cached: bool
    created_at: str


class TraceList(WireModel):
    traces: list[TraceSummary]


class TraceStats(WireModel):
    window_hours: int
    total_queries: int
    avg_latency_ms: float
    cache_hits: int
    cache_hit_rate: float
    response_traces_total: int
    response_traces_cached: int
    tier_counts: dict[str, int]
    source_kind_distribution: list[dict[str, Any]]
    retrieval: dict[str, Any]
    supersession: dict[str, Any]
    contradiction: dict[str, Any]
    verbs: dict[str, int]
    truncated: bool


# --- recall -------------------------------------------------------------------------


class QueryHit(WireModel):
    id: str
    text: str
    source: str
    kind: str  # = source, named as a citation names it (Citation.kind)
    score: float
    occurred_at: str | None
    role: str | None
    session_id: str | None = None
    source_ids: list[str] = Field(default_factory=list)
    document_id: str | None = None
    document_title: str | None = None
    position_percent: int | None = None
    page: int | None = None


class QueryResponse(WireModel):
    tier: int
    hits: list[QueryHit]
    query_ms: float
    trace: dict[str, Any]


class ContextSource(WireModel):
    marker: str
    id: str
    source: str
    score: float
    occurred_at: str | None = None
    role: str | None = None
    document_title: str | None = None
    position_percent: int | None = None
    page: int | None = None


class ContextResponse(WireModel):
    context: str
    tier: int
    query_ms: float
    sources: list[ContextSource] = Field(default_factory=list)
    excluded: list[str] = Field(default_factory=list)


# --- documents ----------------------------------------------------------------------


class UploadDocumentResponse(WireModel):
    id: str
    status: str
    content_hash: str
    deduplicated: bool
    title: str | None = None
    chunk_count: int | None = None
    chunks_total: int | None = None


class ReprocessDocumentResponse(WireModel):
    id: str
    status: str
    content_hash: str
    deduplicated: bool
    queued: bool
    title: str | None = None
    chunk_count: int | None = None
    chunks_total: int | None = None


class RecomputeLinksResponse(WireModel):
    links_emitted: int
    documents_relinked: int
    continued: bool


class Document(WireModel):
    id: str
    title: str
    content_hash: str
    size: int
    chunk_count: int
    chunks_total: int
    chunks_done: int
    status: str
    error: Problem | None = None
    format: Literal["text", "markdown", "pdf", "docx", "html"]
    filename: str | None = None
    created_at: str
    observed_at: str
    scopes: list[list[str]]
    labels: list[str]
    # the Spectron client's names
    size_bytes: int
    mime_type: str
    version: int
    source: str | None = None
    updated_at: str
    keyword_count: int | None = None
    passages_forgotten: int | None = None


class DocumentUploadTicket(WireModel):
    id: str
    status: str
    upload_url: str
    method: str
    headers: dict[str, str]
    expires_at: str
    size: int


class DocumentChunk(WireModel):
    id: str
    document_id: str
    document_title: str
    ordinal: int
    offset: int
    position_percent: int
    heading_path: list[str]
    page: int | None = None
    text: str
    # the Spectron client's names
    document: str
    position: int
    char_start: int
    char_end: int
    section: str | None = None


class DocumentQueryChunk(WireModel):
    """A chunk as a document query finds it: ``DocumentChunk`` without its character offsets."""

    id: str
    document_id: str | None
    document_title: str | None
    ordinal: int | None
    position_percent: int | None
    heading_path: list[str]
    page: int | None = None
    text: str
    document: str | None
    position: int | None
    section: str | None = None


class DocumentRef(WireModel):
    """A hit's document when it could not be read back (deleted since it was indexed): its id."""

    id: str


class GraphEvidence(WireModel):
    entity: str
    fact_id: str
    fact_kind: str
    fact: str
    via: str


class DocumentQueryHit(WireModel):
    score: float
    chunk: DocumentQueryChunk
    document: Document | DocumentRef
    graph_evidence: list[GraphEvidence] | None = None


class DocumentQueryResponse(WireModel):
    results: list[DocumentQueryHit]
    query_ms: int


class Keyword(WireModel):
    id: str
    normalised: str
    text: str
    document_count: int


class KeywordPage(WireModel):
    keywords: list[Keyword]
    page: int
    page_size: int
    total: int
    has_more: bool
    next_cursor: str | None = None


class KeywordDocument(WireModel):
    id: str
    document_id: str
    title: str
    score: float


class KeywordDetail(WireModel):
    id: str
    normalised: str
    text: str
    document_count: int
    documents: list[KeywordDocument]


class KeywordSearchHit(WireModel):
    id: str
    normalised: str
    text: str
    document_count: int
    score: float


class KeywordSearchResponse(WireModel):
    results: list[KeywordSearchHit]
    query_ms: int


class DocumentKeyword(WireModel):
    id: str
    normalised: str
    text: str
    score: float


class DocumentKeywords(WireModel):
    keywords: list[DocumentKeyword]


# --- threads ------------------------------------------------------------------------


class AppendThreadTurnResponse(WireModel):
    thread_id: str
    turn_index: int
    turn_id: str
    entity_id: str | None
    created_at: str


class ThreadTurn(WireModel):
    thread_id: str
    turn_id: str
    turn_index: int
    text: str
    entity_id: str | None
    metadata: dict[str, Any] = Field(default_factory=dict)
    acl_readers: list[str] | None
    created_at: str
    created_by: str | None = None
    text_bytes: int


class Thread(WireModel):
    thread_id: str
    partition: str
    turn_count: int
    acl_readers: list[str] | None
    created_at: str
    updated_at: str


class ThreadContextItem(WireModel):
    turn_id: str
    turn_index: int
    text: str | None
    metadata: dict[str, Any] = Field(default_factory=dict)
    entity_id: str | None
    origin: Literal["recent", "semantic"]
    score: float | None = None
    created_at: str
    text_bytes: int
    text_inline: bool


# --- audit ------------------------------------------------------------------------


class AuditRecord(WireModel):
    id: str
    at: str
    principal: str
    action: str
    reason: Literal["admin-bypass", "delegation", "usage", "erasure"]
    on_behalf_of: str | None = None
    context_id: str | None = None
    partition: str | None = None
    groups: list[str] = Field(default_factory=list)
    record_ids: list[str] = Field(default_factory=list)
    request_id: str | None = None
    # the Spectron client's row fields
    kind: Literal["decision", "retrieval", "response"]
    trace_id: str
    created_at: str
    cost: float
    latency_ms: int
    rows_touched: int
    model: str | None = None
    # a cost row's own (reason "usage"; docs/decisions.md, "Audit costs")
    status: int | None = None
    rows_read: int | None = None
    rows_written: int | None = None
    model_calls: int | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    # an erasure's (reason "erasure"): its receipt, ids and hashes only
    receipt_id: str | None = None
    receipt: ErasureReceipt | None = None


class AuditPage(WireModel):
    rows: list[AuditRecord]
    page: PageInfo


# --- memory care ----------------------------------------------------------------------------

class ConsolidateOutcome(WireModel):
    kind: Literal["create", "update", "supersede"]
    entity_name: str
    entity_id: str
    key: str
    value: str
    proof_count: int
    observation_id: str | None = None
    source_ids: list[str] = []
    rationale: str


class ConsolidateResponse(WireModel):
    created: int
    updated: int
    superseded: int
    outcomes: list[ConsolidateOutcome]
    dry_run: bool
    trace_id: str


class ReflectResponse(WireModel):
    reflection: str
    evidence: list[str]
    persisted_attributes: list[MemoryAttribute]
    trace_id: str


class ProposedRelation(WireModel):
    subject: str
    label: str
    object: str
    rationale: str
    relation_id: str | None = None


class ElaborateOutcome(WireModel):
    entity_name: str
    entity_type: str
    relations_emitted: int
    proposed_relations: list[ProposedRelation]
    dry_run: bool
    trace_id: str


class ElaborateResponse(WireModel):
    outcomes: list[ElaborateOutcome]
    relations_emitted: int


class LifecycleResponse(WireModel):
    affected: int
    ids: list[str] = []
    dry_run: bool = False


class FsckFinding(WireModel):
    ids: list[str]
    reason: str
    entity: str | None = None
    key: str | None = None
    values: list[str] = []
    score: float | None = None


class FsckReport(WireModel):
    total: int
    contradictions: list[FsckFinding]
    duplicates: list[FsckFinding]
    injection: list[FsckFinding]


# --- administration (/me, /keys, /principals) ---------------------------------------------

class Whoami(WireModel):
    principal_id: str
    display_name: str
    kind: str
    enforce: bool
    grants: dict[str, list[str]]
    effective_grants: dict[str, list[str]]
    token_grants: dict[str, list[str]] | None = None
    delegated_principal_id: str | None = None


class MintedKey(WireModel):
    id: str
    key: str
    name: str
    valid_until: str | None = None


class KeyDetail(WireModel):
    id: str
    name: str
    principal: str
    created_at: str
    grants: dict[str, list[str]]
    contexts: list[str] | None = None
    last_used_at: str | None = None
    valid_until: str | None = None


class Principal(WireModel):
    id: str
    display_name: str
    kind: str
    grants: dict[str, list[str]]


class EffectiveGrants(WireModel):
    path: str
    verbs: list[str]
    as_of: str | None = None


class ScopeNode(WireModel):
    path: str
    created_at: str
    display_name: str | None = None
    description: str | None = None
    tombstoned_at: str | None = None


class ForgetScopeResponse(WireModel):
    receipt: ErasureReceipt | None = None
    forgotten: int
    # False when the forget stopped at the request deadline: call again with ``continuation``.
    complete: bool = True
    continuation: str | None = None


class ImportResponse(WireModel):
    """``POST /import``: what an export stream wrote (docs/export.md)."""

    context_id: str
    records: int
    written: int
    unchanged: int
    originals: int
    principals: int
    by_type: dict[str, int]


class PortabilityJob(WireModel):
    """``/export/jobs`` and ``/import/jobs``: a job's state, progress and, when it is done, its
    result (an import's counts, an export's download URL) or its problem (docs/export.md)."""

    id: str
    kind: str
    context_id: str
    state: str
    created_at: str
    updated_at: str
    records_done: int
    records_total: int | None = None
    bytes: int | None = None
    size: int | None = None
    upload_url: str | None = None
    upload_method: str | None = None
    upload_headers: dict[str, str] | None = None
    upload_expires_at: str | None = None
    download_url: str | None = None
    download_expires_at: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None

"""The slices of the configuration a service may be given: the models block
(``ModelsConfig``, made of ``ModelRef``) and the limits (``Limits``).

``agent_memory.config.Settings`` holds them beside what only the composition root reads
(storage, endpoints, secret ARNs). They live apart from it so that a service can name the
slice it takes without importing ``config`` (an import contract in .importlinter keeps
services off it). Services are handed these objects, or single values of them, plus a
``kernel.cursor.CursorSecret`` for paging cursors.
"""

from __future__ import annotations

from dataclasses import dataclass

from agent_memory.kernel.errors import ConfigurationError


@dataclass(frozen=True)
class ModelRef:
    """``provider/model``; the model part may itself contain slashes or colons."""

    provider: str
    model: str

    @classmethod
    def parse(cls, value: str, *, providers: set[str], setting: str) -> ModelRef:
        provider, sep, model = (value or "").strip().partition("/")
        if not sep or not model:
            raise ConfigurationError(f"{setting}: expected 'provider/model', got {value!r}")
        if provider not in providers:
            raise ConfigurationError(
                f"{setting}: unknown provider {provider!r} (known: {', '.join(sorted(providers))})")
        return cls(provider, model)

    def __str__(self) -> str:
        return f"{self.provider}/{self.model}"


@dataclass(frozen=True)
class ModelsConfig:
    extraction: ModelRef
    response: ModelRef
    embedding: ModelRef
    allowed: tuple[str, ...] = ()
    embedding_dimensions: int | None = None
    # A second look at retrieval's best candidates (ports.Reranker); None (``none``) = off
    reranker: ModelRef | None = None
    openai_base_url: str | None = None
    request_timeout_s: float = 30.0
    # Which OpenAI client the openai/ models use: "library" (the openai package; the local
    # service) or "http" (adapters.openai_http on urllib3; template.yaml sets it for the
    # functions, whose first model call would otherwise pay 0.4-0.6 s importing the library).
    openai_client: str = "library"

    def is_allowed(self, name: str) -> bool:
        return name == str(self.response) or name in self.allowed

    def allowed_names(self) -> list[str]:
        """Every ``model`` a request may name: the response model, then ``models.allowed``."""
        return list(dict.fromkeys([str(self.response), *self.allowed]))


@dataclass(frozen=True)
class Limits:
    facts_text_bytes: int = 64 * 1024
    chat_message_bytes: int = 32 * 1024
    thread_turn_bytes: int = 1024 * 1024
    document_bytes: int = 5 * 1024 * 1024
    page_default: int = 100
    page_max: int = 500
    inflight_cap: int = 64
    # Every request's time budget (seconds): locally this setting, in Lambda also the
    # invocation's remaining time less ``deadline_margin_s`` (see agent_memory.kernel.deadline).
    request_deadline_s: float = 29.0
    deadline_margin_s: float = 0.5
    # A streamed response (the chat function's URL, agent_memory/http/lambda_runtime.py) that
    # has said nothing for this long gets an SSE comment, so no idle timeout on its way cuts it.
    stream_keepalive_s: float = 10.0
    cache_similarity: float = 0.95
    extraction_confidence_floor: float = 0.5
    idempotency_ttl_s: int = 24 * 3600
    # What an in-progress idempotency claim's lease adds to the time its request can live
    # (services/facts/idempotency.py): a killed function frees its key this long after it died.
    idempotency_lease_margin_s: float = 5.0
    audit_ttl_s: int = 90 * 24 * 3600  # audit records (admin bypasses, delegated calls) expire after this
    # Concurrent extraction model calls per document being ingested (services/documents/ingestion.py).
    document_concurrency: int = 8
    # Characters of consecutive chunks one extraction call covers (a window; each fact still
    # cites its own chunk). A chunk is at most 1,200 characters, so about three to six chunks
    # a call; 0 extracts chunk by chunk.
    document_window_chars: int = 4000
    # How long a query waits for a remote reranker (models.reranker = bedrock/...) before it
    # keeps the fused order (seconds; no retries).
    rerank_timeout_s: float = 1.5
    # The largest request body a synchronous route takes (POST /documents answers 413 above
    # it and names the presigned upload route). Lambda's synchronous payload limit is 6 MB
    # (6,291,456 bytes) for the whole event: 3,000,000 bytes stay below it even when API
    # Gateway base64-encodes the body (x4/3) or the event escapes every character (x2).
    sync_body_bytes: int = 3_000_000
    # Seconds a presigned upload URL (POST /documents/uploads) stays valid.
    upload_url_ttl_s: int = 900
    # --- memory care (services/care: consolidate, reflect, elaborate, lifecycle, fsck) ---
    # Model calls one reflect or elaborate request may make (elaborate's ``budget`` is capped
    # by it), and all care requests of this stack together per UTC day (0: no daily cap).
    care_model_calls_per_call: int = 8
    care_model_calls_per_day: int = 1000
    # Rows one consolidate reads (``factLimit`` caps at it) and observations it writes.
    consolidate_fact_cap: int = 5000
    consolidate_observation_cap: int = 500
    # Read-time importance: halves every ``decay_half_life_days`` since a fact was last
    # stated; each reinforcement adds ``decay_reinforcement_boost`` (rules/decay.py).
    decay_half_life_days: float = 30.0
    decay_reinforcement_boost: float = 0.1
    # POST /lifecycle/expire also removes turns and actions older than this (0: off).
    retention_days: int = 0
    # Rows one fsck or expire reads per collection (bounded work per request).
    care_scan_cap: int = 2000

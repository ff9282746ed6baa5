"""Composition root: builds adapters and services from ``Settings``, once per process.

Only this module reads the whole ``Settings``: each service is handed the slice it uses
(single limit values, ``config_slices.ModelsConfig``, ``Runtime.cursor_secret`` as its
``CursorSecret``), so what a service depends on shows in its constructor.

Everything is created lazily on first use, so a Lambda function that only reads sessions
never imports the model or search libraries (cold start), and the local server, the CLI
and tests share exactly the wiring a deployed function uses.
"""

from __future__ import annotations

import logging
import os
import threading
from functools import cached_property
from typing import TYPE_CHECKING, Any

from agent_memory.config import ModelRef, Settings, load_settings
from agent_memory.kernel.errors import ConfigurationError
from agent_memory.kernel.usage import MeteredStore
from agent_memory.services.events import EventPublisher, FactsChanged, RecordsForgotten
from agent_memory.tracing import traced

if TYPE_CHECKING:
    from collections.abc import Sequence

    from agent_memory.ports import Embedder, LanguageModel, Record, RecordStore, Reranker, SearchIndex
    from agent_memory.services.conversation.sessions import SessionService
    from agent_memory.services.conversation.threads import ThreadService
    from agent_memory.services.facts.idempotency import IdempotencyService
    from agent_memory.services.facts.write import FactsService
    from agent_memory.services.operations.projection import ProjectionChange

log = logging.getLogger("agent_memory")

# The adapter calls that are X-Ray spans on a traced function (agent_memory.tracing):
# store.<call>, search.<call>, model.embed; the language models' spans are MeteredLanguageModel's.
STORE_CALLS = frozenset({"get", "batch_get", "put", "delete", "query", "transact"})
SEARCH_CALLS = frozenset({"upsert", "delete", "write", "delete_context", "get", "search", "rank_rows"})


class Runtime:
    def __init__(self, settings: Settings):
        self.settings = settings
        self._lock = threading.RLock()
        # Domain events (services/events.py), subscribed here once, in every function, not on
        # first use of a service: the copies derived from records follow their changes. The
        # handlers build the services they call on first event.
        self.events = EventPublisher()
        self.events.subscribe(FactsChanged, self._invalidate_responses_citing)
        # Stored replies first, then cached responses: the order forget documents (its step 5).
        self.events.subscribe(RecordsForgotten, self._forget_idempotent_replies_naming)
        self.events.subscribe(RecordsForgotten, self._invalidate_responses_using)
        self.events.subscribe(RecordsForgotten, self._unindex_forgotten_documents)
        self.events.subscribe(RecordsForgotten, self._redact_traces_quoting)

    def _invalidate_responses_citing(self, event: FactsChanged) -> None:
        self.response_cache.mark_written(event.ctx.context_id, event.ctx.partition)
        self.response_cache.invalidate(event.ctx, entity_ids=event.entity_ids)

    def _outdate_responses_searchable(self, change: ProjectionChange) -> None:
        """New evidence reached the index (after the commit, when projection lags): replies
        cached before it are outdated again (``cache.mark_written``). Written to the base store:
        this runs inside the projecting store (its start-up catch-up included)."""
        from agent_memory.services.conversation.chat.cache import mark_written
        from agent_memory.services.operations.projection import evidence_partitions

        for context_id, partition in sorted(evidence_partitions(change)):
            mark_written(self.base_store, context_id, partition)

    def _forget_idempotent_replies_naming(self, event: RecordsForgotten) -> None:
        from agent_memory.services.operations import receipts

        receipts.note_derived(idempotency=self.idempotency.forget_refs(event.ctx, event.ids),
                              idempotency_refs=event.ids)

    def _invalidate_responses_using(self, event: RecordsForgotten) -> None:
        from agent_memory.services.operations import receipts

        entities = [i for i in event.ids if i.startswith("entity:")]
        units = [i for i in event.ids if not i.startswith("entity:")]
        dropped = self.response_cache.invalidate(event.ctx, entity_ids=entities, unit_ids=units)
        # The query embeddings held in memory that quote the removed text go too.
        forget_texts = getattr(self.__dict__.get("embedder"), "forget_texts", None)
        embeddings = forget_texts(sorted(event.texts)) if forget_texts is not None else 0
        receipts.note_derived(response_cache=dropped, query_embeddings=embeddings,
                              cache_refs=[*(f"e#{e}" for e in entities), *(f"u#{u}" for u in units)])

    def _unindex_forgotten_documents(self, event: RecordsForgotten) -> None:
        """A document removed by a forget (a scope forget takes document rows): its keywords go."""
        for doc_id in sorted(i for i in event.ids if i.startswith("doc_")):
            self.keywords.remove_document(event.ctx, doc_id)

    def _redact_traces_quoting(self, event: RecordsForgotten) -> None:
        """Traces that named or quoted a removed record lose the quoted text (ids stay)."""
        from agent_memory.services.operations import receipts

        receipts.note_derived(traces=self.traces.redact(event.ctx, event.ids, event.texts))

    @cached_property
    def receipts(self):
        from agent_memory.services.operations.receipts import Places, ReceiptBook

        def search_get(context_id: str, unit_id: str):
            return self.search.get(context_id, unit_id) if self.search is not None else None

        def cached_queries(hashes: set[str]) -> int:
            cached = getattr(self.__dict__.get("embedder"), "cached_hashes", None)
            return cached(hashes) if cached is not None else 0

        def cache_ref_exists(ctx, ref: str) -> bool:
            from agent_memory.kernel import storage_keys as keys

            if ref.startswith("idem:"):
                from agent_memory.services.facts.idempotency import REF_SK

                return self.store.get(keys.idempotency_ref_pk(ctx, ref[5:]), REF_SK) is not None
            return bool(self.store.query(f"{keys.base(ctx)}#cache-refs#{ref}", limit=1).records)

        uploads = self.upload_store  # None on a function without the bucket: objects not looked at
        return ReceiptBook(self.store, Places(search_get=search_get,
                                              traces_holding=self.traces.holding, cached_queries=cached_queries,
                                              cache_ref_exists=cache_ref_exists,
                                              object_exists=uploads.exists if uploads is not None else None),
                           ttl_s=self.settings.limits.audit_ttl_s)

    def close(self) -> None:
        """Let background work started by this runtime finish (the local ingestion worker)."""
        for name in ("ingestion_queue", "portability_queue"):
            queue = self.__dict__.get(name)
            if queue is not None and hasattr(queue, "close"):
                queue.close()
        sink = self.__dict__.get("audit_sink")
        if sink is not None:
            sink.flush()  # the cost rows still queued
        store = self.__dict__.get("store")
        store = getattr(store, "inner", store)  # under the metering
        if store is not None and hasattr(type(store), "stop_retries"):
            store.stop_retries()  # no pending-projection retry after this
        embedder = self.__dict__.get("embedder")
        if embedder is not None and hasattr(embedder, "close"):
            embedder.close()  # a query embedding started ahead ends; its worker thread goes
        projector = self.__dict__.get("projector")
        if projector is not None and projector.background:
            # What the worker has queued reaches the index now; past the bound it stays in the
            # outbox, which the next start replays.
            projector.drain(timeout_s=5.0)

    # --- adapters -------------------------------------------------------------------

    @cached_property
    def store(self) -> RecordStore:
        """The record store; unless projection runs from DynamoDB Streams, wrapped so that
        committed changes reach the search index; metered (``kernel.usage``: the rows each
        request reads and writes, for its audit cost row)."""
        from agent_memory.services.operations.scope_index import ScopeIndexingStore

        base = ScopeIndexingStore(self.base_store)  # each record's scope-index rows in its transaction
        if self.search is None or self.settings.projection == "stream":
            return MeteredStore(base)
        from agent_memory.services.operations.projector import ProjectingRecordStore

        return MeteredStore(ProjectingRecordStore(base, self.projector,
                                                  retry_interval_s=self.settings.projection_retry_s))

    @cached_property
    def projector(self):
        from agent_memory.services.operations.projector import Projector

        return Projector(self.search, background=self.settings.projection == "background",
                         on_searchable=self._outdate_responses_searchable,
                         settle_s=self.settings.projection_wait_s)

    @property
    def settle(self):
        """Read-your-writes: a read's wait for its context's pending projections
        (``Projector.settle``), or ``None`` where writes are indexed elsewhere (the stream)."""
        if self.settings.search == "none" or self.settings.projection == "stream":
            return None
        _ = self.store  # the projecting store and its projector exist before a read waits on it
        return self.projector.settle

    @cached_property
    def base_store(self) -> RecordStore:
        s = self.settings
        if s.store == "dynamodb":
            from agent_memory.adapters.dynamodb_store import DynamoDBRecordStore

            return traced(DynamoDBRecordStore(s.table_name, region=s.aws_region, endpoint_url=s.dynamodb_endpoint),
                          "store", STORE_CALLS, store=s.store)
        from agent_memory.adapters.sqlite_store import SQLiteRecordStore

        return traced(SQLiteRecordStore(s.sqlite_path), "store", STORE_CALLS, store=s.store)

    @cached_property
    def embedder(self) -> Embedder:
        # Retrieval embeds one query text for several vector legs: cache single-text calls.
        from agent_memory.adapters.query_cache import QueryCachingEmbedder

        # The span is inside the cache: a cached query embeds nothing and records no span.
        inner = build_embedder(self.settings)
        return QueryCachingEmbedder(traced(inner, "model", {"embed"}, model=inner.name))

    @cached_property
    def search(self) -> SearchIndex | None:
        s = self.settings
        if s.search == "none":
            return None
        if s.search == "opensearch":
            from agent_memory.adapters.opensearch.index import OpenSearchIndex
            from agent_memory.adapters.recent_units import RecentUnits
            from agent_memory.adapters.search_breaker import CircuitBreakingSearchIndex
            from agent_memory.services.retrieval.live_revisions import StoreRevisions

            # The index shows writes only after a refresh: hits are checked against the store,
            # and what was written within the interval stays findable (a forget right after).
            # A failing index is called once per cool-down, not on every request.
            return traced(CircuitBreakingSearchIndex(OpenSearchIndex(
                s.opensearch_url, s.opensearch_index, self.embedder,
                service=s.opensearch_service, region=s.aws_region, engine=s.opensearch_engine,
                create_index=s.opensearch_create_index, live=StoreRevisions(self.base_store),
                recent=RecentUnits(self.base_store)),
                failures_to_open=s.search_breaker_failures, cool_down_s=s.search_breaker_cool_down_s),
                "search", SEARCH_CALLS, search=s.search)  # outside the breaker: its refusals show too
        from agent_memory.adapters.embedded.index import EmbeddedSearchIndex

        index: Any = EmbeddedSearchIndex(s.search_path, self.embedder)
        ref = s.models.reranker
        if ref is not None and ref.provider == "local":
            from agent_memory.adapters.rerankers import PrecomputingIndex
            from agent_memory.services.retrieval.hits import hit_text

            # each unit's reranker token vectors are computed as it is indexed (write time)
            index = PrecomputingIndex(index, self.reranker, hit_text)
        return traced(index, "search", SEARCH_CALLS, search=s.search)

    def provision_search_index(self, *, budget_s: float = 0.0, sleep=None, clock=None):
        """The deploy step (functions/search_index): make the current embedder's and mapping's
        versioned index and, on a first deploy, the alias the functions use; returns its
        ``Provisioned``. A collection that refuses (403/404) while its data access policy
        propagates is retried for up to ``budget_s`` seconds
        (``adapters.opensearch.admin.provision_with_retry``; ``sleep``/``clock`` for tests)."""
        import time

        from agent_memory.adapters.opensearch.admin import provision_with_retry
        from agent_memory.adapters.opensearch.client import make_client
        from agent_memory.adapters.opensearch.mapping import SERVERLESS_ENGINE

        s = self.settings
        if s.search != "opensearch":
            raise ValueError("the search index step needs storage.search: opensearch")
        if s.opensearch_service == "aoss" and s.opensearch_engine == "lucene":
            raise ValueError(SERVERLESS_ENGINE)
        client = make_client(s.opensearch_url, service=s.opensearch_service, region=s.aws_region)
        return provision_with_retry(client, s.opensearch_index, self.embedder.name, int(self.embedder.dimension),
                                    s.opensearch_engine or "faiss", budget_s=budget_s,
                                    sleep=sleep or time.sleep, clock=clock or time.monotonic)

    def project(self, changes: Sequence[ProjectionChange]) -> None:
        """Apply a stream batch's record changes to the search index as one write (the
        projector function's job): per unit only the newest state is written."""
        from agent_memory.services.operations.projection import apply, collapse

        if self.search is not None:
            change = collapse(changes)
            apply(self.search, change)
            self._outdate_responses_searchable(change)

    @cached_property
    def projection_dead_letters(self):
        """The projector's dead-letter queue (deployed), read back against the table's stream."""
        from agent_memory.adapters.stream_dead_letters import StreamDeadLetters

        if not self.settings.projection_dead_letter_url:
            raise ConfigurationError("no projection dead-letter queue: set AGENT_MEMORY_PROJECTION_DEAD_LETTER_URL")
        return StreamDeadLetters(self.settings.projection_dead_letter_url, region=self.settings.aws_region)

    @staticmethod
    def stream_record(image: dict) -> Record:
        """A record from a DynamoDB stream image (the projector's input), decoded by the adapter."""
        from agent_memory.adapters.dynamodb_store import record_from_image

        return record_from_image(image)

    def language_model(self, ref: ModelRef | str) -> LanguageModel:
        """A model by ``provider/model``; instances are cached per name."""
        name = str(ref)
        with self._lock:
            cache = self.__dict__.setdefault("_models", {})
            if name not in cache:
                from agent_memory.observability import MeteredLanguageModel

                cache[name] = MeteredLanguageModel(build_language_model(self.settings, name))
            return cache[name]

    def warm_up(self) -> None:
        """Build now what the first chat or write would otherwise build: the configured language
        models' clients (``import openai`` alone is 0.4-0.6 s) and the services on the chat path.
        Opens no connection and calls no model; a model that cannot be built is left for its
        first call to report, as before."""
        from agent_memory.kernel.errors import ConfigurationError

        for ref in dict.fromkeys((self.settings.models.response, self.settings.models.extraction)):
            try:
                self.language_model(ref)
            except (ConfigurationError, ImportError):
                pass
        _ = self.chat, self.facts

    @staticmethod
    def count(metric: str, value: float = 1) -> None:
        """Add to an invocation metric (``observability``; nothing outside Lambda)."""
        from agent_memory.observability import count

        count(metric, value)

    def cursor_secret(self) -> bytes:
        """The paging cursors' key (a ``kernel.cursor.CursorSecret``: read when a page is served)."""
        return resolve_cursor_secret(self.settings)

    @cached_property
    def api_keys(self):
        from agent_memory.access.api_keys import ApiKeyStore

        return ApiKeyStore(self.base_store)

    @cached_property
    def authenticator(self):
        from agent_memory.access.authentication import Authenticator

        arn = self.settings.bootstrap_key_secret_arn
        bootstrap = None
        if arn:
            from agent_memory.adapters.secrets import read_secret_uncached

            def bootstrap() -> str:
                return read_secret_uncached(arn, region=self.settings.aws_region)
        from agent_memory.access.principal_grants import PrincipalGrants

        recorded_grants = PrincipalGrants(self.base_store)

        def recorded(context_id: str, principal: str) -> dict | None:
            current = recorded_grants.current(context_id, principal)
            return current.grants if current is not None else None
        return Authenticator(self.settings.principals, self.api_keys, bootstrap,
                             require_keys=self.settings.require_keys, recorded=recorded)

    @cached_property
    def administration(self):
        from agent_memory.access.authentication import BOOTSTRAP_PRINCIPAL
        from agent_memory.access.key_use import KeyUse
        from agent_memory.access.principal_grants import PrincipalGrants
        from agent_memory.services.operations.administration import Administration

        return Administration(self.api_keys, PrincipalGrants(self.base_store),
                              enforced=self.authenticator.keys_required, bootstrap_principal=BOOTSTRAP_PRINCIPAL,
                              static=self.settings.principals, key_use=KeyUse(self.base_store))

    @cached_property
    def scope_registry(self):
        from agent_memory.services.operations.scope_registry import ScopeRegistry

        return ScopeRegistry(self.store, self.forget, self.scope_index, self.cursor_secret)

    @cached_property
    def scope_index(self):
        from agent_memory.services.operations.scope_index import ScopeIndex

        return ScopeIndex(self.store)

    @cached_property
    def portability(self):
        from agent_memory.services.operations.portability import Portability

        return Portability(self.store, lambda: self.upload_store, catalogue=self.catalogue)

    @cached_property
    def portability_jobs(self):
        """Export and import as jobs (the stack's bucket and a queue), for contexts past a
        Lambda payload."""
        from agent_memory.services.operations.portability_jobs import PortabilityJobs

        return PortabilityJobs(self.store, self.portability, uploads=lambda: self.upload_store,
                               queue=lambda: self.portability_queue,
                               url_ttl_s=self.settings.limits.upload_url_ttl_s)

    @cached_property
    def portability_queue(self):
        """SQS when deployed (PortabilityWorkerFunction runs the jobs), else a thread here."""
        if self.settings.portability_queue_url:
            from agent_memory.adapters.portability_queues import SqsPortabilityQueue

            return SqsPortabilityQueue(self.settings.portability_queue_url, region=self.settings.aws_region)
        from agent_memory.adapters.portability_queues import InProcessPortabilityQueue
        from agent_memory.services.operations.portability_jobs import MAX_ATTEMPTS

        return InProcessPortabilityQueue(self.portability_jobs.run, attempts=MAX_ATTEMPTS)

    # --- services -------------------------------------------------------------------

    @cached_property
    def sessions(self) -> SessionService:
        from agent_memory.services.conversation.sessions import SessionService

        # Deleted turns: search units go with the rows (projection); the rest via the event.
        return SessionService(self.store, self.cursor_secret, self.events)

    @cached_property
    def catalogue(self):
        from agent_memory.services.operations.catalogue import CatalogueService

        return CatalogueService(self.store, self.cursor_secret)

    @cached_property
    def state(self):
        from agent_memory.services.facts.state import StateService

        return StateService(self.store)

    @cached_property
    def entities(self):
        from agent_memory.services.facts.entities import EntityService

        return EntityService(self.store, self.cursor_secret, self.forget)

    @cached_property
    def collections(self):
        from agent_memory.services.facts.collections import CollectionService

        # The write path is resolved on first use (listing collections does not load it).
        return CollectionService(self.store, self.cursor_secret, lambda ctx, req: self.facts.write(ctx, req))

    @cached_property
    def forget(self):
        from agent_memory.services.facts.forget import ForgetService

        # A forgotten chunk or document takes its kept original (object storage) with it.
        # A forgotten chunk's document loses its original and rebuilds from its remaining chunks.
        return ForgetService(self.store, self.search, self.sessions, self.events,
                             remove_originals=self._remove_originals, settle=self.settle,
                             forget_passages=lambda ctx, counts: self.documents.forget_passages(ctx, counts))

    def _remove_originals(self, document_ids) -> None:
        for doc_id in document_ids:
            self.documents.remove_original(doc_id)

    @cached_property
    def fact_edits(self):
        from agent_memory.services.facts.edits import FactEdits

        return FactEdits(self.store, self.search, self.forget,
                         lambda ctx, req, extraction: self.facts.write(ctx, req, extraction))

    @cached_property
    def idempotency(self) -> IdempotencyService:
        from agent_memory.services.facts.idempotency import IdempotencyService

        limits = self.settings.limits
        return IdempotencyService(self.store, limits.idempotency_ttl_s,
                                  lease_s=limits.request_deadline_s + limits.deadline_margin_s
                                  + limits.idempotency_lease_margin_s)

    @cached_property
    def audit(self):
        from agent_memory.services.conversation.reader_access import AuditLog

        return AuditLog(self.store, ttl_s=self.settings.limits.audit_ttl_s, sink=self.audit_sink)

    @cached_property
    def audit_sink(self):
        """Where cost rows go (``settings.audit_usage``); None: they are not kept."""
        from agent_memory.adapters import audit_sinks

        kind = self.settings.audit_usage
        if kind == "off":
            return None
        return audit_sinks.LogAuditSink() if kind == "log" else audit_sinks.BackgroundAuditSink(self.base_store)

    @cached_property
    def inspector(self):
        from agent_memory.services.facts.inspect import Inspector

        return Inspector(self.store, self.entities, self.traces)

    @cached_property
    def traces(self):
        from agent_memory.services.operations.traces import TraceStore

        return TraceStore(self.store)

    @cached_property
    def chat(self):
        from agent_memory.services.conversation.chat.chat_service import ChatService

        # The embedder loads on the first cache lookup, not when the service is built.
        return ChatService(self.sessions, self.retrieval, self.facts, self.traces,
                           self.response_cache, self.language_model, lambda texts: self.embedder.embed(texts),
                           self.count, models=self.settings.models,
                           message_bytes=self.settings.limits.chat_message_bytes)

    @cached_property
    def inflight(self):
        from agent_memory.kernel.load_shedding import InflightLimiter

        return InflightLimiter(self.settings.limits.inflight_cap)

    @cached_property
    def response_cache(self):
        from agent_memory.services.conversation.chat.cache import ResponseCache

        return ResponseCache(self.store, threshold=self.settings.limits.cache_similarity)

    @cached_property
    def facts(self) -> FactsService:
        from agent_memory.services.facts.write import FactsService

        limits = self.settings.limits
        return FactsService(self.store, self.sessions, self.language_model, self.events,
                            extraction_model=str(self.settings.models.extraction),
                            text_bytes=limits.facts_text_bytes, extraction_concurrency=limits.document_concurrency,
                            confidence_floor=limits.extraction_confidence_floor)

    @cached_property
    def documents(self):
        from agent_memory.services.documents.document_service import DocumentService

        limits = self.settings.limits
        return DocumentService(self.store, self.cursor_secret, ingestion_queue=lambda: self.ingestion_queue,
                               upload_store=lambda: self.upload_store, document_bytes=limits.document_bytes,
                               upload_url_ttl_s=limits.upload_url_ttl_s, keywords=self.keywords)

    @cached_property
    def keywords(self):
        from agent_memory.services.documents.keywords import KeywordIndex

        return KeywordIndex(self.store, self.cursor_secret)

    @cached_property
    def corpus(self):
        from agent_memory.services.retrieval.corpus import CorpusSearch

        return CorpusSearch(self.store, self.search, self.retrieval)

    @cached_property
    def ingestion(self):
        from agent_memory.services.documents.ingestion import DocumentIngestion

        return DocumentIngestion(self.store, claim_upload=self.documents.uploads.claim, facts=self.facts,
                                 keywords=self.keywords, concurrency=self.settings.limits.document_concurrency,
                                 window_chars=self.settings.limits.document_window_chars,
                                 claim_reprocess=self.documents.claim_reprocess, relink=self.documents.relink_job)

    @cached_property
    def upload_store(self):
        """Document objects (presigned uploads and originals): S3 when a bucket is configured,
        else a directory under the data directory (local runs), else (a function without a
        bucket) ``None``."""
        if not self.settings.upload_bucket:
            if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
                return None
            from agent_memory.adapters.upload_store import LocalUploadStore

            return LocalUploadStore(self.settings.data_dir / "uploads")
        from agent_memory.adapters.upload_store import S3UploadStore

        return S3UploadStore(self.settings.upload_bucket, region=self.settings.aws_region)

    @cached_property
    def ingestion_queue(self):
        """Document ingestion jobs: SQS when deployed (the ingestion function runs them), else
        a background pool in this process running the same worker."""
        if self.settings.ingestion_queue_url:
            from agent_memory.adapters.ingestion_queues import SqsIngestionQueue

            return SqsIngestionQueue(self.settings.ingestion_queue_url, region=self.settings.aws_region)
        from agent_memory.adapters.ingestion_queues import InProcessIngestionQueue
        from agent_memory.services.documents.ingestion import IngestionInterrupted

        return InProcessIngestionQueue(lambda job: self.ingestion.process(job), IngestionInterrupted)

    @cached_property
    def retrieval(self):
        from agent_memory.services.retrieval.retrieval_service import RetrievalService

        return RetrievalService(self.store, self.search, self.reranker, settle=self.settle)

    @cached_property
    def reranker(self) -> Reranker | None:
        """``models.reranker`` (off by default): late interaction over a local model's tokens
        (``local/``), or Bedrock's Rerank API (``bedrock/``, the deployed stack's)."""
        ref = self.settings.models.reranker
        if ref is None:
            return None
        if ref.provider == "bedrock":
            from agent_memory.adapters.rerankers import BedrockReranker

            return BedrockReranker(ref.model, region=self.settings.aws_region,
                                   timeout_s=self.settings.limits.rerank_timeout_s)
        from agent_memory.adapters.rerankers import LateInteractionReranker, TokenVectorStore

        # With the embedded index, candidates' token vectors are stored at write time beside it
        # (the search property wraps the index); a query then encodes only its question.
        path = self.settings.search_path
        store = (TokenVectorStore(f"{path}.rerank-tokens", ref.model)
                 if self.settings.search != "opensearch" and path != ":memory:" else None)
        return LateInteractionReranker(ref.model, store=store)

    @cached_property
    def prompt_context(self):
        from agent_memory.services.retrieval.prompt_context import PromptContextService

        # read at call time: only a context with a subject builds the thread service
        return PromptContextService(self.store, self.sessions, self.retrieval,
                                    entity_turns=lambda ctx, entity, query, k: self.threads.entity_matches(ctx, entity, query, k))

    # --- memory care (services/care) ----------------------------------------------------

    def care_budget(self):
        """A fresh model-call budget for one care request (per call and per UTC day)."""
        from agent_memory.services.care.common import ModelBudget

        limits = self.settings.limits
        return ModelBudget(self.base_store, limits.care_model_calls_per_call, limits.care_model_calls_per_day)

    def care_model(self) -> LanguageModel:
        return self.language_model(self.settings.models.response)

    @cached_property
    def consolidation(self):
        from agent_memory.services.care.consolidate import ConsolidationService

        limits = self.settings.limits
        return ConsolidationService(self.store, self.events, self.traces, fact_cap=limits.consolidate_fact_cap,
                                    observation_cap=limits.consolidate_observation_cap)

    @cached_property
    def reflection(self):
        from agent_memory.services.care.reflect import ReflectionService

        return ReflectionService(self.store, self.retrieval, self.facts, self.care_model, self.care_budget,
                                 self.traces)

    @cached_property
    def elaboration(self):
        from agent_memory.services.care.elaborate import ElaborationService

        return ElaborationService(self.store, self.facts, self.care_model, self.care_budget, self.traces,
                                  scan_cap=self.settings.limits.care_scan_cap)

    @cached_property
    def lifecycle(self):
        from agent_memory.services.care.lifecycle import LifecycleService

        limits = self.settings.limits
        return LifecycleService(self.store, self.forget, half_life_days=limits.decay_half_life_days,
                                boost=limits.decay_reinforcement_boost, retention_days=limits.retention_days,
                                scan_cap=limits.care_scan_cap)

    @cached_property
    def lifecycle_schedule(self):
        from agent_memory.services.care.schedule import LifecycleSchedule

        return LifecycleSchedule(self.store, self.lifecycle)

    @cached_property
    def fsck(self):
        from agent_memory.services.care.fsck import FsckService

        return FsckService(self.store, scan_cap=self.settings.limits.care_scan_cap)

    @cached_property
    def threads(self) -> ThreadService:
        from agent_memory.services.conversation.threads import ThreadService

        return ThreadService(self.store, self.search, self.cursor_secret, self.audit,
                             turn_bytes=self.settings.limits.thread_turn_bytes, settle=self.settle)


def build_embedder(settings: Settings) -> Embedder:
    ref = settings.models.embedding
    if ref.provider == "hashing":
        from agent_memory.adapters.embedders import HashingEmbedder

        return HashingEmbedder(dimension=settings.models.embedding_dimensions or 384)
    if ref.provider in ("openai", "bedrock"):
        # Inputs over the model's limit are embedded in pieces and pooled (adapters/long_text).
        from agent_memory.adapters.long_text import MAX_PIECE_BYTES, LongTextEmbedder

        if ref.provider == "openai":
            from agent_memory.adapters.embedders import OpenAIEmbedder

            inner = OpenAIEmbedder(model=ref.model, dimensions=settings.models.embedding_dimensions,
                                   api_key=_openai_key(settings), base_url=settings.models.openai_base_url,
                                   http_client=settings.models.openai_client)
        else:
            from agent_memory.adapters.embedders import BedrockTitanEmbedder

            inner = BedrockTitanEmbedder(model_id=ref.model, dimensions=settings.models.embedding_dimensions or 1024,
                                         region=settings.aws_region)
        return LongTextEmbedder(inner, MAX_PIECE_BYTES[ref.provider])
    from agent_memory.adapters.embedders import LocalEmbedder

    return LocalEmbedder(model=ref.model)


def build_language_model(settings: Settings, name: str) -> LanguageModel:
    from agent_memory.adapters.models import registry
    from agent_memory.config import LANGUAGE_PROVIDERS

    ref = ModelRef.parse(name, providers=LANGUAGE_PROVIDERS, setting="model")
    return registry.build_language_model(ref.provider, ref.model, registry.ProviderOptions(
        name=name, timeout=settings.models.request_timeout_s, openai_api_key=lambda: _openai_key(settings),
        openai_base_url=settings.models.openai_base_url, openai_http_client=settings.models.openai_client,
        aws_region=settings.aws_region))


def _openai_key(settings: Settings) -> str | None:
    import os

    if os.environ.get("OPENAI_API_KEY"):
        return os.environ["OPENAI_API_KEY"]
    if settings.openai_secret_arn:
        from agent_memory.adapters.secrets import read_secret

        return read_secret(settings.openai_secret_arn, region=settings.aws_region)
    return None


def resolve_cursor_secret(settings: Settings) -> bytes:
    """The secret paging cursors are encrypted and authenticated under: configured, from Secrets
    Manager (Lambda), or generated once into the data directory (local runs)."""
    if settings.cursor_secret:
        return settings.cursor_secret
    if settings.cursor_secret_arn:
        from agent_memory.adapters.secrets import read_secret

        return read_secret(settings.cursor_secret_arn, region=settings.aws_region).encode()
    if os.environ.get("AWS_LAMBDA_FUNCTION_NAME"):
        raise ConfigurationError("no cursor secret: set AGENT_MEMORY_CURSOR_SECRET_ARN (template.yaml does)")
    path = settings.data_dir / "cursor-secret"
    if not path.exists():
        import secrets

        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(".tmp")
        # Owner-only from the first byte: the key signs every paging cursor.
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_hex(32))
        os.chmod(tmp, 0o600)  # O_CREAT's mode is narrowed by the umask, never widened; an old tmp keeps its own
        os.replace(tmp, path)
    return path.read_text().strip().encode()


_runtime: Runtime | None = None
_runtime_lock = threading.Lock()


def get_runtime() -> Runtime:
    global _runtime
    if _runtime is None:
        with _runtime_lock:
            if _runtime is None:
                settings = load_settings()
                log.info("agent-memory starting: %s", settings.describe())
                _runtime = Runtime(settings)
    return _runtime


def set_runtime(runtime: Runtime | None) -> None:
    """Install a runtime (tests, the local server); ``None`` resets to lazy loading."""
    global _runtime
    with _runtime_lock:
        _runtime = runtime

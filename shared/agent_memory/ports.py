"""Ports: the only surfaces the domain sees of storage, search and models.

Domain services depend on these Protocols; adapters under ``agent_memory.adapters``
implement them (DynamoDB/SQLite records, OpenSearch/embedded search, model providers).
Nothing here imports boto3, opensearchpy, openai or onnxruntime.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

if TYPE_CHECKING:  # numpy and pydantic are only needed to type the ports (cold start)
    import numpy as np
    from pydantic import BaseModel

# ---------------------------------------------------------------------------
# Record store
# ---------------------------------------------------------------------------


@dataclass
class Record:
    """One stored item.

    ``pk``/``sk`` are the primary key; ``gsi1pk``/``gsi1sk`` the optional secondary
    order (index ``"gsi1"``). ``version`` is the optimistic-concurrency counter that
    conditions compare against; ``expires_at`` (epoch seconds) is a TTL hint: stores may
    keep expired items around for a while (DynamoDB does), so readers check it.
    ``data`` is a JSON-serialisable dict owned by the domain.
    """

    pk: str
    sk: str
    data: dict[str, Any]
    version: int = 1
    gsi1pk: str | None = None
    gsi1sk: str | None = None
    expires_at: int | None = None


@dataclass(frozen=True)
class Condition:
    """A write condition on the current item at the same key.

    - ``absent``: no item exists at the key (create-only).
    - ``exists``: an item exists at the key.
    - ``version``: an item exists and its ``version`` equals ``expected_version``.
    """

    kind: Literal["absent", "exists", "version"]
    expected_version: int | None = None

    @classmethod
    def absent(cls) -> Condition:
        return cls("absent")

    @classmethod
    def exists(cls) -> Condition:
        return cls("exists")

    @classmethod
    def version_is(cls, version: int) -> Condition:
        return cls("version", version)


@dataclass
class Put:
    record: Record
    condition: Condition | None = None


@dataclass
class Delete:
    pk: str
    sk: str
    condition: Condition | None = None


@dataclass
class Check:
    """A condition on another item that must hold for a transaction to commit."""

    pk: str
    sk: str
    condition: Condition


WriteOp = Put | Delete | Check


@dataclass
class Page:
    """A page of a query. ``last_key`` is opaque to callers: pass it back as ``after``."""

    records: list[Record]
    last_key: dict[str, str] | None
    # Items the store evaluated for this page when it filtered them (a read-region query on
    # DynamoDB); ``None``: as many as it returned.
    scanned: int | None = None


class ConditionFailed(Exception):
    """A conditional write or transaction was rejected because a condition did not hold.

    ``index`` is the position of the failing operation in a transaction when the store
    can tell (DynamoDB cancellation reasons, SQLite evaluation order), else ``None``.
    """

    def __init__(self, message: str = "condition failed", index: int | None = None):
        super().__init__(message)
        self.index = index


# Most operations one ``RecordStore.transact`` call may hold (DynamoDB's TransactWriteItems
# limit; the SQLite store enforces the same, so code sized for one fits the other).
MAX_TRANSACT_OPS = 100
# Most bytes one ``transact`` call may write: DynamoDB's 4 MB, over the sizes of the items it
# puts and the keys it deletes or checks, counted as DynamoDB counts an item
# (``kernel.stored_item``; the SQLite store enforces the same). ``kernel.stored_item.
# transaction_batches`` cuts independent writes into transactions within both limits.
MAX_TRANSACT_BYTES = 4 * 1024 * 1024


@runtime_checkable
class RecordStore(Protocol):
    """Key-ordered item storage with conditional writes and atomic transactions.

    Semantics both adapters share (tests/contract/test_record_store.py):
    - ``query`` returns items of one partition key ordered by sort key (byte order of
      the UTF-8 strings), optionally restricted to a prefix or an inclusive range, resumable
      from ``after`` (a ``Page.last_key``); ``index="gsi1"`` queries the secondary order and
      only returns items that have both gsi1 attributes.
    - ``read_region`` (scope paths, ``*`` for one segment; ``None``: unrestricted) returns
      only records whose ``data["scopes"]`` that region may read (``agent_memory.access.scopes``
      ``visible``), filtered inside the query: SQLite in its SQL, DynamoDB with a
      ``FilterExpression`` that reads on until the page is full or a read budget is spent.
      A short page then carries ``last_key`` (resume there); ``last_key`` is still ``None``
      only when nothing can follow. It may admit a few records it cannot decide exactly
      (multi-path clauses on DynamoDB): callers keep their exact check.
    - ``transact`` applies every operation or none (at most ``MAX_TRANSACT_OPS`` operations and
      ``MAX_TRANSACT_BYTES``, distinct keys), raising ``ConditionFailed`` when any condition fails.
    - ``put`` without a condition overwrites.
    """

    def get(self, pk: str, sk: str) -> Record | None: ...

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Record]: ...

    def put(self, record: Record, condition: Condition | None = None) -> None: ...

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None: ...

    def query(
        self,
        pk: str,
        *,
        prefix: str | None = None,
        between: tuple[str, str] | None = None,
        after: dict[str, str] | None = None,
        limit: int = 100,
        forward: bool = True,
        index: Literal["gsi1"] | None = None,
        read_region: Sequence[str] | None = None,
    ) -> Page: ...

    def transact(self, ops: Sequence[WriteOp]) -> None: ...

    def scan(self, pk_prefix: str) -> Iterator[Record]:
        """Every record whose ``pk`` starts with ``pk_prefix``, in no particular order.

        For maintenance (``agent-memory reindex``), never for serving requests: on DynamoDB
        it reads the whole table."""
        ...

    def scan_page(self, pk_prefix: str, *, after: dict[str, str] | None = None, limit: int = 500) -> Page:
        """One resumable step of ``scan``: the records whose ``pk`` starts with ``pk_prefix``
        among the next ``limit`` items the store evaluates, resumed from ``after`` (a
        ``Page.last_key``; ``None`` when nothing follows). A page may be short, even empty,
        and still carry ``last_key`` (DynamoDB evaluates the whole table). For maintenance
        jobs that must survive a crash (the scope index's backfill), never for serving."""
        ...


@runtime_checkable
class AuditSink(Protocol):
    """Takes the audit log's cost rows off the request path (``adapters/audit_sinks``):
    ``emit`` must not block on storage; ``flush`` waits for what was emitted in this process
    where that is possible (the local sink), and returns at once where it is not."""

    def emit(self, record: Record) -> None: ...

    def flush(self) -> None: ...


@runtime_checkable
class JobQueue(Protocol):
    """Where document ingestion jobs go: SQS when deployed, an in-process pool locally."""

    def send(self, job: Any) -> None: ...


# ---------------------------------------------------------------------------
# Embeddings
# ---------------------------------------------------------------------------


@runtime_checkable
class UploadStore(Protocol):
    """Object storage for documents: large uploads PUT directly by the caller (presigned, under
    ``staging/``, read once by the ingestion worker) and every document's original bytes (under
    ``originals/``, kept until the document is deleted, forgotten or purged). Keys are chosen by
    the service (one per document). Implementations: S3 (``adapters.upload_store.S3UploadStore``)
    and a directory under the local data directory (``LocalUploadStore``)."""

    def presign_put(self, key: str, size: int, content_type: str, expires_s: int) -> str:
        """A URL the caller PUTs exactly ``size`` bytes of ``content_type`` to, until ``expires_s``.
        A URL without a scheme and host is relative to the API's own origin (the local server)."""
        ...

    def read(self, key: str, max_bytes: int) -> bytes | None:
        """The object's bytes, ``None`` when nothing was uploaded; over ``max_bytes`` raises
        ``ValueError``."""
        ...

    def write(self, key: str, data: bytes, content_type: str) -> None:
        """Store ``data`` under ``key`` (replacing what is there), encrypted at rest."""
        ...

    def presign_get(self, key: str, expires_s: int, content_type: str, filename: str | None = None) -> str | None:
        """A URL the caller GETs the object from (an attachment, named ``filename`` when given),
        or ``None`` when this store only serves these bytes through the API itself."""
        ...

    def delete(self, key: str) -> None:
        """Remove the object; a missing one is no error."""
        ...

    def exists(self, key: str) -> bool:
        """Whether an object is stored under ``key`` (an erasure receipt's verify looks again)."""
        ...


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors.

    ``name`` identifies provider and model (``hashing/v1``, ``openai/text-embedding-3-small``);
    together with ``dimension`` it is recorded by a search index, which refuses vectors
    from a different embedder.
    """

    name: str
    dimension: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Return an array of shape ``(len(texts), dimension)``, dtype float32, rows unit-norm."""
        ...


class Reranker(Protocol):
    """Scores a retrieval's best candidates against the query once more, with a model that
    reads the query and each text together (more than one vector per text can say).

    ``name`` identifies provider and model (``local/all-MiniLM-L6-v2``). Any exception means
    "no opinion": retrieval keeps its fused order (``agent_memory.ranking.rerank``).
    """

    name: str

    def score(self, query: str, texts: Sequence[str]) -> np.ndarray:
        """Return one relevance score per text (float64, higher is better; a scale of its own)."""
        ...


# ---------------------------------------------------------------------------
# Language models
# ---------------------------------------------------------------------------


@dataclass
class ChatMessage:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass
class Completion:
    text: str
    model: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


class SearchUnavailable(Exception):
    """The search index cannot answer now: refused, timed out, a 5xx, throttled, or its
    circuit is open. Adapters raise it for transport failures (never for a bad query);
    reads degrade to the record store and operations that need search refuse with 503.
    ``reason`` is a short slug (``refused``, ``timeout``, ``server-error``, ``throttled``,
    ``circuit-open``); ``retry_after`` is seconds a caller should wait."""

    def __init__(self, reason: str, detail: str = "", *, retry_after: int = 5):
        super().__init__(f"search unavailable ({reason}){': ' + detail if detail else ''}")
        self.reason = reason
        self.retry_after = retry_after


class ModelError(Exception):
    """The model call failed (transport, provider error, or invalid output after retries)."""


class ModelTimeout(ModelError):
    """The model call timed out."""


class ModelOutputInvalid(ModelError):
    """The model returned output that does not validate against the requested schema."""


@runtime_checkable
class LanguageModel(Protocol):
    """A chat model. ``name`` is ``provider/model``.

    ``structured`` returns an instance of ``schema`` (a pydantic model) or raises
    ``ModelOutputInvalid``; callers own the retry policy for invalid output.
    ``complete`` and ``stream`` produce free text. A ``stream`` generator may return
    ``(prompt_tokens, completion_tokens)`` as its value when the provider reported them.
    """

    name: str

    def structured(self, *, system: str, user: str, schema: type[BaseModel]) -> BaseModel: ...

    def complete(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Completion: ...

    def stream(self, messages: Sequence[ChatMessage], *, max_tokens: int | None = None) -> Iterator[str]: ...


# ---------------------------------------------------------------------------
# Search index
# ---------------------------------------------------------------------------

UnitKind = Literal["turn", "attribute", "relation", "action", "entity", "instruction", "chunk", "thread_turn"]


@dataclass
class SearchUnit:
    """One searchable unit: a turn, a current fact rendered as text, a document chunk, a thread turn.

    ``scopes`` is DNF (list of clauses, each a list of scope paths); ``[]`` is unscoped.
    ``valid_from``/``valid_until`` are RFC 3339 UTC strings (``None`` = open).
    ``acl_readers``: ``None`` = no reader list, ``[]`` = admin-only quarantine, else the
    principals / ``group:`` names that may read it.
    ``revision`` orders projections of the same unit: an upsert with a lower revision than
    the stored one is ignored (stale stream records never overwrite newer units).
    ``source_ids`` are the records this unit derives from (a fact's source turns).
    """

    id: str
    context_id: str
    kind: UnitKind
    text: str
    revision: int = 1
    partition: str = "default"
    scopes: list[list[str]] = field(default_factory=list)
    labels: list[str] = field(default_factory=list)
    role: str | None = None
    session_id: str | None = None
    thread_id: str | None = None
    entity_ids: list[str] = field(default_factory=list)
    acl_readers: list[str] | None = None
    valid_from: str | None = None
    valid_until: str | None = None
    occurred_at: str | None = None
    source_ids: list[str] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    # (pk, sk) of the stored record this unit projects, stamped by the projection, so a reader
    # of an eventually consistent index can check the hit is still that record's current revision.
    record_key: list[str] | None = None


@dataclass
class SearchFilter:
    """Restrictions applied inside the search (before any top-k cut), never after.

    - ``read_region``: scope paths the caller can read; ``None`` = unrestricted. A unit is
      visible when it is unscoped or when some clause of its DNF has every path covered by
      a region path (a region path covers itself and everything below it: ``org/acme``
      covers ``org/acme/user/alice``).
    - ``principals``: the caller's principal id and ``group:`` names, checked against unit
      reader lists; ``admin`` bypasses reader lists (including quarantine).
    - ``as_of``: RFC 3339 instant; units whose validity window does not contain it are
      excluded. ``None`` means "current": units with a ``valid_until`` in the past are out.
    - ``valid_window``: ``(start, end)``, RFC 3339 or ``None`` for an open end; units whose
      validity window overlaps it (``valid_from < end`` and ``valid_until > start``), closed
      ones included. Replaces "current" (not ``as_of``, which the request model keeps apart).
    - ``lens`` / ``lens_view``: a read narrowing in DNF (``access.scopes.lens_admits``),
      applied besides ``read_region``, never instead of it.
    - ``any_labels``: the unit carries at least one of these labels (entity ids, for the
      recall ``location`` filter: the entities found in the area).
    - ``source_ids``: the unit derives from at least one of these records (a chunk's document).
    """

    context_id: str
    partition: str = "default"
    read_region: list[str] | None = None
    principals: list[str] = field(default_factory=list)
    admin: bool = False
    as_of: str | None = None
    kinds: list[str] | None = None
    roles: list[str] | None = None
    session_id: str | None = None
    thread_id: str | None = None
    labels: list[str] | None = None  # unit must carry every one of these labels
    exclude_ids: list[str] = field(default_factory=list)
    valid_window: tuple[str | None, str | None] | None = None
    lens: list[list[str]] | None = None
    lens_view: str = "strict"
    any_labels: list[str] | None = None
    source_ids: list[str] | None = None


@dataclass
class SearchHit:
    unit: SearchUnit
    score: float


SearchMode = Literal["vector", "bm25"]  # one leg: fusing legs is ranking's (``agent_memory.ranking``)


@dataclass(frozen=True)
class RowLeg:
    """One ranked list of a ``SearchIndex.rank_rows`` call: the best ``depth`` units for
    ``query`` by ``mode`` under the call's filter, further restricted to units carrying every
    label in ``labels`` (inside the search, like ``SearchFilter.labels``)."""

    query: str
    mode: SearchMode
    depth: int
    labels: tuple[str, ...] = ()


NO_SEQ = -(2**62)  # ``RowRanking.seq`` of a unit without an integer ``metadata["seq"]``


@dataclass
class RowRanking:
    """The candidates of a ``rank_rows`` call as columns (entry ``i`` describes candidate
    ``i``), so a caller ranks them without a ``SearchUnit`` per candidate and decodes only the
    few it keeps (``decode``).

    - ``legs[j]``: candidate indices of leg ``j``, best first (a candidate at most once per leg).
    - ``kind``, ``role``, ``session_id``, ``key`` (``metadata["key"]``; a relation
      built from its unit, ``metadata["label"]``), ``occurred_at``:
      object arrays (``None`` where the unit has none); ``seq``: int64 ``metadata["seq"]``
      (``NO_SEQ`` when it is not an integer, or beyond +-2**62); ``current``: bool, ``valid_until is None``; ``labels``: one
      frozenset per candidate.
    - ``decode(indices)``: the full units of those candidates, in that order (``None`` for
      one deleted since the ranking, where the adapter decodes only now).
    - ``leg_scores[j]``: the score of each of ``legs[j]``'s candidates in that leg (cosine,
      BM25, ...; higher is better, comparable only within the leg), or ``None`` when the
      adapter has no scores (fusion then uses ranks alone).

    Built from decoded units by ``agent_memory.ranking.rows`` (``ranking_from_units``,
    ``ranking_with_units``).
    """

    ids: list[str]
    legs: list[np.ndarray]
    kind: np.ndarray
    role: np.ndarray
    session_id: np.ndarray
    seq: np.ndarray
    current: np.ndarray
    key: np.ndarray
    occurred_at: np.ndarray
    labels: list[frozenset[str]]
    decode: Callable[[Sequence[int]], list[SearchUnit | None]]
    leg_scores: list[np.ndarray] | None = None


@runtime_checkable
class SearchIndex(Protocol):
    """Text + vector search over ``SearchUnit``s of many contexts.

    The index remembers the embedder name and dimension that built it and raises
    ``EmbedderMismatch`` when used with another.
    """

    def upsert(self, units: Sequence[SearchUnit]) -> None: ...

    def delete(self, context_id: str, unit_ids: Sequence[str]) -> None: ...

    def delete_context(self, context_id: str) -> None: ...

    def search(self, query: str, flt: SearchFilter, *, k: int = 10, mode: SearchMode) -> list[SearchHit]:
        """One ranked leg: the best ``k`` units for ``query`` by ``mode`` under ``flt``, best first,
        scored by cosine (``vector``) or BM25 saturated to ``s / (1 + s)`` (``bm25``). An index
        answers legs; fusing them is ranking's (``agent_memory.ranking.search``)."""
        ...

    def rank_rows(self, flt: SearchFilter, legs: Sequence[RowLeg]) -> RowRanking:
        """Several ranked lists under one filter, as ``search(leg.query, flt + leg.labels,
        k=leg.depth, mode=leg.mode)`` would rank each, returned as undecoded columns."""
        ...

    def get(self, context_id: str, unit_id: str) -> SearchUnit | None: ...


@runtime_checkable
class QueryPrefetch(Protocol):
    """A search index that can start embedding a query before its vector legs are asked for,
    so the caller's other reads (tier-1 facts, named entities) overlap the model call; the
    ``rank_rows`` that runs the legs then takes that vector. A hint: it never raises."""

    def prefetch_query(self, query: str) -> None: ...


@runtime_checkable
class BatchWritableIndex(Protocol):
    """A search index that applies upserts and deletes (``context -> unit ids``) together in
    one request (the projector writes a whole stream batch at once)."""

    def write(self, upserts: Sequence[SearchUnit], deletes: dict[str, list[str]]) -> None: ...


@runtime_checkable
class LiveRevisions(Protocol):
    """Which index hits are still current: a hit is live when the record it projects exists,
    still projects to that unit, and has exactly the hit's ``revision``.

    Indexes that show writes only after a refresh (OpenSearch, most of all Serverless, which
    has neither a refresh API nor external versions) ask this before ranking, so superseded,
    forgotten, deleted and reader-narrowed copies never surface while the index lags."""

    def live(self, units: Sequence[SearchUnit]) -> list[bool]: ...


class RecentWrites(Protocol):
    """Units an index wrote within its refresh interval, with their vectors, for the searches
    that must see them at once (``adapters/recent_units.py``: a forget right after a write)."""

    def note(self, units: Sequence[SearchUnit], vectors: np.ndarray) -> None: ...

    def candidates(self, context_id: str, partition: str) -> list[tuple[SearchUnit, np.ndarray]]: ...


class EmbedderMismatch(Exception):
    """The search index was built by another embedder or dimension."""

"""DynamoDB RecordStore: every record kind in one table (``MemoryTable`` in template.yaml).

Key design
----------
The adapter is generic: it stores ``Record``s and never interprets keys. The domain
chooses concrete keys, all built in ``agent_memory.kernel.storage_keys``, following these conventions.

``pk`` (partition key)
    One partition per context, partition and collection: ``c#<context>#<partition>#<collection>``,
    with the parent id appended when a collection belongs to a parent record (the full table
    of collections is in ``agent_memory.kernel.storage_keys``). Nothing is ever read across a context or a
    partition, and every page we serve comes from one DynamoDB partition::

        c#acme#default#sessions                         sessions of context "acme"
        c#acme#default#turns#sess_01hv...               turns of one session
        c#acme#default#attrs#entity:person/alice        attributes of one entity (history + heads)
        c#acme#default#idem                             idempotency records

``sk`` (sort key)
    Gives the order pages are served in, compared as UTF-8 bytes (so ``"Z" < "a"`` and
    ``"item#10" < "item#9"``: zero-pad numbers, ``000000000042``). ULID ids sort by
    creation time, so ``sess_01HV...`` as sort key lists sessions oldest first; a query
    with ``forward=False`` reads newest first. Prefixes group kinds inside a partition
    (``a#location#...`` history rows beside ``h#location#...`` head rows), read with
    ``query(prefix=...)``.

``gsi1pk`` / ``gsi1sk`` (index ``gsi1``, projection ALL)
    The second order a read needs, set only on records that need it; records without
    both attributes are not in the index. Examples: a turn is found by id through
    ``gsi1pk = c#acme#default#turn-ids``, ``gsi1sk = <turn id>``; a current fact carries
    ``gsi1pk = c#acme#default#current#attribute``, ``gsi1sk = <category>#<entity>#<key>#<id>``
    and drops both attributes when superseded, leaving the index. gsi1 reads are
    eventually consistent (DynamoDB offers no consistent reads on a GSI): a record
    written a moment ago may be missing there. Base-table reads here are consistent.

``version`` (number)
    Optimistic concurrency: a writer reads version ``n``, writes ``n + 1`` under
    ``Condition.version_is(n)``, and retries from the read when that fails. Writes that
    must agree (supersede the old value, insert the new one) go in one ``transact``.

``expires_at`` (number, epoch seconds; the table's TTL attribute)
    Idempotency records and caches expire by themselves. DynamoDB deletes expired items
    up to days late, so readers still compare ``expires_at`` with the clock.

``data`` (string)
    The domain's dict as one JSON string rather than a DynamoDB map: boto3 maps numbers
    to ``Decimal`` and refuses ``float``, which would leak into every domain model; JSON
    round-trips floats, ``None`` and nesting exactly as the SQLite adapter does. The
    domain never filters on fields inside ``data`` in DynamoDB, so nothing is lost.

Paging: ``Page.last_key`` is DynamoDB's ``LastEvaluatedKey`` flattened to ``{attr: str}``
(``{"pk", "sk"}``, plus ``"gsi1pk", "gsi1sk"`` on gsi1 queries). It is ``None`` only
when nothing can follow; a full page may carry a key to an empty next page.

A record holds at most 400 KB (DynamoDB's item limit, which the SQLite adapter enforces
too); larger payloads must be split by the domain.

Projection outbox (local runs without a stream): ``apply_with_outbox`` adds the entry as a
row of partition ``projection-outbox`` inside the write's own TransactWriteItems (written
first, on its own, when the write already holds the 100 items a transaction allows; an entry
whose write then fails only replays the items' current state). The rows carry no ``kind``,
so the stream's filter never sends them to the projector.

boto3 is imported on first use, not at import time: most Lambda cold starts must not
pay for it before the handler runs.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

from agent_memory.adapters import _record_rules as rules
from agent_memory.adapters import _scope_filter
from agent_memory.kernel import stored_item
from agent_memory.ports import (
    MAX_TRANSACT_OPS,
    Condition,
    ConditionFailed,
    Delete,
    Page,
    Put,
    Record,
    WriteOp,
)

OUTBOX_PK = "projection-outbox"

_BATCH_GET_MAX_KEYS = 100
_CONFLICT_ATTEMPTS = 5
_UNPROCESSED_ATTEMPTS = 8
_BACKOFF_BASE_S = 0.02

_CONDITION_EXPRESSIONS = {
    "absent": "attribute_not_exists(pk)",
    "exists": "attribute_exists(pk)",
    "version": "#version = :version",
}

Item = dict[str, dict[str, Any]]


class DynamoDBRecordStore:
    """``RecordStore`` on one DynamoDB table; safe to share between threads."""

    # Items one read-region query may evaluate (the filter's read budget): a query whose
    # region admits little stops there with a short page and a ``last_key`` to resume from.
    read_budget = 1000

    def __init__(
        self,
        table_name: str,
        *,
        region: str | None = None,
        endpoint_url: str | None = None,
        client: Any = None,
    ) -> None:
        self.table_name = table_name
        self._region = region
        self._endpoint_url = endpoint_url
        self._client = client
        self._client_lock = threading.Lock()

    @property
    def client(self) -> Any:
        """The low-level client, created on first use (boto3 clients are thread-safe once
        built, but building one from the shared default session is not, hence the lock)."""
        if self._client is None:
            with self._client_lock:
                if self._client is None:
                    self._client = _make_client(self._region, self._endpoint_url)
        return self._client

    # -- reads ---------------------------------------------------------------

    def get(self, pk: str, sk: str) -> Record | None:
        rules.check_key(pk, sk)
        response = self.client.get_item(TableName=self.table_name, Key=_key(pk, sk), ConsistentRead=True)
        item = response.get("Item")
        return record_from_image(item) if item else None

    def batch_get(self, keys: Sequence[tuple[str, str]]) -> list[Record]:
        """Records for ``keys`` in input order; missing keys and repeats are left out."""
        unique = list(dict.fromkeys(keys))
        for pk, sk in unique:
            rules.check_key(pk, sk)
        found: dict[tuple[str, str], Record] = {}
        for start in range(0, len(unique), _BATCH_GET_MAX_KEYS):
            found.update(self._batch_get_chunk(unique[start : start + _BATCH_GET_MAX_KEYS]))
        return [found[key] for key in unique if key in found]

    def _batch_get_chunk(self, keys: Sequence[tuple[str, str]]) -> dict[tuple[str, str], Record]:
        """One BatchGetItem, re-asking for ``UnprocessedKeys`` (throttling) with backoff."""
        request: dict[str, Any] = {
            self.table_name: {"Keys": [_key(pk, sk) for pk, sk in keys], "ConsistentRead": True}
        }
        found: dict[tuple[str, str], Record] = {}
        for attempt in range(_UNPROCESSED_ATTEMPTS):
            response = self.client.batch_get_item(RequestItems=request)
            for item in response.get("Responses", {}).get(self.table_name, []):
                record = record_from_image(item)
                found[(record.pk, record.sk)] = record
            request = response.get("UnprocessedKeys") or {}
            if not request:
                return found
            _backoff(attempt)
        raise RuntimeError(f"BatchGetItem left keys unprocessed after {_UNPROCESSED_ATTEMPTS} attempts")

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
    ) -> Page:
        """One page of up to ``limit`` records.

        DynamoDB may stop a response short of ``Limit`` (1 MB per response); the page is
        topped up from ``LastEvaluatedKey`` so that, as in SQLite, only the last page is short.

        ``read_region``: a ``FilterExpression`` (``adapters/_scope_filter.py``) keeps only
        records the region may read. DynamoDB applies ``Limit`` to items *evaluated*, so the
        query reads on until the page is full or ``read_budget`` items were evaluated; a page
        cut by the budget is short and carries ``last_key`` (the last evaluated key: resume
        there), and a page that found more than ``limit`` ends at its last returned record.
        """
        rules.check_query(pk, prefix=prefix, between=between, after=after, limit=limit, index=index)
        request = self._query_request(pk, prefix, between, forward, index)
        if read_region is not None:
            expression, names, values = _scope_filter.dynamo_filter(read_region)
            request["FilterExpression"] = expression
            request["ExpressionAttributeNames"] = {**request["ExpressionAttributeNames"], **names}
            request["ExpressionAttributeValues"] = {**request["ExpressionAttributeValues"], **values}
            return self._filtered_query(request, limit, after, index)
        records: list[Record] = []
        start = {name: {"S": value} for name, value in after.items()} if after else None
        while True:
            kwargs = {**request, "Limit": limit - len(records)}
            if start:
                kwargs["ExclusiveStartKey"] = start
            response = self.client.query(**kwargs)
            records.extend(record_from_image(item) for item in response.get("Items", []))
            start = response.get("LastEvaluatedKey")
            if not start or len(records) >= limit:
                break
        last_key = {name: value["S"] for name, value in start.items()} if start else None
        return Page(records=records, last_key=last_key)

    def _filtered_query(self, request: dict[str, Any], limit: int, after: dict[str, str] | None,
                        index: Literal["gsi1"] | None) -> Page:
        records: list[Record] = []
        evaluated = 0
        budget = max(self.read_budget, 1)
        start = {name: {"S": value} for name, value in after.items()} if after else None
        while True:
            kwargs = {**request, "Limit": max(1, min(budget - evaluated, max(limit - len(records), 100)))}
            if start:
                kwargs["ExclusiveStartKey"] = start
            response = self.client.query(**kwargs)
            records.extend(record_from_image(item) for item in response.get("Items", []))
            evaluated += int(response.get("ScannedCount", len(response.get("Items", []))))
            start = response.get("LastEvaluatedKey")
            if len(records) > limit:
                records = records[:limit]
                last = records[-1]
                attrs = rules.key_attrs(index)
                return Page(records=records, last_key={a: getattr(last, a) or "" for a in attrs}, scanned=evaluated)
            if not start or len(records) == limit or evaluated >= budget:
                break
        last_key = {name: value["S"] for name, value in start.items()} if start else None
        return Page(records=records, last_key=last_key, scanned=evaluated)

    def scan(self, pk_prefix: str) -> Iterator[Record]:
        """Records whose pk starts with ``pk_prefix``: a filtered, paginated Scan of the whole
        table (maintenance only; consumes read capacity for every item in the table)."""
        after: dict[str, str] | None = None
        while True:
            page = self.scan_page(pk_prefix, after=after, limit=None)
            yield from page.records
            if page.last_key is None:
                return
            after = page.last_key

    def scan_page(self, pk_prefix: str, *, after: dict[str, str] | None = None,
                  limit: int | None = 500) -> Page:
        """One Scan call of up to ``limit`` evaluated items (``None``: DynamoDB's 1 MB page; the
        whole table is read, the filter keeps ``pk_prefix``): the page's ``last_key`` is
        DynamoDB's ``LastEvaluatedKey``."""
        if not pk_prefix:
            raise ValueError("scan needs a non-empty pk prefix")
        kwargs: dict[str, Any] = {
            "TableName": self.table_name,
            "FilterExpression": "begins_with(pk, :p)",
            "ExpressionAttributeValues": {":p": {"S": pk_prefix}},
        }
        if limit is not None:
            kwargs["Limit"] = max(1, limit)
        if after:
            kwargs["ExclusiveStartKey"] = {name: {"S": value} for name, value in after.items()}
        response = self.client.scan(**kwargs)
        start = response.get("LastEvaluatedKey")
        return Page(records=[record_from_image(item) for item in response.get("Items", [])],
                    last_key={name: value["S"] for name, value in start.items()} if start else None,
                    scanned=int(response.get("ScannedCount", len(response.get("Items", [])))))

    def _query_request(
        self,
        pk: str,
        prefix: str | None,
        between: tuple[str, str] | None,
        forward: bool,
        index: Literal["gsi1"] | None,
    ) -> dict[str, Any]:
        partition_attr, sort_attr = rules.key_attrs(index)[:2]
        names = {"#p": partition_attr}
        values: Item = {":p": {"S": pk}}
        condition = "#p = :p"
        if prefix is not None:
            condition += " AND begins_with(#s, :prefix)"
            names["#s"] = sort_attr
            values[":prefix"] = {"S": prefix}
        elif between is not None:
            condition += " AND #s BETWEEN :low AND :high"
            names["#s"] = sort_attr
            values[":low"], values[":high"] = {"S": between[0]}, {"S": between[1]}
        request: dict[str, Any] = {
            "TableName": self.table_name,
            "KeyConditionExpression": condition,
            "ExpressionAttributeNames": names,
            "ExpressionAttributeValues": values,
            "ScanIndexForward": forward,
        }
        if index:
            request["IndexName"] = index
        else:
            request["ConsistentRead"] = True
        return request

    # -- writes --------------------------------------------------------------

    def put(self, record: Record, condition: Condition | None = None) -> None:
        item = _to_item(record)
        self._write(self.client.put_item, TableName=self.table_name, Item=item, **_condition_args(condition))

    def delete(self, pk: str, sk: str, condition: Condition | None = None) -> None:
        rules.check_key(pk, sk)
        self._write(
            self.client.delete_item, TableName=self.table_name, Key=_key(pk, sk), **_condition_args(condition)
        )

    def transact(self, ops: Sequence[WriteOp]) -> None:
        """All of ``ops`` or none, in one TransactWriteItems.

        botocore fills ``ClientRequestToken`` itself, so its own retries after a lost
        response are idempotent instead of failing on our own just-applied conditions.
        """
        rules.check_ops(ops)
        if not ops:
            return
        sized = [self._transact_item(op) for op in ops]
        rules.check_transaction_bytes([size for _, size in sized])
        self._write(self.client.transact_write_items, TransactItems=[item for item, _ in sized])

    # -- projection outbox (local runs; see the module docstring) --------------

    def apply_with_outbox(self, ops: Sequence[WriteOp], entry: str, *, single: bool) -> str:
        """Apply ``ops`` and add ``entry`` to the outbox atomically; returns the entry's id."""
        row_id = f"{time.time_ns():020d}#{random.getrandbits(48):012x}"
        row = Put(Record(pk=OUTBOX_PK, sk=row_id, data={"entry": entry}))
        if len(ops) + 1 > MAX_TRANSACT_OPS:
            self.put(row.record)
            try:
                self.transact(ops)
            except BaseException:
                self.delete(OUTBOX_PK, row_id)
                raise
            return row_id
        try:
            self.transact([*ops, row])
        except ConditionFailed as exc:
            if single:  # as put/delete report it: no transaction position
                raise ConditionFailed(index=None) from exc
            raise
        return row_id

    def outbox_entries(self, limit: int = 200) -> list[tuple[str, str]]:
        page = self.query(OUTBOX_PK, limit=limit)
        return [(r.sk, r.data["entry"]) for r in page.records]

    def clear_outbox(self, ids: Sequence[str]) -> None:
        for row_id in ids:
            self.delete(OUTBOX_PK, row_id)

    def _transact_item(self, op: WriteOp) -> tuple[dict[str, Any], int]:
        """One TransactItems entry and what it adds to the transaction's 4 MB."""
        if isinstance(op, Put):
            item, size = _sized_item(op.record)
            body = {"Item": item, **_condition_args(op.condition)}
            return {"Put": {"TableName": self.table_name, **body}}, size
        kind = "Delete" if isinstance(op, Delete) else "ConditionCheck"
        body = {"Key": _key(op.pk, op.sk), **_condition_args(op.condition)}
        return {kind: {"TableName": self.table_name, **body}}, stored_item.key_bytes(op.pk, op.sk)

    def _write(self, call: Callable[..., Any], **kwargs: Any) -> None:
        """Run a write, mapping failed conditions to ``ConditionFailed``.

        A ``TransactionConflict`` means another transaction held one of the items: that
        is contention, not a verdict on our conditions, so it is retried with jittered
        backoff; only when it persists does the caller see ``ConditionFailed`` (and
        re-reads, as after any failed condition).
        """
        from botocore.exceptions import ClientError

        for attempt in range(_CONFLICT_ATTEMPTS):
            try:
                call(**kwargs)
                return
            except ClientError as exc:
                failed, index = _failed_condition(exc)
                if failed:
                    raise ConditionFailed(index=index) from exc
                if not _is_conflict(exc):
                    raise
            if attempt + 1 < _CONFLICT_ATTEMPTS:
                _backoff(attempt)
        raise ConditionFailed(f"transaction conflict persisted after {_CONFLICT_ATTEMPTS} attempts")


# -- helpers -------------------------------------------------------------------


def _make_client(region: str | None, endpoint_url: str | None) -> Any:
    import boto3
    from botocore.config import Config

    # "standard" retry mode retries throttling with backoff, beyond the legacy defaults.
    config = Config(retries={"mode": "standard", "max_attempts": 5})
    return boto3.session.Session().client(
        "dynamodb", region_name=region, endpoint_url=endpoint_url, config=config
    )


def _backoff(attempt: int) -> None:
    """Full jitter: a random wait up to an exponentially growing cap."""
    time.sleep(random.uniform(0, _BACKOFF_BASE_S * 2**attempt))


def _key(pk: str, sk: str) -> Item:
    return {"pk": {"S": pk}, "sk": {"S": sk}}


def _to_item(record: Record) -> Item:
    return _sized_item(record)[0]


def _sized_item(record: Record) -> tuple[Item, int]:
    """The item for ``record`` (``kernel.stored_item.stored_attributes`` as attribute values:
    its ``kind`` copy feeds the projector's stream FilterCriteria in template.yaml, its scope
    copies the read-region FilterExpression) and its size as DynamoDB counts it."""
    data = rules.encode_data(record.data)
    attrs = rules.check_record(record, data)
    return {name: _attribute_value(value) for name, value in attrs.items()}, stored_item.attributes_bytes(attrs)


def _attribute_value(value: stored_item.Value) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"BOOL": value}
    if isinstance(value, int):
        return {"N": str(value)}
    if isinstance(value, str):
        return {"S": value}
    return {"SS": list(value)}


def record_from_image(item: Item) -> Record:
    """A ``Record`` from an item in DynamoDB's attribute-value form: a GetItem/Query item
    or a stream record's ``NewImage``/``OldImage`` (the projector reads those)."""
    return Record(
        pk=item["pk"]["S"],
        sk=item["sk"]["S"],
        data=rules.decode_data(item["data"]["S"]),
        version=int(item["version"]["N"]),
        gsi1pk=item["gsi1pk"]["S"] if "gsi1pk" in item else None,
        gsi1sk=item["gsi1sk"]["S"] if "gsi1sk" in item else None,
        expires_at=int(item["expires_at"]["N"]) if "expires_at" in item else None,
    )


def _condition_args(condition: Condition | None) -> dict[str, Any]:
    if condition is None:
        return {}
    args: dict[str, Any] = {"ConditionExpression": _CONDITION_EXPRESSIONS[condition.kind]}
    if condition.kind == "version":
        args["ExpressionAttributeNames"] = {"#version": "version"}
        args["ExpressionAttributeValues"] = {":version": {"N": str(condition.expected_version)}}
    return args


def _error_code(exc: Any) -> str:
    return exc.response.get("Error", {}).get("Code", "")


def _cancellation_codes(exc: Any) -> list[str]:
    return [reason.get("Code", "None") for reason in exc.response.get("CancellationReasons", [])]


def _failed_condition(exc: Any) -> tuple[bool, int | None]:
    """Whether ``exc`` reports a failed condition, and at which transaction position."""
    code = _error_code(exc)
    if code == "ConditionalCheckFailedException":
        return True, None
    if code == "TransactionCanceledException":
        codes = _cancellation_codes(exc)
        if "ConditionalCheckFailed" in codes:
            return True, codes.index("ConditionalCheckFailed")
    return False, None


def _is_conflict(exc: Any) -> bool:
    """Cancelled only because another transaction was touching the same items."""
    code = _error_code(exc)
    if code == "TransactionConflictException":
        return True
    if code != "TransactionCanceledException":
        return False
    codes = set(_cancellation_codes(exc))
    return "TransactionConflict" in codes and codes <= {"TransactionConflict", "None"}


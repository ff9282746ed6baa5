"""Idempotency keys for writes (``Idempotency-Key`` header or body field).

The first request with a key runs and its response is stored for the TTL (24 h by
default); the same key with the same body replays that response without running anything
(no second model call); the same key with a different body is a 409. While the first
request is still running, a concurrent retry gets 409 too (it must not run twice), with
``Retry-After`` saying when its lease ends. A request that fails releases its key, so the
client can retry.

Leases: the in-progress claim expires after a *lease*, no longer than the request holding it
can live (``lease_s``: in Lambda the invocation's remaining time, else the request budget,
plus ``limits.idempotency_lease_margin_s``). A function that Lambda kills (timeout, out of
memory) never releases its key in process; once the lease has passed, the next request with
the key takes the claim over (conditioned on the claim's version, so one retry wins) and runs.
The lease must outlive the request: a request still running past it (impossible in Lambda,
which kills it at its timeout) could run twice, and its late reply is then not stored.

Stored replies list the record ids they mention (``refs``) so forget/purge can delete the
replies that would otherwise resurrect forgotten text. They are found through an index, not a
scan: each mentioned id has a row (``idempotency_ref_pk``) naming the replies that mention it,
written before the reply is finished, so forget reads one row per forgotten id (BatchGetItem,
100 a call) instead of every stored reply of the context.

Keys: a context's idempotency records spread over 16 partitions by a hash of their key
(``storage_keys.idempotency_pk``); nothing reads them but by key.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Set
from dataclasses import dataclass
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Conflict, IdempotencyConflict, InvalidRequest
from agent_memory.kernel.stored_item import transaction_batches
from agent_memory.ports import Condition, ConditionFailed, Put, Record, RecordStore

log = logging.getLogger("agent_memory.idempotency")

MAX_KEY_LENGTH = 255


def check_key(key: str) -> None:
    """400 for a blank key or one over ``MAX_KEY_LENGTH`` characters (openapi.yaml states both)."""
    if not key.strip() or len(key) > MAX_KEY_LENGTH:
        raise InvalidRequest(f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} characters", field="Idempotency-Key")
# A stored reply must fit one DynamoDB item (400 KB) beside its key and bookkeeping.
MAX_STORED_REPLY_BYTES = 350 * 1024
# The lease when the caller names none: the default request budget (29 s), its answer margin
# (0.5 s) and the lease margin (5 s), as config.Limits sets them.
DEFAULT_LEASE_S = 34.5
REF_SK = "ref"
# Replies one index row names at most (an id is mentioned by the reply that created it, and
# rarely by more); beyond it the oldest are dropped, and expire with their TTL.
MAX_REF_TARGETS = 50
REF_ATTEMPTS = 5


@dataclass
class Outcome:
    body: dict[str, Any]
    status: int
    replayed: bool


def caller_tag(ctx: RequestContext) -> str:
    """Who a stored reply belongs to: a replay never answers another principal (or another
    principal's delegate) with it."""
    who = json.dumps([ctx.principal, ctx.delegated_by])
    return hashlib.sha256(who.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def fingerprint(payload: Any) -> str:
    canonical = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def stored_size(body: Any) -> int:
    return len(json.dumps(body, separators=(",", ":"), ensure_ascii=False, default=str).encode())


class IdempotencyService:
    def __init__(self, store: RecordStore, ttl_s: int, *, lease_s: float = DEFAULT_LEASE_S,
                 clock: Callable[[], float] = time.time):
        self.store = store
        self.ttl_s = ttl_s
        self.lease_s = lease_s
        self._clock = clock

    def run(self, ctx: RequestContext, operation: str, key: str | None, payload: Any,
            fn: Callable[[], tuple[dict[str, Any], int, list[str]]], *, lease_s: float | None = None) -> Outcome:
        """Run ``fn`` (returning body, status, referenced ids) at most once per key, holding
        the key for ``lease_s`` (default: the service's) while it runs."""
        if key is None:
            body, status, _ = fn()
            return Outcome(body, status, False)
        check_key(key)
        digest = fingerprint(payload)
        sk = f"{operation}#{caller_tag(ctx)}#{key}"
        pk = keys.idempotency_pk(ctx, sk)
        now = self._clock()
        existing = self.store.get(pk, sk)
        if existing is not None and (existing.expires_at or 0) > now:
            return self._replay(existing, digest, now)
        # No record, an expired reply, or a claim whose lease has passed (its request was
        # killed): claim it, conditioned on what was read, so one retry wins.
        lease = max(1.0, self.lease_s if lease_s is None else lease_s)
        claim = Record(pk=pk, sk=sk, expires_at=math.ceil(now + lease),
                       version=(existing.version + 1) if existing else 1,
                       data={"kind": "idempotency", "state": "running", "fingerprint": digest})
        try:
            self.store.put(claim, Condition.version_is(existing.version) if existing else Condition.absent())
        except ConditionFailed:
            current = self.store.get(pk, sk)
            if current is None:
                raise Conflict("idempotency key is being claimed concurrently; retry") from None
            return self._replay(current, digest, self._clock())
        # The write and the claim's finalisation share one error path: whatever fails after
        # the claim (the write, or storing its reply), the claim is released, so a retry is
        # never answered "still in progress" for the whole lease.
        try:
            body, status, refs = fn()
            finished = self._finished(claim, digest, body, status, refs, math.ceil(self._clock() + self.ttl_s))
            self._index_refs(ctx, finished, refs)
            try:
                self.store.put(finished, Condition.version_is(claim.version))
            except ConditionFailed:
                # The lease passed and another request took the key over: the write is done,
                # so answer it; the reply is not stored (the other holder's will be).
                log.warning("idempotency claim %s lost its lease before the reply was stored", sk)
        except BaseException:
            self._release(pk, sk, claim.version)
            raise
        return Outcome(body, status, False)

    @staticmethod
    def _finished(claim: Record, digest: str, body: dict[str, Any], status: int, refs: list[str],
                  expires_at: int) -> Record:
        """The claim's final state. A reply too large for one stored item is decided here,
        before anything is committed: the record keeps that the request ran, not the reply."""
        data: dict[str, Any] = {"kind": "idempotency", "state": "done", "fingerprint": digest, "status": status,
                                "refs": sorted(set(refs))}
        if stored_size(body) <= MAX_STORED_REPLY_BYTES:
            data["body"] = body
        else:
            data["body_omitted"] = True
        return Record(pk=claim.pk, sk=claim.sk, expires_at=expires_at, version=claim.version + 1, data=data)

    def _index_refs(self, ctx: RequestContext, reply: Record, refs: Iterable[str]) -> None:
        """Note ``reply`` on the index row of every id it mentions (before the reply is
        finished: a row naming a reply that never was is harmless, a reply forget cannot
        find is not). New rows go in transactions; a row that exists takes the reply beside
        the ones it names."""
        target = [reply.pk, reply.sk]
        rows = [Put(Record(keys.idempotency_ref_pk(ctx, ref), REF_SK,
                           {"kind": "idempotency_ref", "targets": [target]}, expires_at=reply.expires_at),
                    Condition.absent()) for ref in sorted(set(refs))]
        for batch in transaction_batches(rows):
            try:
                self.store.transact(batch)
            except ConditionFailed:
                for op in batch:
                    self._add_target(op.record, target)

    def _add_target(self, row: Record, target: list[str]) -> None:
        for _ in range(REF_ATTEMPTS):
            current = self.store.get(row.pk, row.sk)
            try:
                if current is None:
                    self.store.put(row, Condition.absent())
                    return
                targets = [t for t in current.data.get("targets", []) if t != target][-(MAX_REF_TARGETS - 1):]
                self.store.put(Record(row.pk, row.sk, {**current.data, "targets": [*targets, target]},
                                      version=current.version + 1,
                                      expires_at=max(current.expires_at or 0, row.expires_at or 0) or None),
                               Condition.version_is(current.version))
                return
            except ConditionFailed:
                continue
        raise Conflict("the replies naming this record are being updated concurrently; retry")

    def _release(self, pk: str, sk: str, version: int) -> None:
        try:
            self.store.delete(pk, sk, Condition.version_is(version))
        except ConditionFailed:
            pass  # finalised after all, or its lease passed and it was reclaimed: nothing of ours

    @staticmethod
    def _replay(record: Record, digest: str, now: float) -> Outcome:
        if record.data.get("fingerprint") != digest:
            raise IdempotencyConflict("this Idempotency-Key was used with a different request body")
        if record.data.get("state") != "done":
            wait = max(1, math.ceil((record.expires_at or now) - now))
            raise Conflict("a request with this Idempotency-Key is still in progress", code="idempotency_in_progress",
                           headers={"Retry-After": str(wait)})
        if record.data.get("body_omitted"):
            raise Conflict("the request with this Idempotency-Key succeeded, but its reply was too large to keep "
                           "for replay; read the result instead of retrying", code="idempotency_reply_not_stored")
        return Outcome(record.data["body"], 200, True)

    def forget_refs(self, ctx: RequestContext, ids: Set[str]) -> int:
        """Delete stored replies that mention any of ``ids``, found through their index rows
        (one BatchGetItem per 100 ids); returns how many went."""
        removed: set[tuple[str, str]] = set()
        rows = self.store.batch_get([(keys.idempotency_ref_pk(ctx, i), REF_SK) for i in sorted(ids)])
        for row in rows:
            keep = False  # a reply still running may finish naming the id: its row stays
            for pk, sk in row.data.get("targets", []):
                if (pk, sk) in removed:
                    continue
                reply = self.store.get(pk, sk)
                if reply is not None and reply.data.get("state") != "done":
                    keep = True
                elif reply is not None and ids.intersection(reply.data.get("refs", [])):
                    try:
                        self.store.delete(pk, sk, Condition.version_is(reply.version))
                        removed.add((pk, sk))
                    except ConditionFailed:
                        keep = True  # rewritten meanwhile: the next forget decides it
            if keep:
                continue
            try:
                self.store.delete(row.pk, row.sk, Condition.version_is(row.version))
            except ConditionFailed:
                pass  # a new reply was noted on it meanwhile: the row stays for that one
        return len(removed)

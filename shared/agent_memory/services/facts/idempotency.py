"""Idempotency keys for writes (``Idempotency-Key`` header or body field).

The first request with a key runs and its response is stored for the TTL (24 h by
default); the same key with the same body replays that response without running anything
(no second model call); the same key with a different body is a 409. While the first
request is still running, a concurrent retry gets 409 too (it must not run twice). A
request that fails releases its key, so the client can retry.

Stored replies list the record ids they mention (``refs``) so forget/purge can delete the
replies that would otherwise resurrect forgotten text.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable, Set
from dataclasses import dataclass
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Conflict, IdempotencyConflict, InvalidRequest
from agent_memory.ports import Condition, ConditionFailed, Record, RecordStore

MAX_KEY_LENGTH = 255
# A stored reply must fit one DynamoDB item (400 KB) beside its key and bookkeeping.
MAX_STORED_REPLY_BYTES = 350 * 1024


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
    def __init__(self, store: RecordStore, ttl_s: int):
        self.store = store
        self.ttl_s = ttl_s

    def run(self, ctx: RequestContext, operation: str, key: str | None, payload: Any,
            fn: Callable[[], tuple[dict[str, Any], int, list[str]]]) -> Outcome:
        """Run ``fn`` (returning body, status, referenced ids) at most once per key."""
        if key is None:
            body, status, _ = fn()
            return Outcome(body, status, False)
        if not key.strip() or len(key) > MAX_KEY_LENGTH:
            raise InvalidRequest(f"Idempotency-Key must be 1-{MAX_KEY_LENGTH} characters", field="Idempotency-Key")
        digest = fingerprint(payload)
        pk, sk = keys.idempotency_pk(ctx), f"{operation}#{caller_tag(ctx)}#{key}"
        now = int(time.time())
        existing = self.store.get(pk, sk)
        if existing is not None and (existing.expires_at or 0) > now:
            return self._replay(existing, digest)
        claim = Record(pk=pk, sk=sk, expires_at=now + self.ttl_s,
                       version=(existing.version + 1) if existing else 1,
                       data={"kind": "idempotency", "state": "running", "fingerprint": digest})
        try:
            self.store.put(claim, Condition.version_is(existing.version) if existing else Condition.absent())
        except ConditionFailed:
            current = self.store.get(pk, sk)
            if current is None:
                raise Conflict("idempotency key is being claimed concurrently; retry") from None
            return self._replay(current, digest)
        # The write and the claim's finalisation share one error path: whatever fails after
        # the claim (the write, or storing its reply), the claim is released, so a retry is
        # never answered "still in progress" for the whole TTL.
        try:
            body, status, refs = fn()
            self.store.put(self._finished(claim, digest, body, status, refs), Condition.version_is(claim.version))
        except BaseException:
            self._release(pk, sk, claim.version)
            raise
        return Outcome(body, status, False)

    @staticmethod
    def _finished(claim: Record, digest: str, body: dict[str, Any], status: int, refs: list[str]) -> Record:
        """The claim's final state. A reply too large for one stored item is decided here,
        before anything is committed: the record keeps that the request ran, not the reply."""
        data: dict[str, Any] = {"kind": "idempotency", "state": "done", "fingerprint": digest, "status": status,
                                "refs": sorted(set(refs))}
        if stored_size(body) <= MAX_STORED_REPLY_BYTES:
            data["body"] = body
        else:
            data["body_omitted"] = True
        return Record(pk=claim.pk, sk=claim.sk, expires_at=claim.expires_at, version=claim.version + 1, data=data)

    def _release(self, pk: str, sk: str, version: int) -> None:
        try:
            self.store.delete(pk, sk, Condition.version_is(version))
        except ConditionFailed:
            pass  # finalised after all, or expired and reclaimed: nothing of ours to release

    @staticmethod
    def _replay(record: Record, digest: str) -> Outcome:
        if record.data.get("fingerprint") != digest:
            raise IdempotencyConflict("this Idempotency-Key was used with a different request body")
        if record.data.get("state") != "done":
            raise Conflict("a request with this Idempotency-Key is still in progress", code="idempotency_in_progress")
        if record.data.get("body_omitted"):
            raise Conflict("the request with this Idempotency-Key succeeded, but its reply was too large to keep "
                           "for replay; read the result instead of retrying", code="idempotency_reply_not_stored")
        return Outcome(record.data["body"], 200, True)

    def forget_refs(self, ctx: RequestContext, ids: Set[str]) -> int:
        """Delete stored replies that mention any of ``ids``; returns how many went."""
        removed, after = 0, None
        while True:
            page = self.store.query(keys.idempotency_pk(ctx), after=after, limit=200)
            for record in page.records:
                if ids.intersection(record.data.get("refs", [])):
                    self.store.delete(record.pk, record.sk)
                    removed += 1
            if page.last_key is None:
                return removed
            after = page.last_key

"""``POST /consolidate``: repeated or corroborating facts become observations.

For each current attribute the caller may read and write (at most ``factLimit``), its slot
(entity, key, scopes; for a multi-valued key also the value) is read with its history. The
*proofs* of the current value are the slot's rows holding that value (a correction's old
value is never one: only the current value is consolidated); the proof count is the number
of statements, each row counting once plus once per reinforcement (the same value stated
again). With two proofs or more the slot gets an **observation**: an attribute row of the
same entity and key, ``source.kind: "observation"``, holding the value, its ``proofCount``
and the ids of its proofs. It is searchable, citable, forgettable and in the key's history
like any attribute, but a write's reconciliation never sees it (it cannot reinforce or be
superseded by the write path).

An existing current observation is **updated** (version conditioned) when its proofs
changed, and **superseded** (``supersededBy`` the current fact, ``validUntil`` now, off the
current index) when the slot's current value is another one or the slot has no current
value left. ``dryRun`` reports the same outcomes and writes nothing. Running it twice in a
row changes nothing the second time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import deadline, timeutil
from agent_memory.kernel import storage_keys as keys
from agent_memory.kernel.errors import Conflict
from agent_memory.kernel.ids import new_id, split_entity_id
from agent_memory.models.care import ConsolidateRequest
from agent_memory.models.facts import Attribute, Source
from agent_memory.ports import Condition, ConditionFailed, Put, Record, RecordStore
from agent_memory.rules import vocabulary as vocab
from agent_memory.rules.vocabulary import normalise_value
from agent_memory.services import paging
from agent_memory.services.care.common import TRACE_OUTCOMES, CareTrace, current_rows, writable
from agent_memory.services.events import DomainEvents, FactsChanged
from agent_memory.services.facts.repository import MemoryRepository
from agent_memory.services.operations.traces import TraceStore

OBSERVATION = "observation"
TRANSACT_CHUNK = 25


@dataclass
class ConsolidateOutcome:
    kind: str  # create | update | supersede
    entity_id: str
    entity_name: str
    key: str
    value: str
    proof_count: int
    observation_id: str | None
    source_ids: list[str]
    rationale: str


@dataclass
class ConsolidateResult:
    outcomes: list[ConsolidateOutcome] = field(default_factory=list)
    dry_run: bool = False
    trace_id: str = ""

    def count(self, kind: str) -> int:
        return sum(1 for o in self.outcomes if o.kind == kind)


def is_observation(data: dict[str, Any]) -> bool:
    return (data.get("source") or {}).get("kind") == OBSERVATION


def _slot(data: dict[str, Any]) -> tuple[str, str, str, str | None]:
    multi = vocab.cardinality(data["key"]) == "multi"
    return (data["entityId"], data["key"], repr(data.get("scopes") or []),
            normalise_value(data.get("value", "")) if multi else None)


class ConsolidationService:
    def __init__(self, store: RecordStore, events: DomainEvents, traces: TraceStore, *, fact_cap: int,
                 observation_cap: int):
        self.store = store
        self.events = events
        self.traces = traces
        self.fact_cap = fact_cap
        self.observation_cap = observation_cap
        self.repo = MemoryRepository(store)

    def consolidate(self, ctx: RequestContext, req: ConsolidateRequest) -> ConsolidateResult:
        fact_limit = min(req.fact_limit or self.fact_cap, self.fact_cap)
        limit = min(req.observation_limit or self.observation_cap, self.observation_cap)
        trace = CareTrace("consolidate", read={"factLimit": fact_limit, "observationLimit": limit,
                                               "dryRun": req.dry_run})
        result = ConsolidateResult(dry_run=req.dry_run, trace_id=trace.trace_id)
        rows = [r for r in current_rows(self.store, ctx, "attribute", fact_limit)
                if writable(ctx, r.data.get("scopes") or [])]
        trace.read["factsRead"] = len(rows)
        facts = {_slot(r.data): r for r in rows if not is_observation(r.data)}
        observations = [r for r in rows if is_observation(r.data)]
        ops: list[Put] = []
        partitions: dict[str, list[Record]] = {}
        now = timeutil.now_iso()
        by_slot: dict[tuple, list[Record]] = {}
        for obs in observations:
            by_slot.setdefault(_slot(obs.data), []).append(obs)
        # Observations whose slot no longer holds their value (a newer fact contradicts them).
        for slot, held in sorted(by_slot.items()):
            current = facts.get(slot) or self._current_fact(held[0])
            for obs in held:
                if len(result.outcomes) >= limit:
                    break
                if current is not None and normalise_value(current.data["value"]) == normalise_value(obs.data["value"]):
                    continue
                successor = current.data["id"] if current is not None else None
                why = (f"the current value is now {current.data['value']!r}" if current is not None
                       else "the slot has no current value any more")
                result.outcomes.append(self._outcome("supersede", obs.data, int(obs.data.get("proofCount") or 0),
                                                     obs.data["id"], list(obs.data.get("proofIds") or []),
                                                     f"superseded: {why}"))
                ops.append(self._superseded(obs, successor, now))
        for slot, fact in sorted(facts.items(), key=lambda kv: kv[0][:3] + (kv[0][3] or "",)):
            if len(result.outcomes) >= limit:
                break
            deadline.check("consolidation")
            data = fact.data
            pk = fact.pk
            if pk not in partitions:
                partitions[pk] = list(paging.scan(self.store, paging.Source(pk, prefix="a#"), batch=500))
            value = normalise_value(data["value"])
            proofs = [r for r in partitions[pk]
                      if r.data.get("key") == data["key"] and not r.data.get("deleted") and not is_observation(r.data)
                      and (r.data.get("scopes") or []) == (data.get("scopes") or [])
                      and normalise_value(r.data.get("value", "")) == value]
            count = sum(1 + int(r.data.get("reinforced") or 0) for r in proofs)
            proof_ids = sorted(r.data["id"] for r in proofs)
            held = [o for o in by_slot.get(slot, []) if normalise_value(o.data["value"]) == value]
            if count < 2:
                continue
            refs = sorted({(r.data.get("source") or {}).get("ref") for r in proofs} - {None})
            rationale = (f"{count} statements of {data['key'].replace('_', ' ')} = {data['value']!r} "
                         f"across {len(refs) or 1} source{'s' if len(refs) != 1 else ''}")
            if held:
                obs = held[0]
                if int(obs.data.get("proofCount") or 0) == count and list(obs.data.get("proofIds") or []) == proof_ids:
                    continue
                result.outcomes.append(self._outcome("update", data, count, obs.data["id"], proof_ids, rationale))
                ops.append(Put(Record(pk=obs.pk, sk=obs.sk, version=obs.version + 1, gsi1pk=obs.gsi1pk,
                                      gsi1sk=obs.gsi1sk, data={**obs.data, "proofCount": count, "proofIds": proof_ids,
                                                               "proofRefs": refs, "lastSeenAt": now}),
                               Condition.version_is(obs.version)))
                continue
            obs_id = None if req.dry_run else new_id("attr")
            result.outcomes.append(self._outcome("create", data, count, obs_id, proof_ids, rationale))
            if obs_id is not None:
                ops.append(self._created(ctx, data, obs_id, count, proof_ids, refs, result.trace_id, now))
        did = {"dryRun": req.dry_run, "modelCalls": 0, "created": result.count("create"),
               "updated": result.count("update"), "superseded": result.count("supersede"),
               "outcomes": [{"kind": o.kind, "entity": o.entity_id, "key": o.key, "value": o.value,
                             "proofCount": o.proof_count, "observationId": o.observation_id}
                            for o in result.outcomes[:TRACE_OUTCOMES]]}
        if req.dry_run or not ops:
            trace.store(self.store, self.traces, ctx, did)
            return result
        ops += trace.rows(self.traces, ctx, did)  # with the last chunk: no trace of a failed commit
        try:
            for start in range(0, len(ops), TRANSACT_CHUNK):
                self.store.transact(ops[start:start + TRANSACT_CHUNK])
        except ConditionFailed as exc:
            raise Conflict("memory changed while it was being consolidated; retry") from exc
        self.events.publish(FactsChanged(ctx, frozenset(o.entity_id for o in result.outcomes)))
        return result

    def _current_fact(self, obs: Record) -> Record | None:
        """The slot's current fact read from the store (beyond ``factLimit``, or unreadable)."""
        for r in paging.scan(self.store, paging.Source(obs.pk, prefix=f"a#{obs.data['key']}#"), batch=500):
            d = r.data
            if (not is_observation(d) and not d.get("deleted") and d.get("supersededBy") is None
                    and d.get("validUntil") is None and _slot(d) == _slot(obs.data)):
                return r
        return None

    @staticmethod
    def _outcome(kind: str, data: dict[str, Any], count: int, obs_id: str | None, proof_ids: list[str],
                 rationale: str) -> ConsolidateOutcome:
        name = data.get("entityName") or split_entity_id(data["entityId"])[1]
        return ConsolidateOutcome(kind, data["entityId"], name, data["key"], data["value"], count, obs_id,
                                  proof_ids, rationale)

    def _created(self, ctx: RequestContext, fact: dict[str, Any], obs_id: str, count: int, proof_ids: list[str],
                 refs: list[str], trace_id: str, now: str) -> Put:
        source = Attribute.from_dict(fact)
        obs = Attribute(id=obs_id, context_id=ctx.context_id, entity_id=source.entity_id, key=source.key,
                        value=source.value, category=source.category, importance=source.importance,
                        confidence=1.0, valid_from=now, source=Source(kind=OBSERVATION, ref=trace_id),
                        scopes=[list(c) for c in source.scopes], labels=list(source.labels), created_at=now,
                        created_by=ctx.principal, last_seen_at=now)
        names = {source.entity_id: fact.get("entityName") or split_entity_id(source.entity_id)[1]}
        record = self.repo.fact_record(ctx, obs, 1, names)
        record.data.update(proofCount=count, proofIds=proof_ids, proofRefs=refs)
        assert record.pk == keys.attrs_pk(ctx, source.entity_id)
        return Put(record, Condition.absent())

    @staticmethod
    def _superseded(obs: Record, successor: str | None, now: str) -> Put:
        data = {**obs.data, "supersededBy": successor, "validUntil": now}
        return Put(Record(pk=obs.pk, sk=obs.sk, data=data, version=obs.version + 1),
                   Condition.version_is(obs.version))

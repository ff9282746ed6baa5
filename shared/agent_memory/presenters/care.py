"""Memory-care results -> wire bodies (openapi.yaml: ConsolidateResponse, ReflectResponse,
ElaborateResponse, LifecycleResponse, FsckReport)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.models import wire
from agent_memory.presenters.facts import attribute_wire

if TYPE_CHECKING:
    from agent_memory.services.care.consolidate import ConsolidateResult
    from agent_memory.services.care.elaborate import ElaborateResult
    from agent_memory.services.care.fsck import Finding, FsckResult
    from agent_memory.services.care.lifecycle import LifecycleResult
    from agent_memory.services.care.reflect import ReflectResult


def consolidated(r: ConsolidateResult) -> dict[str, Any]:
    return wire.ConsolidateResponse(
        created=r.count("create"), updated=r.count("update"), superseded=r.count("supersede"),
        outcomes=[wire.ConsolidateOutcome(kind=o.kind, entity_name=o.entity_name, entity_id=o.entity_id, key=o.key,
                                          value=o.value, proof_count=o.proof_count, observation_id=o.observation_id,
                                          source_ids=o.source_ids, rationale=o.rationale) for o in r.outcomes],
        dry_run=r.dry_run, trace_id=r.trace_id).to_wire()


def reflected(r: ReflectResult) -> dict[str, Any]:
    return {"reflection": r.reflection, "evidence": list(r.evidence),
            "persistedAttributes": [attribute_wire(a) for a in r.persisted], "traceId": r.trace_id}


def elaborated(r: ElaborateResult) -> dict[str, Any]:
    return wire.ElaborateResponse(
        outcomes=[wire.ElaborateOutcome(
            entity_name=o.entity_name, entity_type=o.entity_type, relations_emitted=o.emitted, dry_run=o.dry_run,
            trace_id=o.trace_id,
            proposed_relations=[wire.ProposedRelation(subject=p.subject, label=p.label, object=p.object,
                                                      rationale=p.rationale, relation_id=p.relation_id)
                                for p in o.proposals])
            for o in r.outcomes],
        relations_emitted=r.emitted).to_wire()


def lifecycle(r: LifecycleResult) -> dict[str, Any]:
    return wire.LifecycleResponse(affected=r.affected, ids=r.ids, dry_run=r.dry_run).to_wire()


def _finding(f: Finding) -> wire.FsckFinding:
    return wire.FsckFinding(ids=f.ids, reason=f.reason, entity=f.entity, key=f.key, values=f.values, score=f.score)


def fsck(r: FsckResult) -> dict[str, Any]:
    return wire.FsckReport(total=r.total, contradictions=[_finding(f) for f in r.contradictions],
                           duplicates=[_finding(f) for f in r.duplicates],
                           injection=[_finding(f) for f in r.injection]).to_wire()

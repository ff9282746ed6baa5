"""The fact-kind registry (``services/facts/fact_kinds.py``) is the one list of kinds: the models
that cannot import it follow it, and everything that handles kinds takes them from it."""

from __future__ import annotations

import typing

import pytest

from agent_memory.models.extraction import (
    ExtractedAction,
    ExtractedAttribute,
    ExtractedRelation,
    ExtractionOutput,
    ExtractionResult,
)
from agent_memory.ports import Record
from agent_memory.presenters.facts import RECORD_WIRE
from agent_memory.services.facts import forget, readable
from agent_memory.services.facts.extraction import halving
from agent_memory.services.facts.fact_kinds import BY_KIND, CLAIM_FIELDS, FACT_KINDS
from agent_memory.services.operations import projection

pytestmark = pytest.mark.service


def _list_item(annotation: typing.Any) -> type:
    (item,) = typing.get_args(annotation)
    return item


def test_the_extraction_lists_follow_the_registry_in_order():
    fields = list(ExtractionOutput.model_fields)
    assert fields == [k.field for k in FACT_KINDS]
    assert [_list_item(ExtractionOutput.model_fields[k.field].annotation) for k in FACT_KINDS] == \
        [k.extracted_type for k in FACT_KINDS]


def test_a_writes_result_lists_every_kind_in_registry_order():
    lists = [f for f in ExtractionResult.model_fields if f not in ("turn_id", "corrections")]
    assert lists == [k.field for k in FACT_KINDS]


def test_every_record_type_has_one_wire_mapping():
    assert set(RECORD_WIRE) == {k.record_type for k in FACT_KINDS}


def test_projection_and_forget_take_their_rules_from_the_registry():
    for kind in FACT_KINDS:
        if kind.project is not None:
            assert projection._BUILDERS[kind.kind] is kind.project  # noqa: SLF001
        else:
            assert kind.kind not in projection._BUILDERS  # noqa: SLF001
        if kind.forgetter is not None:
            assert forget.FORGETTERS[kind.id_prefix] is kind.forgetter
            assert kind.kind in forget.FORGET_KINDS
    assert forget.FORGET_KINDS == ["attribute", "relation", "action", "instruction", "turn", "chunk"]


def test_typed_reads_and_entity_references_come_from_the_registry():
    for kind in FACT_KINDS:
        data = {"kind": kind.kind, "id": f"{kind.id_prefix or 'entity'}_1"}
        assert type(readable.memory_record(Record(pk="p", sk="s", data=data))) is kind.record_type
    relation = {"kind": "relation", "subject": "entity:person/ann", "object": "entity:place/oslo"}
    assert readable.named_entities(relation) == forget.entity_refs(relation) == [relation["subject"],
                                                                                 relation["object"]]
    assert forget.entity_refs({"kind": "action", "actor": ""}) == []
    assert forget.entity_refs({"kind": "uncertainty", "entityId": "entity:person/ann"}) == []
    assert BY_KIND["attribute"].entities_in({"entityId": "entity:person/ann"}) == ["entity:person/ann"]


def test_the_write_path_splits_claims_of_every_kind_but_entities():
    assert CLAIM_FIELDS == ("attributes", "relations", "actions", "instructions", "uncertainties")
    out = ExtractionOutput(
        attributes=[ExtractedAttribute(entity="Ann", key="city", value="Oslo")],
        relations=[ExtractedRelation(subject="Ann", label="sister", object="Bea")],
        actions=[ExtractedAction(actor="Cid", verb="ran")])
    assert halving.mentioned_names(out) == ["Ann", "Ann", "Bea", "Cid"]
    assert halving.claim_names(out.relations[0]) == ["Ann", "Bea"]


def test_reconciliation_plans_and_summarises_every_kind_from_the_registry():
    from agent_memory.models.facts import Source
    from agent_memory.services.facts.reconcile import ReconcilePlan, reconcile

    assert all(k.summarise is not None for k in FACT_KINDS)
    for kind in FACT_KINDS:  # each record kind is planned exactly one way
        if kind.kind != "entity":
            assert (kind.plan is not None) != kind.slotted, kind.kind
            assert (kind.store_key is not None) != kind.slotted, kind.kind  # slotted rows: memory_repo
    assert list(ReconcilePlan().created) == [k.kind for k in FACT_KINDS if k.kind != "entity"]
    out = ExtractionOutput(
        attributes=[ExtractedAttribute(entity="Ann", key="city", value="Oslo")],
        relations=[ExtractedRelation(subject="Ann", label="sister", object="Bea")],
        actions=[ExtractedAction(actor="Cid", verb="ran")])
    plan = reconcile(out, source=Source(kind="turn"), context_id="c")
    # the entities every claim names (the registry's claim_names), in registry order
    assert [t.entity.name for t in plan.entities] == ["Ann", "Bea", "Cid"]
    result = plan.to_result("turn_1")
    assert [len(getattr(result, k.field)) for k in FACT_KINDS] == [3, 1, 1, 1, 0, 0]

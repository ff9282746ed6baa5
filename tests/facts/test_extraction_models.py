"""Extraction schema, the ExtractionResultJson wire model, and stored memory records."""

import json

import pytest

from agent_memory.models.extraction import (
    ActionSummary,
    AttributeSummary,
    CorrectionSummary,
    EntitySummary,
    ExtractionOutput,
    ExtractionResult,
    InstructionSummary,
    RelationSummary,
    UncertaintySummary,
)
from agent_memory.models.facts import Action, Attribute, Entity, Instruction, Relation, Source, Uncertainty

pytestmark = pytest.mark.domain


def test_every_extraction_field_is_defaulted():
    out = ExtractionOutput.model_validate({"attributes": [{}], "relations": [{}], "actions": [{}]})
    assert out.attributes[0].confidence == 0.9 and out.attributes[0].negated is False
    assert ExtractionOutput().is_empty()


def test_extraction_is_lenient_about_model_slips():
    out = ExtractionOutput.model_validate({
        "entities": None,
        "attributes": [{"entity": "User", "key": "age", "value": 34, "category": "Identity", "cardinality": "SINGLE",
                        "negated": None, "confidence": None, "valid_from": ""}],
        "relations": [{"subject": "User", "label": "sister", "object": "Emma", "category": "bogus"}],
        "unexpected": 1,
    })
    a = out.attributes[0]
    assert (a.value, a.category, a.cardinality, a.negated, a.confidence, a.valid_from) == (
        "34", "identity", "single", False, 0.9, None)
    assert out.entities == [] and out.relations[0].category is None


def test_extraction_schema_has_no_unions_but_optional():
    schema = json.dumps(ExtractionOutput.model_json_schema())
    assert "oneOf" not in schema and "allOf" not in schema
    for name in ("entities", "attributes", "relations", "actions", "instructions", "uncertainties"):
        assert name in ExtractionOutput.model_fields


def test_result_wire_is_camel_case_and_complete():
    result = ExtractionResult(
        turn_id="turn_1",
        entities=[EntitySummary(id="entity:person/user", name="Alice", entity_type="person",
                                memory_category="identity", is_new=True)],
        attributes=[AttributeSummary(id="attr_1", entity_id="entity:person/user", key="location", value="Berlin",
                                     memory_category="identity")],
        relations=[RelationSummary(subject="entity:person/user", label="sister", object="entity:person/emma",
                                   memory_category="identity")],
        actions=[ActionSummary(actor="entity:person/user", verb="ran", object=None, occurred_at=None,
                               summary="User ran", memory_category="context")],
        instructions=[InstructionSummary(id="instr_1", label="language", description="Always answer in German.")],
        uncertainties=[UncertaintySummary(about="a", reason="b")],
        corrections=[CorrectionSummary(entity_id="entity:person/user", key="location", old_value="London",
                                       new_value="Berlin")],
    )
    wire = result.to_wire()
    assert set(wire) == {"turnId", "entities", "attributes", "relations", "actions", "instructions",
                         "uncertainties", "corrections"}
    assert wire["entities"][0] == {"id": "entity:person/user", "name": "Alice", "entityType": "person",
                                   "memoryCategory": "identity", "isNew": True}
    assert set(wire["attributes"][0]) == {"id", "entityId", "key", "value", "memoryCategory"}
    assert set(wire["relations"][0]) == {"subject", "label", "object", "memoryCategory"}
    assert wire["actions"][0] == {"actor": "entity:person/user", "verb": "ran", "object": None, "occurredAt": None,
                                  "summary": "User ran", "memoryCategory": "context"}
    assert set(wire["instructions"][0]) == {"id", "label", "description"}
    assert wire["corrections"][0] == {"entityId": "entity:person/user", "key": "location", "oldValue": "London",
                                      "newValue": "Berlin"}
    json.dumps(wire)


def test_empty_result_has_every_list():
    assert ExtractionResult(turn_id="t").to_wire() == {
        "turnId": "t", "entities": [], "attributes": [], "relations": [], "actions": [], "instructions": [],
        "uncertainties": [], "corrections": []}


def test_records_round_trip_through_json():
    source = Source(kind="upsert", ref="turn_1", session_id="sess_1")
    records = [
        Entity(id="entity:person/user", name="Alice", entity_type="person", category="identity", importance=1.0),
        Attribute(id="attr_1", entity_id="entity:person/user", key="location", value="Berlin", source=source,
                  scopes=[["org/acme"]], labels=["x"], valid_from="2026-05-12T16:24:00.000Z"),
        Relation(id="rel_1", subject="entity:person/user", label="sister", object="entity:person/emma", source=source),
        Action(id="act_1", actor="entity:person/user", verb="ran", object="marathon", source=source),
        Instruction(id="instr_1", label="language", description="Always answer in German.", source=source),
        Uncertainty(id="unc_1", about="a", reason="b", entity_id="entity:person/user", key="location",
                    proposed_value="Paris", source=source),
    ]
    for record in records:
        data = json.loads(json.dumps(record.to_dict()))
        assert type(record).from_dict(data) == record


def test_record_dict_is_camel_case_and_source_matches_the_wire():
    data = Attribute(id="attr_1", entity_id="e", source=Source(kind="turn", ref="turn_1", session_id="s")).to_dict()
    assert {"entityId", "validFrom", "validUntil", "supersededBy", "lastSeenAt", "createdAt"} <= set(data)
    assert data["source"] == {"kind": "turn", "ref": "turn_1", "sessionId": "s"}


def test_from_dict_accepts_snake_case_and_ignores_unknown_keys():
    a = Attribute.from_dict({"id": "attr_1", "entity_id": "e", "valid_from": "t", "future_field": 1})
    assert (a.entity_id, a.valid_from) == ("e", "t")


def test_validity_helpers():
    a = Attribute(id="attr_1", valid_from="2026-01-01T00:00:00.000Z", valid_until="2026-02-01T00:00:00.000Z")
    assert not a.is_current
    assert a.valid_at("2026-01-15T00:00:00.000Z")
    assert not a.valid_at("2026-02-01T00:00:00.000Z")
    assert not a.valid_at("2025-12-31T00:00:00.000Z")
    assert Attribute(id="attr_2").is_current
    assert Source(kind="document").authoritative and not Source(kind="turn").authoritative

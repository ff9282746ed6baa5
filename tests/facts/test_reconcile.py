"""Reconciliation, rule by rule (services.reconcile module docstring)."""

from datetime import UTC, datetime, timedelta

import pytest

from agent_memory.adapters.offline import offline_extract
from agent_memory.kernel import timeutil
from agent_memory.kernel.ids import new_id
from agent_memory.models.extraction import (
    ExtractedAction,
    ExtractedAttribute,
    ExtractedEntity,
    ExtractedInstruction,
    ExtractedRelation,
    ExtractedUncertainty,
    ExtractionOutput,
)
from agent_memory.models.facts import Attribute, Entity, Instruction, Relation, Source
from agent_memory.rules.self_entity import SELF_ENTITY_ID, EntityResolver
from agent_memory.services.facts.reconcile import ReconcileSettings, normalise_value, reconcile, slots

pytestmark = pytest.mark.service

T0 = datetime(2026, 5, 12, 16, 24, tzinfo=UTC)
T0S = "2026-05-12T16:24:00.000Z"
EARLIER = "2026-01-01T00:00:00.000Z"
TURN = Source(kind="turn", ref="turn_1", session_id="sess_1")
UPSERT = Source(kind="upsert", ref="req_1")
DOCUMENT = Source(kind="document", ref="doc_1")
ME = SELF_ENTITY_ID


def iso(dt):
    return timeutil.iso(dt)


def A(key, value, entity="User", **kw):
    return ExtractedAttribute(entity=entity, entity_type=kw.pop("entity_type", "person"), key=key, value=value, **kw)


def R(label, obj, subject="User", **kw):
    return ExtractedRelation(subject=subject, label=label, object=obj, **kw)


def out(*attributes, **lists):
    return ExtractionOutput(attributes=list(attributes), **lists)


def row(key="location", value="London", entity=ME, **kw):
    kw.setdefault("valid_from", EARLIER)
    kw.setdefault("source", TURN)
    kw.setdefault("importance", 0.8)
    return Attribute(id=new_id("attr"), entity_id=entity, key=key, value=value, **kw)


def rel(label, obj, subject=ME, **kw):
    kw.setdefault("valid_from", EARLIER)
    kw.setdefault("source", TURN)
    return Relation(id=new_id("rel"), subject=subject, label=label, object=obj, **kw)


def run(extraction, current=(), **kw):
    kw.setdefault("source", TURN)
    kw.setdefault("observed_at", T0)
    kw.setdefault("now", T0)
    return reconcile(extraction, current_attributes=current, **kw)


def corrections(plan):
    return [(c.entity_id, c.key, c.old_value, c.new_value) for c in plan.corrections]


# --- inserts and time ---------------------------------------------------------------------------


def test_new_value_is_inserted_with_provenance():
    plan = run(out(A("location", "London")), scopes=[["org/acme"]], labels=["b", "a"], context_id="ctx",
               created_by="user:alice")
    [a] = plan.inserts
    assert (a.entity_id, a.key, a.value) == (ME, "location", "London")
    assert a.id.startswith("attr_")
    assert (a.category, a.importance, a.confidence) == ("identity", 1.0, 0.9)
    assert (a.valid_from, a.valid_until, a.supersedes, a.superseded_by) == (T0S, None, None, None)
    assert (a.source, a.scopes, a.labels, a.context_id, a.created_by) == (TURN, [["org/acme"]], ["a", "b"], "ctx",
                                                                          "user:alice")
    assert (a.created_at, a.last_seen_at) == (T0S, T0S)
    assert plan.corrections == [] and plan.supersessions == []


def test_valid_from_is_the_event_time_then_observed_then_now():
    plan = run(out(A("location", "Berlin", valid_from="last month")))
    assert plan.inserts[0].valid_from == "2026-04-12T16:24:00.000Z"
    plan = run(out(A("location", "Berlin", valid_from="some day")))
    assert plan.inserts[0].valid_from == T0S
    plan = reconcile(out(A("location", "Berlin")), source=TURN, now=T0 + timedelta(hours=1))
    assert plan.inserts[0].valid_from == iso(T0 + timedelta(hours=1))


def test_categories_and_importance():
    plan = run(out(A("likes", "jazz"), A("mood", "tired"), A("location", "Rome", category="context")))
    assert [(a.key, a.category, a.importance) for a in plan.inserts] == [
        ("likes", "knowledge", 0.8), ("mood", "context", 0.5), ("location", "context", 0.5)]


def test_keys_are_normalised():
    old = row("location", "London")
    plan = run(out(A("City", "Paris")), [old])
    assert plan.inserts[0].key == "location"
    assert corrections(plan) == [(ME, "location", "London", "Paris")]


def test_empty_claims_are_skipped():
    plan = run(out(A("location", ""), A("", "x"), A("location", "Oslo", entity="")))
    assert plan.inserts == []


# --- single-valued: supersession -----------------------------------------------------------------------


def test_new_value_supersedes_the_current_one():
    old = row("location", "London")
    plan = run(out(A("location", "Berlin")), [old])
    [new] = plan.inserts
    [s] = plan.supersessions
    assert (s.old_id, s.new_id, s.valid_until) == (old.id, new.id, T0S)
    assert new.supersedes == old.id
    assert (s.updated.superseded_by, s.updated.valid_until, s.updated.value) == (new.id, T0S, "London")
    assert old.superseded_by is None  # inputs are not mutated
    assert corrections(plan) == [(ME, "location", "London", "Berlin")]
    assert plan.updated_rows() == [s.updated]


def test_supersession_uses_the_event_time():
    old = row("location", "London")
    plan = run(out(A("location", "Berlin", valid_from="last month")), [old])
    assert plan.supersessions[0].valid_until == "2026-04-12T16:24:00.000Z" == plan.inserts[0].valid_from


def test_event_time_before_the_old_value_closes_it_empty_not_inverted():
    old = row("location", "London", valid_from=iso(T0 - timedelta(hours=1)))
    plan = run(out(A("location", "Berlin", valid_from="last month")), [old])
    assert plan.supersessions[0].valid_until == old.valid_from
    assert plan.inserts[0].valid_from == "2026-04-12T16:24:00.000Z"


def test_a_statement_made_before_the_current_value_began_is_history():
    current = row("location", "Berlin", valid_from="2026-06-01T00:00:00.000Z")
    plan = run(out(A("location", "London")), [current])  # observed 12 May, current since 1 June
    [hist] = plan.inserts
    assert (hist.value, hist.valid_from, hist.valid_until, hist.superseded_by) == (
        "London", T0S, current.valid_from, current.id)
    assert plan.supersessions == [] and plan.corrections == []


def test_only_current_rows_compete():
    closed = row("location", "Paris", valid_until="2026-02-01T00:00:00.000Z")
    deleted = row("location", "Rome", deleted=True)
    other_key = row("employer", "Acme")
    other_entity = row("location", "Oslo", entity="entity:person/emma")
    plan = run(out(A("location", "Berlin")), [closed, deleted, other_key, other_entity])
    assert plan.supersessions == [] and len(plan.inserts) == 1


# --- reinforcement ---------------------------------------------------------------------------------


def test_same_value_again_is_a_reinforcement():
    old = row("location", "London", importance=0.8)
    plan = run(out(A("location", "  the LONDON. ")), [old])
    assert plan.inserts == [] and plan.corrections == []
    [r] = plan.reinforcements
    assert (r.id, r.importance, r.last_seen_at) == (old.id, 0.9, T0S)
    assert (r.updated.importance, r.updated.reinforced, r.updated.last_seen_at) == (0.9, 1, T0S)


def test_reinforcement_is_capped_at_one():
    old = row("location", "London", importance=0.95)
    assert run(out(A("location", "London")), [old]).reinforcements[0].importance == 1.0


def test_reinforce_step_is_a_setting():
    old = row("location", "London", importance=0.5)
    plan = run(out(A("location", "London")), [old], settings=ReconcileSettings(reinforce_step=0.25))
    assert plan.reinforcements[0].importance == 0.75


def test_normalise_value():
    assert normalise_value("  The  Netherlands. ") == normalise_value("netherlands")
    assert normalise_value("a data scientist") == "data scientist"


# --- multi-valued -------------------------------------------------------------------------------------


def test_multi_valued_values_accumulate():
    old = row("likes", "sushi")
    plan = run(out(A("likes", "ramen")), [old])
    assert [a.value for a in plan.inserts] == ["ramen"]
    assert plan.supersessions == [] and plan.corrections == []


def test_multi_valued_same_value_is_a_reinforcement():
    old = row("likes", "sushi")
    plan = run(out(A("likes", "Sushi")), [old])
    assert plan.inserts == [] and [r.id for r in plan.reinforcements] == [old.id]


def test_unknown_key_follows_the_model_cardinality():
    old = row("board_games", "Catan")
    assert run(out(A("board_games", "Go", cardinality="multi")), [old]).supersessions == []
    assert len(run(out(A("board_games", "Go")), [old]).supersessions) == 1


# --- scopes --------------------------------------------------------------------------------------------


def test_values_in_different_scopes_coexist():
    old = row("location", "London", scopes=[["team/a"]])
    plan = run(out(A("location", "Berlin")), [old], scopes=[["team/b"]])
    assert len(plan.inserts) == 1 and plan.supersessions == []
    unscoped = run(out(A("location", "Berlin")), [old])
    assert unscoped.supersessions == []


def test_scope_equality_is_canonical_dnf_equality():
    old = row("location", "London", scopes=[["team/b", "clearance/secret"], ["team/a"]])
    plan = run(out(A("location", "Berlin")), [old], scopes=[["team/a/"], ["clearance/secret", "team/b"]])
    assert [s.old_id for s in plan.supersessions] == [old.id]


# --- negation -------------------------------------------------------------------------------------


def test_negation_closes_the_current_value():
    old = row("employer", "Acme")
    plan = run(out(A("employer", "acme", negated=True)), [old])
    [c] = plan.closes
    assert (c.old_id, c.valid_until, c.updated.valid_until, c.updated.superseded_by) == (old.id, T0S, T0S, None)
    assert plan.inserts == []
    assert corrections(plan) == [(ME, "employer", "Acme", "")]


def test_negation_with_event_time():
    old = row("employer", "Acme")
    plan = run(out(A("employer", "Acme", negated=True, valid_from="last week")), [old])
    assert plan.closes[0].valid_until == "2026-05-05T16:24:00.000Z"


def test_negation_of_another_value_changes_nothing():
    old = row("employer", "Acme")
    plan = run(out(A("employer", "Globex", negated=True)), [old])
    assert plan.closes == [] and plan.corrections == [] and plan.inserts == []


def test_negation_without_value_closes_a_single_valued_key():
    old = row("employer", "Acme")
    assert [c.old_id for c in run(out(A("employer", "", negated=True)), [old]).closes] == [old.id]


def test_negation_closes_only_its_value_of_a_multi_valued_key():
    sushi, ramen = row("likes", "sushi"), row("likes", "ramen")
    plan = run(out(A("likes", "sushi", negated=True)), [sushi, ramen])
    assert [c.old_id for c in plan.closes] == [sushi.id]


def test_negation_matching_nothing_is_a_no_op():
    plan = run(out(A("likes", "sushi", negated=True)))
    assert plan.closes == [] and plan.inserts == [] and plan.corrections == [] and plan.uncertainties == []


# --- authoritative facts ------------------------------------------------------------------------------


def test_a_turn_never_overwrites_an_authoritative_fact():
    for source in (UPSERT, DOCUMENT):
        old = row("location", "London", source=source)
        plan = run(out(A("location", "Berlin")), [old])
        assert plan.inserts == [] and plan.supersessions == [] and plan.corrections == []
        [u] = plan.uncertainties
        assert (u.entity_id, u.key, u.proposed_value, u.resolved) == (ME, "location", "Berlin", False)
        assert "Berlin" in u.reason and "London" in u.reason and source.kind in u.reason
        assert u.about == "Whether User's location is Berlin."


def test_a_turn_cannot_close_an_authoritative_fact():
    old = row("employer", "Acme", source=UPSERT)
    plan = run(out(A("employer", "Acme", negated=True)), [old])
    assert plan.closes == [] and len(plan.uncertainties) == 1
    assert "no longer" in plan.uncertainties[0].about


def test_a_turn_may_reinforce_an_authoritative_fact():
    old = row("location", "London", source=UPSERT)
    plan = run(out(A("location", "London")), [old])
    assert [r.id for r in plan.reinforcements] == [old.id] and plan.uncertainties == []


def test_authoritative_writes_replace_anything():
    for current_source in (TURN, UPSERT):
        old = row("location", "London", source=current_source)
        plan = run(out(A("location", "Berlin")), [old], source=UPSERT)
        assert [s.old_id for s in plan.supersessions] == [old.id]


def test_a_turn_adds_to_a_multi_valued_key_held_by_a_document():
    old = row("skills", "python", source=DOCUMENT)
    assert [a.value for a in run(out(A("skills", "go")), [old]).inserts] == ["go"]


# --- confidence floor ----------------------------------------------------------------------------------


def test_below_the_floor_is_an_uncertainty_not_a_value():
    old = row("location", "London")
    plan = run(out(A("location", "Paris", confidence=0.4)), [old])
    assert plan.inserts == [] and plan.supersessions == [] and plan.corrections == []
    [u] = plan.uncertainties
    assert (u.key, u.proposed_value) == ("location", "Paris") and "low confidence" in u.reason


def test_floor_is_a_setting_and_applies_to_negations():
    old = row("employer", "Acme")
    plan = run(out(A("employer", "Acme", negated=True, confidence=0.7)), [old],
               settings=ReconcileSettings(confidence_floor=0.8))
    assert plan.closes == [] and len(plan.uncertainties) == 1
    assert len(run(out(A("location", "Paris", confidence=0.5))).inserts) == 1  # the floor itself passes


# --- several claims in one extraction -----------------------------------------------------------------


def test_last_claim_of_a_single_key_wins():
    old = row("location", "Paris")
    plan = run(out(A("location", "London"), A("location", "Berlin")), [old])
    assert [a.value for a in plan.inserts] == ["Berlin"]
    assert corrections(plan) == [(ME, "location", "Paris", "Berlin")]
    assert plan.inserts[0].supersedes == old.id


def test_a_later_negation_cancels_the_claim():
    plan = run(out(A("location", "London"), A("location", "London", negated=True)))
    assert plan.inserts == []


def test_move_from_to_supersedes_instead_of_closing():
    old = row("location", "London")
    plan = run(offline_extract("I moved from London to Berlin"), [old])
    assert plan.closes == [] and [a.value for a in plan.inserts] == ["Berlin"]
    assert corrections(plan) == [(ME, "location", "London", "Berlin")]


def test_a_repeated_value_keeps_the_stated_event_time():
    plan = run(offline_extract("I moved to Berlin last week. I live in Berlin."))
    assert [(a.value, a.valid_from) for a in plan.inserts] == [("Berlin", "2026-05-05T16:24:00.000Z")]


def test_duplicate_multi_values_are_stored_once():
    plan = run(out(A("likes", "sushi"), A("likes", "Sushi"), A("likes", "ramen")))
    assert sorted(a.value.lower() for a in plan.inserts) == ["ramen", "sushi"]


# --- relations -----------------------------------------------------------------------------------


def test_relation_insert_with_entity_ids():
    plan = run(out(relations=[R("Sister", "Emma")]))
    [r] = plan.relation_inserts
    assert (r.subject, r.label, r.object, r.category, r.importance) == (ME, "sister", "entity:person/emma",
                                                                        "identity", 1.0)
    assert r.id.startswith("rel_")


def test_single_valued_label_supersedes():
    old = rel("manager", "entity:person/bob")
    plan = reconcile(out(relations=[R("boss", "Dave")]), source=TURN, current_relations=[old], now=T0)
    [new] = plan.relation_inserts
    assert new.supersedes == old.id
    assert plan.supersessions[0].updated.superseded_by == new.id
    assert corrections(plan) == [(ME, "manager", "entity:person/bob", "entity:person/dave")]


def test_multi_valued_label_accumulates_and_repeats_reinforce():
    old = rel("sister", "entity:person/emma")
    plan = reconcile(out(relations=[R("sister", "Ann"), R("sister", "Emma")]), source=TURN,
                     current_relations=[old], now=T0)
    assert [r.object for r in plan.relation_inserts] == ["entity:person/ann"]
    assert [r.id for r in plan.reinforcements] == [old.id]


def test_negated_relation_closes():
    old = rel("manager", "entity:person/bob")
    plan = reconcile(out(relations=[R("manager", "Bob", negated=True)]), source=TURN, current_relations=[old], now=T0)
    assert [c.old_id for c in plan.closes] == [old.id] and plan.relation_inserts == []


def test_relation_with_an_end_closes_or_is_stored_closed():
    old = rel("colleague", "entity:person/carol")
    plan = reconcile(out(relations=[R("colleague", "Carol", valid_until="in 2022")]), source=TURN,
                     current_relations=[old], now=T0)
    assert plan.closes[0].valid_until == old.valid_from  # 2022 is before the row began: closed empty
    fresh = reconcile(out(relations=[R("colleague", "Carol", valid_from="in 2019", valid_until="in 2022")]),
                      source=TURN, now=T0)
    [r] = fresh.relation_inserts
    assert (r.valid_from, r.valid_until) == ("2019-01-01T00:00:00.000Z", "2022-01-01T00:00:00.000Z")


def test_authoritative_relation_is_protected():
    old = rel("manager", "entity:person/bob", source=UPSERT)
    plan = reconcile(out(relations=[R("manager", "Dave")]), source=TURN, current_relations=[old], now=T0)
    assert plan.relation_inserts == [] and len(plan.uncertainties) == 1
    assert "Dave" in plan.uncertainties[0].about


# --- entities and the speaker ---------------------------------------------------------------------------


def test_entities_are_reported_new_or_existing():
    acme = Entity(id="entity:organisation/acme", name="Acme", entity_type="organisation", created_at=EARLIER)
    plan = run(out(A("employer", "Acme"), entities=[ExtractedEntity(name="Acme", type="organisation")]),
               existing_entities=[acme])
    touches = {t.entity.id: t for t in plan.entities}
    assert touches[ME].is_new and touches[ME].entity.category == "identity"
    assert touches[ME].entity.name == "User"
    assert not touches["entity:organisation/acme"].is_new
    assert touches["entity:organisation/acme"].entity.created_at == EARLIER
    assert touches["entity:organisation/acme"].entity.updated_at == T0S


def test_learning_the_name_keeps_the_self_id():
    plan = run(offline_extract("My name is Alice"))
    assert [(a.entity_id, a.key, a.value) for a in plan.inserts] == [(ME, "name", "Alice")]
    [touch] = plan.entities
    assert (touch.entity.id, touch.entity.name) == (ME, "Alice")


def test_third_person_about_the_speaker_is_the_self_entity():
    plan = run(offline_extract("Alice works at Acme", speaker_name="Alice"), speaker_name="Alice")
    assert [(a.entity_id, a.key) for a in plan.inserts] == [(ME, "employer")]
    assert {t.entity.id for t in plan.entities} == {ME, "entity:organisation/acme"}


def test_a_self_entity_named_alice_is_found_without_speaker_name():
    me = Entity(id=ME, name="Alice", entity_type="person")
    plan = run(out(A("location", "Oslo", entity="Alice")), existing_entities=[me])
    assert plan.inserts[0].entity_id == ME


def test_existing_entity_wins_over_a_mistyped_reference():
    acme = Entity(id="entity:organisation/acme", name="Acme", entity_type="organisation")
    plan = run(out(A("location", "Paris", entity="Acme", entity_type="person")), existing_entities=[acme])
    assert plan.inserts[0].entity_id == "entity:organisation/acme"


def test_slots_lists_what_to_load():
    extraction = offline_extract("I live in Paris. My manager is Bob. Emma is my sister. I like tea.")
    resolver = EntityResolver(speaker_name=None)
    s = slots(extraction, resolver)
    assert s.attributes == {(ME, "location"), (ME, "likes")}
    assert s.relations == {(ME, "manager"), (ME, "sister")}
    assert {ME, "entity:person/bob", "entity:person/emma"} <= s.entity_ids


# --- actions, instructions, uncertainties, wire ----------------------------------------------------------


def test_actions_get_resolved_times_and_ids():
    plan = run(out(actions=[ExtractedAction(actor="User", verb="ran", object="marathon", occurred_at="yesterday",
                                            summary="User ran a marathon yesterday")]))
    [a] = plan.actions
    assert (a.actor, a.verb, a.object, a.occurred_at, a.category, a.importance) == (
        ME, "ran", "marathon", "2026-05-11T16:24:00.000Z", "context", 0.5)
    assert a.id.startswith("act_") and a.summary == "User ran a marathon yesterday"
    no_time = run(out(actions=[ExtractedAction(actor="Bob", verb="left")]))
    assert no_time.actions[0].occurred_at == T0S and no_time.actions[0].summary == "Bob left"


def test_instructions_are_stored_once():
    existing = Instruction(id="instr_x", label="language", description="Always answer in German.")
    extraction = out(instructions=[ExtractedInstruction(label="Language", description="Always answer in German."),
                                   ExtractedInstruction(label="", description="Never use emojis."),
                                   ExtractedInstruction(label="x", description="never use emojis")])
    plan = run(extraction, current_instructions=[existing])
    assert [(i.label, i.description, i.active) for i in plan.instructions] == [
        ("instruction", "Never use emojis.", True)]
    assert plan.instructions[0].id.startswith("instr_")


def test_model_uncertainties_are_recorded():
    plan = run(out(uncertainties=[ExtractedUncertainty(about="Whether Alice holds equity.", reason="Not said."),
                                  ExtractedUncertainty(about="", reason="dropped")]))
    assert [(u.about, u.reason, u.entity_id) for u in plan.uncertainties] == [
        ("Whether Alice holds equity.", "Not said.", None)]


def test_plan_to_result_is_the_write_delta():
    old = row("location", "London")
    extraction = offline_extract("I moved to Berlin last month. My sister Emma lives in Oslo. Always answer in German.")
    wire = run(extraction, [old]).to_result("turn_1").to_wire()
    assert wire["turnId"] == "turn_1"
    assert [(a["entityId"], a["key"], a["value"], a["memoryCategory"]) for a in wire["attributes"]] == [
        (ME, "location", "Berlin", "identity"), ("entity:person/emma", "location", "Oslo", "identity")]
    assert wire["relations"] == [{"subject": ME, "label": "sister", "object": "entity:person/emma",
                                  "memoryCategory": "identity"}]
    assert wire["corrections"] == [{"entityId": ME, "key": "location", "oldValue": "London", "newValue": "Berlin"}]
    assert [i["label"] for i in wire["instructions"]] == ["language"]
    assert {e["id"] for e in wire["entities"]} >= {ME, "entity:person/emma", "entity:location/berlin"}


def test_conversation_over_several_turns():
    """Turn by turn, feeding each plan's rows back in as the current state."""
    state: dict[str, Attribute] = {}

    def say(text, when):
        current = [a for a in state.values() if a.is_current]
        plan = reconcile(offline_extract(text, speaker_name="Alice"), source=TURN, current_attributes=current,
                         speaker_name="Alice", observed_at=when, now=when)
        for a in [*plan.inserts, *plan.updated_rows()]:
            state[a.id] = a
        return plan

    say("I live in London and I work at Acme.", T0)
    plan = say("I moved to Berlin last month. I no longer work at Acme.", T0 + timedelta(days=60))
    assert corrections(plan) == [(ME, "location", "London", "Berlin"), (ME, "employer", "Acme", "")]
    say("Alice lives in Berlin.", T0 + timedelta(days=61))
    current = sorted((a.key, a.value, a.reinforced) for a in state.values() if a.is_current)
    assert current == [("location", "Berlin", 1)]
    london = next(a for a in state.values() if a.value == "London")
    assert london.valid_until == "2026-06-11T16:24:00.000Z" and london.valid_at("2026-05-20T00:00:00.000Z")

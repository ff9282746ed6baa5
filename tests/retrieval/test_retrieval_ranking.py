"""RetrievalService on both record stores with the embedded index: tier-1 seeding, the
ranking rules, exclusions, and access rules applied inside the search."""

from __future__ import annotations

from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import timeutil
from agent_memory.models.requests import WriteFactsRequest

ADMIN = RequestContext(context_id="acme", principal="tester", admin=True)
USER = "entity:person/user"


def write(runtime, text: str, ctx: RequestContext = ADMIN, **extra) -> dict:
    return runtime.facts.write(ctx, WriteFactsRequest(text=text, **extra))


def retrieve(runtime, query: str, ctx: RequestContext = ADMIN, **kw):
    return runtime.retrieval.retrieve(ctx, query, **kw)


def texts(result) -> list[str]:
    return [h.text for h in result.hits]


def test_entities_the_query_names_seed_their_current_facts_first(runtime):
    write(runtime, "My sister Emma lives in Oslo.")
    write(runtime, "I work at Acme.")
    write(runtime, "Oslo is lovely in the spring and the fjords are great.")
    result = retrieve(runtime, "Where does Emma live?", k=5)
    assert result.tier == 1 and result.hits[0].structured
    assert (result.hits[0].kind, result.hits[0].text) == ("attribute", "Emma location: Oslo")
    assert "entity:person/emma" in result.trace["entities"]
    mine = retrieve(runtime, "Where do I work?", k=3)
    assert mine.tier == 1 and mine.hits[0].text == "User employer: Acme"
    graph = retrieve(runtime, "Tell me about Emma", mode="graph", k=5)
    assert graph.hits and {h.kind for h in graph.hits} <= {"attribute", "relation", "entity"}
    assert any(h.kind == "entity" and h.id == "entity:person/emma" for h in graph.hits)
    by_subject = retrieve(runtime, "Where does she live?", subject="person/emma", k=3)
    assert by_subject.hits[0].text == "Emma location: Oslo" and by_subject.trace["tier1Key"] == "location"
    # A bare "where" names no key: tier 1 does not guess one.
    bare = retrieve(runtime, "where", subject="person/emma", k=3)
    assert bare.tier == 3 and bare.trace["askedKeys"] == [] and bare.trace["tier1Key"] is None


def test_current_facts_rank_above_superseded_ones_and_as_of_reads_the_past(runtime):
    write(runtime, "I live in London.", observed_at="2026-03-10T10:00:00Z")
    write(runtime, "I moved to Berlin last month.", observed_at="2026-05-20T10:00:00Z")
    now = retrieve(runtime, "Where do I live?", k=10)
    assert now.hits[0].text == "User location: Berlin"
    assert "User location: London" not in texts(now)  # superseded: not current
    assert texts(now).index("User location: Berlin") < texts(now).index("I live in London.")
    then = retrieve(runtime, "Where do I live?", k=10, as_of="2026-04-01T00:00:00Z")
    assert then.hits[0].text == "User location: London" and "User location: Berlin" not in texts(then)


def test_assistant_turns_rank_below_user_statements(runtime):
    # The assistant's reply matches the query better word for word; the user's statement wins.
    write(runtime, "Favourite colour teal: teal is the favourite colour.", role="assistant", infer="none")
    write(runtime, "These days my favourite colour is probably teal, I think.", infer="none")
    result = retrieve(runtime, "favourite colour teal", k=5)
    turns = [h for h in result.hits if h.kind == "turn"]
    assert [h.role for h in turns[:2]] == ["user", "assistant"]
    assert turns[1].role == "assistant" and turns[0].text.startswith("These days")


def test_excluded_ids_never_come_back_and_the_rest_still_fill_k(runtime):
    ids = [write(runtime, f"Note {i}: the deployment runbook lives in the wiki.", infer="none").turn_id
           for i in range(6)]
    full = retrieve(runtime, "deployment runbook", k=4, include=["turn"])
    assert len(full.hits) == 4
    excluded = [h.id for h in full.hits[:3]]
    rest = retrieve(runtime, "deployment runbook", k=4, include=["turn"], exclude_ids=excluded)
    assert len(rest.hits) == 3 and not set(excluded) & {h.id for h in rest.hits}
    assert {h.id for h in rest.hits} == set(ids) - set(excluded)


def test_a_query_whose_best_matches_are_all_invisible_still_returns_k_visible_hits(runtime):
    secret = [["org/acme/finance"]]
    for i in range(40):
        write(runtime, f"Falcon quarterly budget figure {i}: the Falcon quarterly budget is confidential.",
              scopes=secret, infer="none")
    write(runtime, "I work at Falcon Corp.", scopes=secret)
    visible = [write(runtime, f"Team lunch {i} mentioned the budget once.", scopes=[["org/acme/public"]],
                     infer="none").turn_id for i in range(6)]
    admin = retrieve(runtime, "Falcon quarterly budget", k=5, include=["turn"])
    assert all("Falcon" in t for t in texts(admin))  # the best matches are the secret ones
    reader = RequestContext(context_id="acme", principal="reader", read_region=("org/acme/public",))
    result = retrieve(runtime, "Falcon quarterly budget", reader, k=5)
    assert len(result.hits) == 5 and {h.id for h in result.hits} <= set(visible)
    work = retrieve(runtime, "Where do I work?", reader, k=5)
    assert all("Falcon" not in t for t in texts(work))  # tier-1 reads obey scopes too


def test_session_labels_and_kinds_filters(runtime):
    first = write(runtime, "Project Lynx kicked off today.", infer="none", labels=["lynx"])
    write(runtime, "Project Lynx review is next week.", infer="none")
    in_session = retrieve(runtime, "Project Lynx", session_id=first.session_id, k=5)
    assert [h.id for h in in_session.hits] == [first.turn_id]
    labelled = retrieve(runtime, "Project Lynx", labels=["lynx"], k=5)
    assert [h.id for h in labelled.hits] == [first.turn_id]
    assert all(h.kind == "turn" for h in retrieve(runtime, "Project Lynx", include=["turn"]).hits)


def test_turns_said_inside_the_questions_time_window_rank_first(runtime):
    year = timeutil.now().year - 1  # "July" is the most recent one: last year's is surely past
    write(runtime, "We went sailing on the lake with the dog.", infer="none",
          observed_at=f"{year}-03-05T10:00:00Z")
    july = write(runtime, "We went sailing on the lake with the kids.", infer="none",
                 observed_at=f"{year}-07-05T10:00:00Z")
    result = retrieve(runtime, "When did we go sailing on the lake in July?", k=2,
                      as_of=f"{year}-12-01T00:00:00Z")
    assert result.hits[0].id == july.turn_id
    assert result.trace["timeWindow"]["start"].startswith(f"{year}-07-01")


def test_turns_are_searchable_by_the_speaker_the_write_gave(runtime):
    write(runtime, "I researched sailing schools this week.", infer="none", speaker="Dana")
    write(runtime, "I researched sailing schools this week.", infer="none", speaker={"name": "Okafor"})
    write(runtime, "Dana: I researched sailing schools this week.", infer="none")
    result = retrieve(runtime, "What did Dana research?", k=3, include=["turn"])
    assert result.hits[0].text == "Dana: I researched sailing schools this week."
    assert result.hits[0].metadata["speaker"] == "Dana"
    assert "entity:person/dana" in result.trace["entities"]
    # The third turn's text starts with "Dana:" but it is the context's own user's turn.
    third = [h for h in result.hits if "speaker" not in h.metadata]
    assert third and third[0].text.startswith("Dana: I researched")


def test_next_to_search_a_named_entitys_facts_seed_only_when_they_bear_on_the_question(runtime):
    write(runtime, "My sister Emma lives in Oslo.")
    unrelated = retrieve(runtime, "What does Emma think about chess openings?", k=5)
    assert unrelated.trace["legs"]["structured"] == 0
    related = retrieve(runtime, "Where does Emma live?", k=5)
    assert related.trace["legs"]["structured"] >= 1 and related.hits[0].text == "Emma location: Oslo"
    graph = retrieve(runtime, "What does Emma think about chess openings?", mode="graph", k=5)
    assert any(h.text == "Emma location: Oslo" for h in graph.hits)  # structured-only mode keeps them all


def test_tier1_reads_kept_between_queries_follow_every_write(runtime):
    """Retrieval keeps decoded tier-1 reads while the store's generation holds: a write in
    this process, or a commit by another connection to the same file, is seen at once."""
    write(runtime, "My sister Emma lives in Oslo.")
    for _ in range(2):  # the second question is answered from the kept reads
        first = retrieve(runtime, "Where does Emma live?", k=3)
        assert first.hits[0].structured and first.hits[0].text == "Emma location: Oslo"
    write(runtime, "My sister Emma moved to Bergen.")
    moved = retrieve(runtime, "Where does Emma live?", k=3)
    assert moved.hits[0].structured and moved.hits[0].text == "Emma location: Bergen"
    store = runtime.base_store
    if not callable(getattr(store, "generation", None)):
        return  # DynamoDB: read every time, nothing kept
    from agent_memory.adapters.sqlite_store import SQLiteRecordStore
    from agent_memory.kernel import storage_keys as keys

    other = SQLiteRecordStore(store.path)  # another process's connection to the same file
    try:
        page = other.query(keys.attrs_pk(ADMIN, "entity:person/emma"), prefix="a#", limit=50)
        for record in page.records:
            record.data["deleted"] = True
            other.put(record)
    finally:
        other.close()
    gone = retrieve(runtime, "Where does Emma live?", k=3)
    assert not any(h.structured for h in gone.hits) and gone.tier == 3

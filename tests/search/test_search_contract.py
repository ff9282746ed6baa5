"""SearchIndex contract: one suite, every adapter (embedded always; OpenSearch when
AGENT_MEMORY_OPENSEARCH_URL is set). Filters must apply inside the search, so a caller
always gets ``k`` visible hits when ``k`` visible matches exist. An index answers single legs
(``bm25``, ``vector``); ``hybrid`` here is both legs fused by ``agent_memory.ranking.search``
(``fused_search``), the way a thread's semantic matches rank."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from fused_search import fused_search

from agent_memory.ports import EmbedderMismatch, SearchFilter, SearchHit, SearchIndex, SearchUnit

MODES = ["bm25", "vector", "hybrid"]
CTX = "ctx-a"


def unit(uid: str, text: str, **kw) -> SearchUnit:
    kw.setdefault("context_id", CTX)
    kw.setdefault("kind", "turn")
    return SearchUnit(id=uid, text=text, **kw)


def flt(**kw) -> SearchFilter:
    kw.setdefault("context_id", CTX)
    return SearchFilter(**kw)


def ids(hits) -> list[str]:
    return [h.unit.id for h in hits]


def search(index: SearchIndex, query: str, f: SearchFilter, *, k: int, mode: str) -> list[SearchHit]:
    """One leg of ``index``, or (``hybrid``) both legs fused."""
    return fused_search(index, query, f, k) if mode == "hybrid" else index.search(query, f, k=k, mode=mode)


def found(index: SearchIndex, query: str, mode: str, k: int = 10, **kw) -> set[str]:
    return set(ids(search(index, query, flt(**kw), k=k, mode=mode)))


# ---------------------------------------------------------------------------
# basics
# ---------------------------------------------------------------------------


def test_upsert_then_get_round_trips_every_field(index: SearchIndex) -> None:
    u = unit(
        "turn_1", "Alice moved to Lisbon", revision=3, partition="p1", scopes=[["org/acme"]],
        labels=["x", "y"], role="user", session_id="sess_1", thread_id="thr_1", entity_ids=["person/alice"],
        acl_readers=["alice"], valid_from="2024-01-01T00:00:00.000Z", valid_until="2999-01-01T00:00:00.000Z",
        occurred_at="2024-01-01T00:00:00.000Z", source_ids=["turn_0"], metadata={"seq": 4, "tags": ["a"]},
    )
    index.upsert([u])
    assert index.get(CTX, "turn_1") == u
    assert index.get(CTX, "missing") is None
    assert index.get("other-ctx", "turn_1") is None


CORPUS = [
    ("u_work", "Alice employer is Acme Corporation in Berlin"),
    ("u_pet", "Bob has a dog called Rex"),
    ("u_food", "Carol prefers spicy Thai curry for dinner"),
    ("u_sport", "Dave plays tennis every Sunday morning"),
    ("u_car", "Erin drives an electric blue hatchback"),
]


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_finds_the_obvious_match(index: SearchIndex, mode: str) -> None:
    index.upsert([unit(uid, text) for uid, text in CORPUS])
    hits = search(index, "spicy thai curry", flt(), k=3, mode=mode)
    assert hits and hits[0].unit.id == "u_food"
    assert hits[0].unit.text == "Carol prefers spicy Thai curry for dinner"
    assert all(h.score > 0 for h in hits[:1])


def test_scores_are_on_the_documented_scales(index: SearchIndex) -> None:
    index.upsert([unit(uid, text) for uid, text in CORPUS])
    text = "Bob has a dog called Rex"
    vec = index.search(text, flt(), k=1, mode="vector")[0]
    assert vec.unit.id == "u_pet" and vec.score == pytest.approx(1.0, abs=1e-3)  # cosine
    bm = index.search(text, flt(), k=1, mode="bm25")[0]
    assert 0 < bm.score < 1  # saturated bm25, higher is better
    hy = search(index, text, flt(), k=1, mode="hybrid")[0]
    assert hy.score == pytest.approx(2 / 61)  # rank 1 in both legs of RRF(k=60), fused by ranking


CJK_CORPUS = [
    ("u_zh_sushi", "我最喜欢吃寿司，每周五都去车站旁边的寿司店。"),
    ("u_zh_train", "明天早上我要坐火车去上海开会。"),
    ("u_ja_tokyo", "東京に住んでいて、毎朝コーヒーを飲みます。"),
    ("u_ja_cat", "うちの猫はミケという名前です。"),
    ("u_en", "Alice drinks green tea in Kyoto"),
]


@pytest.mark.parametrize("query, expected", [
    ("寿司", "u_zh_sushi"),  # a word inside an unsegmented sentence
    ("上海", "u_zh_train"),
    ("火车", "u_zh_train"),
    ("東京", "u_ja_tokyo"),
    ("コーヒー", "u_ja_tokyo"),  # katakana
    ("ミケ", "u_ja_cat"),
    ("寿司はどこ", "u_zh_sushi"),  # a query in another script run still shares the bigram
    ("Kyoto green tea", "u_en"),  # Latin text is analysed as before
])
def test_bm25_finds_chinese_and_japanese_terms(index: SearchIndex, query: str, expected: str) -> None:
    index.upsert([unit(uid, text) for uid, text in CJK_CORPUS])
    hits = index.search(query, flt(), k=3, mode="bm25")
    assert hits and hits[0].unit.id == expected, [h.unit.id for h in hits]
    assert hits[0].unit.text == dict(CJK_CORPUS)[expected]  # the stored text is what was written


def test_bm25_query_text_is_never_parsed_as_fts_syntax(index: SearchIndex) -> None:
    index.upsert([unit(uid, text) for uid, text in CORPUS])
    for q in ['tennis" OR "dog', "NEAR(tennis dog)", "text:tennis*", "-tennis", "(tennis", "AND", '"', "^*"]:
        index.search(q, flt(), k=5, mode="bm25")  # must not raise
    assert ids(index.search('"tennis" -OR- ((Sunday', flt(), k=1, mode="bm25")) == ["u_sport"]
    for mode in MODES:
        assert search(index, "   ", flt(), k=5, mode=mode) == []
        assert search(index, "?!", flt(), k=5, mode=mode) == []


def test_embedded_index_persists_across_reopen(backend: str, make_index) -> None:
    if backend != "embedded":
        pytest.skip("reopen semantics are specific to the embedded file")
    first = make_index()
    first.upsert([unit(uid, text) for uid, text in CORPUS])
    search(first, "tennis", flt(), k=1, mode="hybrid")  # load the in-memory view before closing
    first.close()
    again = make_index()
    for mode in MODES:
        assert ids(search(again, "tennis Sunday", flt(), k=1, mode=mode)) == ["u_sport"]
    again.upsert([unit("u_new", "Frank collects vintage stamps")])
    again.close()
    third = make_index()
    assert ids(third.search("vintage stamps", flt(), k=1, mode="vector")) == ["u_new"]
    assert third.get(CTX, "u_work").text == "Alice employer is Acme Corporation in Berlin"


# ---------------------------------------------------------------------------
# filters, one at a time, in every mode
# ---------------------------------------------------------------------------

TEXT = "quarterly budget review meeting notes"


def _pair(a: dict, b: dict) -> list[SearchUnit]:
    return [unit("in", TEXT, **a), unit("out", TEXT, **b)]


FILTER_CASES = {
    "context": (dict(), dict(context_id="ctx-b"), dict()),
    "partition": (dict(partition="p1"), dict(partition="p2"), dict(partition="p1")),
    "kinds": (dict(kind="attribute"), dict(kind="turn"), dict(kinds=["attribute", "chunk"])),
    "roles": (dict(role="user"), dict(role="assistant"), dict(roles=["user"])),
    "roles_excludes_none": (dict(role="user"), dict(role=None), dict(roles=["user"])),
    "session": (dict(session_id="s1"), dict(session_id="s2"), dict(session_id="s1")),
    "thread": (dict(thread_id="t1"), dict(thread_id="t2"), dict(thread_id="t1")),
    "labels_all_required": (dict(labels=["a", "b", "c"]), dict(labels=["a"]), dict(labels=["a", "b"])),
    "exclude_ids": (dict(), dict(), dict(exclude_ids=["out"])),
    "read_region": (dict(scopes=[["org/acme"]]), dict(scopes=[["org/other"]]), dict(read_region=["org/acme"])),
    "readers": (dict(acl_readers=["alice"]), dict(acl_readers=["bob"]), dict(principals=["alice"])),
    "as_of": (
        dict(valid_from="2020-01-01T00:00:00.000Z", valid_until="2021-01-01T00:00:00.000Z"),
        dict(valid_from="2021-01-01T00:00:00.000Z"),
        dict(as_of="2020-06-01T00:00:00Z"),
    ),
    "current": (dict(valid_until="2999-01-01T00:00:00.000Z"), dict(valid_until="2001-01-01T00:00:00.000Z"), dict()),
    "valid_window_overlaps_closed": (
        dict(valid_from="2020-01-01T00:00:00.000Z", valid_until="2021-01-01T00:00:00.000Z"),
        dict(valid_from="2019-01-01T00:00:00.000Z", valid_until="2020-01-01T00:00:00.000Z"),  # ends as it starts
        dict(valid_window=("2020-01-01T00:00:00Z", "2020-02-01T00:00:00Z")),
    ),
    "valid_window_open_start": (
        dict(valid_from="2019-01-01T00:00:00.000Z"), dict(valid_from="2020-02-01T00:00:00.000Z"),
        dict(valid_window=(None, "2020-02-01T00:00:00Z")),
    ),
    "lens_strict": (dict(scopes=[["org/acme/team/eng"]]), dict(scopes=[["org/acme"]]), dict(lens=[["org/acme/team"]])),
    "lens_and_clause": (dict(scopes=[["org/a", "org/b"]]), dict(scopes=[["org/a"]]), dict(lens=[["org/a", "org/b"]])),
    "lens_never_widens": (dict(scopes=[["org/a/x"]]), dict(scopes=[["org/b/x"]]),
                          dict(read_region=["org/a"], lens=[["org/a"], ["org/b"]])),
    "any_labels": (dict(labels=["entity:person/a", "x"]), dict(labels=["x"]), dict(any_labels=["entity:person/a", "y"])),
    "source_ids": (dict(source_ids=["doc_1"]), dict(source_ids=["doc_2"]), dict(source_ids=["doc_1", "doc_3"])),
}

LENS_UNITS = {
    "lens": [["org/acme/team/eng"]],
    "below": [["org/acme/team/eng/alice"]],
    "parent": [["org/acme/team"]],
    "root": [["org"]],
    "sibling": [["org/acme/team/ops"]],
    "cousin": [["org/other/team/eng"]],
    "unscoped": [],
    "co_owned": [["org/acme/team/eng", "org/x"]],
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("view", "expected"),
    [
        ("strict", {"lens", "below", "co_owned"}),
        ("merged", {"lens", "below", "co_owned", "parent", "root", "unscoped"}),
        ("crossTeam", {"lens", "below", "co_owned", "sibling"}),
    ],
)
def test_lens_views(index: SearchIndex, view, expected, mode) -> None:
    index.upsert([unit(uid, TEXT, scopes=s) for uid, s in LENS_UNITS.items()])
    assert found(index, TEXT, mode, lens=[["org/acme/team/eng"]], lens_view=view) == expected


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("case", sorted(FILTER_CASES))
def test_each_filter_applies(index: SearchIndex, case: str, mode: str) -> None:
    a, b, f = FILTER_CASES[case]
    index.upsert(_pair(a, b))
    assert found(index, "budget review meeting", mode, **f) == {"in"}


@pytest.mark.parametrize("mode", MODES)
def test_filters_combine(index: SearchIndex, mode: str) -> None:
    index.upsert([
        unit("ok", TEXT, partition="p", kind="chunk", role="user", labels=["l"], scopes=[["org/a"]]),
        unit("wrong_kind", TEXT, partition="p", kind="turn", role="user", labels=["l"], scopes=[["org/a"]]),
        unit("wrong_scope", TEXT, partition="p", kind="chunk", role="user", labels=["l"], scopes=[["org/b"]]),
        unit("no_label", TEXT, partition="p", kind="chunk", role="user", scopes=[["org/a"]]),
    ])
    got = found(index, TEXT, mode, partition="p", kinds=["chunk"], roles=["user"], labels=["l"],
                read_region=["org/a"])
    assert got == {"ok"}


# ---------------------------------------------------------------------------
# scopes (DNF), reader lists, validity
# ---------------------------------------------------------------------------

SCOPED = {
    "both_a_and_b": [["org/a", "org/b"]],
    "a_or_b": [["org/a"], ["org/b"]],
    "child_of_a": [["org/a/team/x"]],
    "prefix_trap": [["org/ab"]],
    "a_and_child_of_b": [["org/a", "org/b/y"], ["org/z"]],
    "unscoped": [],
}

REGIONS = [
    (None, set(SCOPED)),
    ([], {"unscoped"}),
    (["org/a"], {"a_or_b", "child_of_a", "unscoped"}),
    (["org/b"], {"a_or_b", "unscoped"}),
    (["org/a", "org/b"], {"both_a_and_b", "a_or_b", "child_of_a", "a_and_child_of_b", "unscoped"}),
    (["org/a", "org/b/y"], {"a_or_b", "child_of_a", "a_and_child_of_b", "unscoped"}),
    (["org/a/team"], {"child_of_a", "unscoped"}),
    (["org"], set(SCOPED)),
    (["org/z"], {"a_and_child_of_b", "unscoped"}),
    # "*" stands for exactly one segment, also mid-path.
    (["org/*"], set(SCOPED)),
    (["*/a"], {"a_or_b", "child_of_a", "unscoped"}),
    (["org/*/team"], {"child_of_a", "unscoped"}),
    (["org/*/team/x"], {"child_of_a", "unscoped"}),
    (["org/*/other"], {"unscoped"}),
    (["org/*/team/*/deeper"], {"unscoped"}),
    (["org/a", "*/b/*"], {"a_or_b", "child_of_a", "a_and_child_of_b", "unscoped"}),
    (["org/b", "*/*/team"], {"a_or_b", "child_of_a", "unscoped"}),
]

WILD_SCOPED = {
    "alice_private": [["users/alice/private"]],
    "alice_private_notes": [["users/alice/private/notes"]],
    "bob_private": [["users/bob/private"]],
    "alice_public": [["users/alice/public"]],
    "dotted": [["users/a.b/private"]],
    "regex_chars": [["users/a+b(c)/private"]],
    "private_and_team": [["users/carol/private", "teams/x"]],
    "too_short": [["users/private"]],
    "unscoped": [],
}

WILD_REGIONS = [
    (["users/*/private"], {"alice_private", "alice_private_notes", "bob_private", "dotted", "regex_chars",
                           "unscoped"}),
    (["users/*/private", "teams/x"], {"alice_private", "alice_private_notes", "bob_private", "dotted",
                                      "regex_chars", "private_and_team", "unscoped"}),
    (["users/a.b/*"], {"dotted", "unscoped"}),
    (["users/a+b(c)/*"], {"regex_chars", "unscoped"}),
    (["*/*/private/notes"], {"alice_private_notes", "unscoped"}),
    (["users/*/public"], {"alice_public", "unscoped"}),
]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("region", "expected"), WILD_REGIONS, ids=[str(r) for r, _ in WILD_REGIONS])
def test_mid_path_wildcards_cover_one_segment(index: SearchIndex, region, expected, mode) -> None:
    """``users/*/private`` covers every user's private area and nothing else: a ``.`` or
    regexp operators in a segment are literals, and ``*`` never spans two segments."""
    index.upsert([unit(uid, TEXT, scopes=s) for uid, s in WILD_SCOPED.items()])
    assert found(index, TEXT, mode, k=30, read_region=region) == expected


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(("region", "expected"), REGIONS, ids=[str(r) for r, _ in REGIONS])
def test_scope_visibility_is_dnf_with_descendant_coverage(index: SearchIndex, region, expected, mode) -> None:
    index.upsert([unit(uid, TEXT, scopes=s) for uid, s in SCOPED.items()])
    assert found(index, TEXT, mode, k=20, read_region=region) == expected


READERS = {"open": None, "quarantined": [], "listed": ["alice", "group:eng"]}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("principals", "admin", "expected"),
    [
        ([], False, {"open"}),
        (["bob"], False, {"open"}),
        (["alice"], False, {"open", "listed"}),
        (["bob", "group:eng"], False, {"open", "listed"}),
        ([], True, {"open", "quarantined", "listed"}),
    ],
)
def test_reader_lists_three_states(index: SearchIndex, principals, admin, expected, mode) -> None:
    index.upsert([unit(uid, TEXT, acl_readers=r) for uid, r in READERS.items()])
    assert found(index, TEXT, mode, principals=principals, admin=admin) == expected


VALIDITY = {
    "closed_2020": dict(valid_from="2020-01-01T00:00:00.000Z", valid_until="2021-01-01T00:00:00.000Z"),
    "from_2021": dict(valid_from="2021-01-01T00:00:00.000Z"),
    "always": dict(),
    "until_future": dict(valid_until="2999-01-01T00:00:00.000Z"),
    "starts_2030": dict(valid_from="2030-01-01T00:00:00.000Z"),
}


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    ("as_of", "expected"),
    [
        ("2019-06-01T00:00:00Z", {"always", "until_future"}),
        ("2020-06-01T00:00:00Z", {"closed_2020", "always", "until_future"}),
        ("2021-01-01T00:00:00Z", {"from_2021", "always", "until_future"}),  # valid_until is exclusive
        ("2031-01-01T00:00:00+00:00", {"from_2021", "always", "until_future", "starts_2030"}),
        (None, {"from_2021", "always", "until_future", "starts_2030"}),  # current: closed units out
    ],
)
def test_validity_windows_and_current(index: SearchIndex, as_of, expected, mode) -> None:
    index.upsert([unit(uid, TEXT, **v) for uid, v in VALIDITY.items()])
    assert found(index, TEXT, mode, as_of=as_of) == expected


# ---------------------------------------------------------------------------
# revisions, deletes
# ---------------------------------------------------------------------------


def test_stale_revision_is_ignored_and_newer_applies(index: SearchIndex) -> None:
    index.upsert([unit("u", "the falcon is grey", revision=2)])
    index.upsert([unit("u", "the parrot is green", revision=1)])
    assert index.get(CTX, "u").text == "the falcon is grey"
    assert found(index, "parrot green", "bm25") == set()
    assert found(index, "falcon grey", "bm25") == {"u"}

    index.upsert([unit("u", "the heron is white", revision=3)])
    assert index.get(CTX, "u").revision == 3
    assert found(index, "heron white", "bm25") == {"u"}
    assert found(index, "falcon grey", "bm25") == set()

    index.upsert([unit("u", "the swan is black", revision=3)])  # equal revision overwrites
    assert index.get(CTX, "u").text == "the swan is black"
    assert ids(index.search("swan black", flt(), k=1, mode="vector")) == ["u"]


@pytest.mark.parametrize("mode", MODES)
def test_words_first_searched_then_written_are_found(index: SearchIndex, mode: str) -> None:
    index.upsert([unit(uid, text) for uid, text in CORPUS])
    assert "u_new" not in found(index, "zanzibar expedition", mode)
    index.upsert([unit("u_new", "planning a zanzibar expedition")])
    assert ids(search(index, "zanzibar expedition", flt(), k=1, mode=mode)) == ["u_new"]


def test_batch_with_duplicate_ids_keeps_highest_revision(index: SearchIndex) -> None:
    index.upsert([unit("u", "version three", revision=3), unit("u", "version one", revision=1)])
    assert index.get(CTX, "u").text == "version three"


def test_delete_and_delete_context(index: SearchIndex) -> None:
    index.upsert([unit("a", TEXT), unit("b", TEXT), unit("c", TEXT, context_id="ctx-b")])
    search(index, TEXT, flt(), k=5, mode="hybrid")  # make sure in-memory views (if any) are loaded first
    index.delete(CTX, ["a", "missing"])
    assert index.get(CTX, "a") is None
    for mode in MODES:
        assert found(index, TEXT, mode) == {"b"}
    index.delete_context(CTX)
    assert index.get(CTX, "b") is None
    for mode in MODES:
        assert found(index, TEXT, mode) == set()
        assert found(index, TEXT, mode, context_id="ctx-b") == {"c"}
    index.upsert([unit("fresh", "written after the context was deleted")])
    assert found(index, "written after deleted", "bm25") == {"fresh"}


def test_embedder_mismatch_raises(make_index, embedder) -> None:
    first = make_index()
    first.upsert([unit("a", TEXT)])
    kind = type(embedder)
    for other in (kind(name="test/other", dimension=embedder.dimension), kind(name=embedder.name, dimension=32)):
        with pytest.raises(EmbedderMismatch) as err:
            idx = make_index(other)
            search(idx, TEXT, flt(), k=1, mode="hybrid")
        message = str(err.value)
        assert embedder.name in message and other.name in message
        assert str(other.dimension) in message


def test_upsert_embeds_in_chunked_batches(index: SearchIndex, embedder) -> None:
    embedder.calls.clear()
    index.upsert([unit(f"u{i}", f"note number {i}") for i in range(600)])
    assert embedder.calls == [256, 256, 88]


# ---------------------------------------------------------------------------
# THE key property: filters apply before the top-k cut
# ---------------------------------------------------------------------------

QUERY = "orbital telescope mirror calibration"


def _wall_of_invisible_matches(n_each: int = 10) -> tuple[list[SearchUnit], list[str]]:
    """Units that match QUERY perfectly but are invisible to the caller (other scope,
    excluded ids, other partition, other context), plus 10 visible weaker matches."""
    units: list[SearchUnit] = []
    excluded: list[str] = []
    for i in range(n_each):
        units.append(unit(f"scope_{i}", QUERY, scopes=[["org/secret"]]))
        units.append(unit(f"excl_{i}", QUERY))
        excluded.append(f"excl_{i}")
        units.append(unit(f"part_{i}", QUERY, partition="elsewhere"))
        units.append(unit(f"ctx_{i}", QUERY, context_id="ctx-other"))
    for i in range(10):
        units.append(unit(f"weak_{i}", f"telescope field notes entry {i} about weather and dust"))
    return units, excluded


@pytest.mark.parametrize("mode", MODES)
def test_invisible_best_matches_never_starve_visible_hits(index: SearchIndex, mode: str) -> None:
    units, excluded = _wall_of_invisible_matches(10)
    index.upsert(units)
    hits = search(index, QUERY, flt(read_region=["org/public"], exclude_ids=excluded), k=5, mode=mode)
    assert len(hits) == 5
    assert all(h.unit.id.startswith("weak_") for h in hits)


@pytest.mark.parametrize("mode", MODES)
def test_hundreds_of_invisible_best_matches_still_yield_k_visible(index: SearchIndex, mode: str) -> None:
    units, excluded = _wall_of_invisible_matches(100)  # 400 invisible perfect matches
    index.upsert(units)
    hits = search(index, QUERY, flt(read_region=["org/public"], exclude_ids=excluded), k=5, mode=mode)
    assert len(hits) == 5
    assert all(h.unit.id.startswith("weak_") for h in hits)


# ---------------------------------------------------------------------------
# concurrency
# ---------------------------------------------------------------------------


def test_concurrent_upserts_and_searches(index: SearchIndex) -> None:
    errors: list[BaseException] = []
    n_writers, per_writer = 4, 40

    def writer(w: int) -> None:
        try:
            for start in range(0, per_writer, 5):
                index.upsert([unit(f"w{w}_{i}", f"writer {w} item {i} shared topic") for i in range(start, start + 5)])
        except BaseException as exc:  # noqa: BLE001 - surfaced by the assertion below
            errors.append(exc)

    def reader() -> None:
        try:
            for i in range(30):
                search(index, "shared topic", flt(), k=5, mode=MODES[i % 3])
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(w,)) for w in range(n_writers)]
    threads += [threading.Thread(target=reader) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not errors, errors
    assert all(index.get(CTX, f"w{w}_{i}") is not None for w in range(n_writers) for i in range(per_writer))
    assert len(index.search("shared topic", flt(), k=500, mode="bm25")) == n_writers * per_writer
    assert len(index.search("shared topic", flt(), k=500, mode="vector")) == n_writers * per_writer


# ---------------------------------------------------------------------------
# embedded-only mechanics the contract relies on
# ---------------------------------------------------------------------------


def _embedded_only(backend: str) -> None:
    if backend != "embedded":
        pytest.skip("embedded index internals")


def test_embedded_views_survive_eviction_compaction_and_budget(backend, tmp_path, embedder, monkeypatch) -> None:
    _embedded_only(backend)
    from agent_memory.adapters.embedded import bm25
    from agent_memory.adapters.embedded.index import EmbeddedSearchIndex

    idx = EmbeddedSearchIndex(tmp_path / "lru.sqlite", embedder, max_cached_contexts=1)
    idx.upsert([unit(f"a{i}", f"alpha common words {i}") for i in range(1500)])
    idx.upsert([unit("b0", "beta rare marmalade", context_id="ctx-b")])
    assert ids(search(idx, "marmalade", flt(context_id="ctx-b"), k=3, mode="hybrid")) == ["b0"]  # evicts ctx-a's view
    idx.upsert([unit("a_new", "alpha freshly added kumquat")])  # written while ctx-a is not cached
    assert ids(idx.search("kumquat", flt(), k=1, mode="bm25")) == ["a_new"]

    idx.delete(CTX, [f"a{i}" for i in range(1400)])  # tombstones pass the threshold: compaction
    assert found(idx, "alpha common words", "vector", k=500) == {f"a{i}" for i in range(1400, 1500)} | {"a_new"}
    assert len(search(idx, "alpha common words 1450", flt(), k=5, mode="hybrid")) == 5

    monkeypatch.setattr(bm25, "BM25_MATCH_BUDGET", 10)
    idx._bm25.writes_since_df = 10**9  # force a fresh document-frequency snapshot
    # "common" is over budget: the ranked query runs on "kumquat" alone and the rows that only
    # match "common" fill the remaining places, so k hits still come back
    hits = idx.search("common kumquat", flt(), k=3, mode="bm25")
    assert ids(hits)[0] == "a_new" and len(hits) == 3
    assert len(idx.search("alpha common", flt(), k=3, mode="bm25")) == 3
    idx.close()


# ---------------------------------------------------------------------------
# rank_rows: several legs as columns, decoding only what the caller keeps
# ---------------------------------------------------------------------------

RANK_CORPUS = [
    unit("r1", "Alice booked a trip to Lisbon in May", role="user", session_id="s1", labels=["person/alice"],
         occurred_at="2024-05-01T10:00:00.000Z", metadata={"seq": 1, "speaker": "Alice"}),
    unit("r2", "Bob said the Lisbon trip sounds lovely", role="assistant", session_id="s1",
         labels=["person/bob"], metadata={"seq": 2}),
    unit("r3", "Alice location: Lisbon", kind="attribute", labels=["person/alice"],
         valid_until="2999-01-01T00:00:00.000Z", metadata={"key": "location", "value": "Lisbon"}),
    unit("r4", "Alice works at Acme in Berlin", kind="attribute", labels=["person/alice"],
         metadata={"key": "employer"}),
    unit("r5", "Carol plans a trip to Porto", role="user", session_id="s2", labels=["person/carol"],
         metadata={"seq": True}),
    unit("r6", "Lisbon trip budget for the team", kind="chunk", scopes=[["org/other"]]),
    unit("r7", "Lisbon trip notes", kind="attribute", metadata={"key": {"nested": 1}, "seq": 2.0}),
    unit("r8", "Lisbon trip photos", session_id="s3", metadata={"seq": 2**63}),
]


def test_rank_rows_legs_rank_like_search_and_columns_describe_the_units(index: SearchIndex) -> None:
    _check_rank_rows(index)


def test_rank_rows_of_a_large_context_decodes_features_on_first_sight(backend, make_index, monkeypatch) -> None:
    """Past the in-memory postings limit a view loads no payload features: they are decoded
    the first time a row is a candidate (and BM25 runs in FTS5)."""
    _embedded_only(backend)
    from agent_memory.adapters.embedded import term_index

    monkeypatch.setattr(term_index, "MAX_ROWS", 0)
    _check_rank_rows(make_index())


def _check_rank_rows(index: SearchIndex) -> None:
    from agent_memory.ports import NO_SEQ, RowLeg

    index.upsert(RANK_CORPUS)
    f = flt(read_region=["org/acme"])
    legs = [RowLeg("Lisbon trip", "bm25", 10), RowLeg("Lisbon trip", "vector", 4),
            RowLeg("Lisbon trip", "vector", 4, ("person/alice",)), RowLeg("nothing matches zzz", "bm25", 3)]
    ranking = index.rank_rows(f, legs)
    assert len(ranking.legs) == len(legs)
    assert ranking.leg_scores is not None and len(ranking.leg_scores) == len(legs)
    for leg, rows, scores in zip(legs, ranking.legs, ranking.leg_scores, strict=True):
        leg_flt = flt(read_region=["org/acme"], labels=list(leg.labels) or None)
        expected = ids(index.search(leg.query, leg_flt, k=leg.depth, mode=leg.mode))
        assert [ranking.ids[i] for i in rows.tolist()] == expected
        # each candidate's score in the leg: higher is better, so never rising along the leg
        assert scores.shape == rows.shape and np.all(np.isfinite(scores)) and np.all(np.diff(scores) <= 1e-9)
        if leg.mode == "vector" and rows.size:
            assert -1.0 - 1e-6 <= scores.min() and scores.max() <= 1.0 + 1e-6  # cosines
    assert "r6" not in ranking.ids  # the filter applies inside every leg
    assert len(set(ranking.ids)) == len(ranking.ids)
    units = ranking.decode(list(range(len(ranking.ids))))
    assert [u.id for u in units] == ranking.ids
    for i, u in enumerate(units):
        assert u == index.get(CTX, u.id)
        assert ranking.kind[i] == u.kind and ranking.role[i] == u.role and ranking.session_id[i] == u.session_id
        assert ranking.key[i] == u.metadata.get("key") and ranking.occurred_at[i] == u.occurred_at
        assert bool(ranking.current[i]) == (u.valid_until is None)
        assert ranking.labels[i] == frozenset(u.labels)
        seq = u.metadata.get("seq")
        plain = isinstance(seq, int) and not isinstance(seq, bool) and abs(seq) < 2**62
        assert ranking.seq[i] == (seq if plain else NO_SEQ)
    assert {"r7", "r8"} <= set(ranking.ids)
    # decode keeps the order asked for; a unit deleted since the ranking decodes as None, or
    # as the copy the search already read (an adapter whose hits arrive decoded)
    picked = [len(ranking.ids) - 1, 0]
    index.delete(CTX, [ranking.ids[0]])
    again = ranking.decode(picked)
    assert again[0] is not None and again[0].id == ranking.ids[-1]
    assert again[1] is None or again[1].id == ranking.ids[0]


def test_rank_rows_columns_follow_rewrites(index: SearchIndex) -> None:
    from agent_memory.ports import RowLeg

    index.upsert(RANK_CORPUS)
    leg = [RowLeg("Alice Lisbon", "bm25", 10)]
    first = index.rank_rows(flt(), leg)
    assert "r3" in first.ids
    moved = unit("r3", "Alice location: Lisbon", kind="attribute", labels=["person/alice", "x"], revision=2,
                 valid_until="2999-01-01T00:00:00.000Z", metadata={"key": "home"})
    index.upsert([moved])
    second = index.rank_rows(flt(), leg)
    i = second.ids.index("r3")
    assert second.key[i] == "home" and second.labels[i] == frozenset({"person/alice", "x"})
    assert second.decode([i]) == [moved]
    assert index.rank_rows(flt(context_id="empty-ctx"), leg).legs[0].size == 0
    assert index.rank_rows(flt(), []).legs == []

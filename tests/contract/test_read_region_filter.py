"""The read-region filter runs inside the store's query (SQL on SQLite, a FilterExpression
under a read budget on DynamoDB): a narrow region still gets full pages, and resuming from
``last_key`` neither skips nor repeats a visible record."""

from __future__ import annotations

import pytest

from agent_memory.access import scopes as scope_lib
from agent_memory.ports import Record
from agent_memory.services import paging

PK = "c#acme#default#region-filter"
GSI = "c#acme#default#region-gsi"

# Record i gets SCOPES[i % len(SCOPES)]; "users/*/private" and friends see only a few of them.
SCOPES = [
    [["users/alice/private"]],
    [["users/bob/public"]],
    [["teams/x"]],
    [["users/bob/private/notes"]],
    [["users/alice/public"], ["teams/y"]],
    [["users/carol/private", "teams/x"]],  # a multi-path clause: needs both
    [],  # unscoped: everyone
    [["users/alice"]],
    [["orgs/acme/users/alice/private"]],  # longer path: users/*/private must not match mid-way
    [["teams/x/sub"]],
]
FILLER = [["zzz/other"]]  # most records: visible to none of the regions below

REGIONS = [
    ["users/*/private"],
    ["users/alice"],
    ["teams/x"],
    ["users/*/private", "teams/x"],
    ["*/alice/public"],
    [],
]


def _records(n: int) -> list[Record]:
    out = []
    for i in range(n):
        scopes = SCOPES[i // 6 % len(SCOPES)] if i % 6 == 0 else FILLER
        out.append(Record(pk=PK, sk=f"r{i:05d}", data={"kind": "x", "n": i, "scopes": scopes},
                          gsi1pk=GSI, gsi1sk=f"g{(n - i):05d}"))
    return out


@pytest.fixture
def filled(store):
    records = _records(120)
    for r in records:
        store.put(r)
    return store, records


def _expected(records: list[Record], region: list[str], index: str | None = None) -> list[int]:
    kept = [r for r in records if scope_lib.visible(r.data["scopes"], region)]
    if index == "gsi1":
        kept.sort(key=lambda r: r.gsi1sk)
    return [r.data["n"] for r in kept]


def test_query_returns_only_the_region_and_resumes_exactly(filled) -> None:
    store, records = filled
    if hasattr(store, "read_budget"):
        store.read_budget = 13  # DynamoDB: several budget-cut pages over 120 items
    for region in REGIONS:
        for index in (None, "gsi1"):
            _page_through(store, records, region, index)


def _page_through(store, records, region, index) -> None:
    pk = GSI if index else PK
    seen: list[int] = []
    after = None
    pages = 0
    while True:
        page = store.query(pk, after=after, limit=3, read_region=region, index=index)
        pages += 1
        assert len(page.records) <= 3
        seen += [r.data["n"] for r in page.records]
        if page.last_key is None:
            break
        after = page.last_key
        assert pages < 500
    # The store's filter admits exactly what the region may read, except that DynamoDB
    # lets records with a multi-path clause through for the caller's exact check.
    _admits_exactly(store, records, region, seen, index)
    assert [n for n in seen if n in _expected(records, region, index)] == _expected(records, region, index)


def _admits_exactly(store, records, region, seen, index=None) -> None:
    exact = _expected(records, region, index)
    multi = {r.data["n"] for r in records if any(len(c) > 1 for c in r.data["scopes"])}
    assert len(seen) == len(set(seen))
    assert [n for n in seen if n in exact] == exact[:len([n for n in seen if n in exact])]
    assert set(seen) - set(exact) <= multi
    if not hasattr(store, "read_budget"):
        assert set(seen) <= set(exact)  # SQLite evaluates the exact rule in SQL


def test_paged_reads_fill_every_page_for_a_narrow_region(filled) -> None:
    """Through ``paging.read_page`` (what every collection route uses): each page is full
    until the last, however sparse the region, and following the cursors yields every
    visible record once, in order."""
    store, records = filled
    if hasattr(store, "read_budget"):
        store.read_budget = 13
    for region in REGIONS:
        _read_pages(store, records, region)


def _read_pages(store, records, region) -> None:
    exact = _expected(records, region)

    def keep(rs):
        return [r for r in rs if scope_lib.visible(r.data["scopes"], region)]

    src = paging.Source(PK)
    seen: list[int] = []
    after = None
    sizes = []
    while True:
        got, after = paging.read_page(store, src, limit=4, after=after, keep=keep, read_region=region)
        sizes.append(len(got))
        seen += [r.data["n"] for r in got]
        if after is None:
            break
    assert seen == exact
    assert all(s == 4 for s in sizes[:-1]), sizes


def test_filter_needs_no_post_filter_to_fill_a_page(filled) -> None:
    """The store alone fills the page: with about 1 visible record in 6, one query of limit 5
    returns 5 visible records (SQLite), or as many as the read budget reached with a
    resume key (DynamoDB)."""
    store, records = filled
    region = ["users/*/private", "teams/x"]
    page = store.query(PK, limit=5, read_region=region)
    exact = _expected(records, region)
    got = [r.data["n"] for r in page.records]
    _admits_exactly(store, records, region, got)
    if not hasattr(store, "read_budget"):
        assert got == exact[:5]
    else:
        assert len(got) == 5 or page.last_key is not None

"""``RecordStore.scan_page`` on both stores: a resumable walk of the records under a pk prefix
(the scope index's backfill), every record once, nothing outside the prefix."""

from __future__ import annotations

from agent_memory.ports import Record


def test_scan_page_walks_every_record_under_the_prefix_once_and_resumes(store):
    for n in range(23):
        store.put(Record(pk=f"c#acme#default#p{n % 3}", sk=f"{n:03d}", data={"n": n}))
    store.put(Record(pk="c#other#default#p0", sk="x", data={"n": -1}))
    store.put(Record(pk="d#acme", sk="x", data={"n": -2}))
    seen, after, pages = [], None, 0
    while True:
        page = store.scan_page("c#acme#", after=after, limit=5)
        assert len(page.records) <= 5
        seen += [r.data["n"] for r in page.records]
        pages += 1
        after = page.last_key
        if after is None:
            break
        assert pages < 100
    assert sorted(seen) == list(range(23)) and pages >= 5

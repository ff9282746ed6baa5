"""The sync client is generated from the async one (tests/sdk/sync_from_async.py): the committed
client/sync.py and the sync ``ChatStream`` are exactly what the generator makes today."""

from __future__ import annotations

import pytest
import sync_from_async


@pytest.mark.parametrize("path", list(sync_from_async.TARGETS), ids=lambda p: p.name)
def test_the_committed_sync_code_is_the_generators(path):
    assert path.read_text(encoding="utf-8") == sync_from_async.TARGETS[path](), \
        f"{path.name} differs from its async source: run python tests/sdk/sync_from_async.py --write"


def test_an_edit_to_the_async_client_shows_in_the_sync_one():
    source = "class AsyncThing:\n    async def __aenter__(self) -> AsyncThing:\n        await self.go(1,\n" \
             "                      2)\n        async for x in self.lines():\n            yield x\n"
    assert sync_from_async.unasync(source) == (
        "class Thing:\n    def __enter__(self) -> Thing:\n        self.go(1,\n"
        "                2)\n        yield from self.lines()\n")


def test_a_replaced_passage_that_changed_stops_the_generator():
    with pytest.raises(SystemExit, match="REPLACEMENTS"):
        sync_from_async._replace("nothing to replace here", [("import asyncio\n", "")], "client/aio.py")


def test_a_loop_that_only_re_yields_becomes_yield_from():
    assert sync_from_async.unasync("def f(page):\n    for t in page.turns:\n        yield t\n") == \
        "def f(page):\n    yield from page.turns\n"

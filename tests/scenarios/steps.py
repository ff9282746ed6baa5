"""The steps a scenario is written in, and how each runs against the local server.

A scenario is a name and a list of steps; a step is a write (``say``, ``facts``, ``reply``,
``document``, ``chat``) or a check (``ask``, ``values``, ``context``). Checks name texts as the API shows
them (``"User location: Berlin"``, a turn's text), so a scenario reads as what a user would
see. Adding one is a few lines in ``table.py``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

ME = {"type": "person", "name": "user"}


def day(date: str) -> str:
    """``2026-03-10`` -> ``2026-03-10T10:00:00Z`` (a whole timestamp passes through)."""
    return date if "T" in date else f"{date}T10:00:00Z"


@dataclass(frozen=True)
class Scenario:
    name: str
    steps: Sequence[Step]


class Step:
    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        raise NotImplementedError


@dataclass(frozen=True)
class say(Step):  # noqa: N801 - steps read as verbs in the table
    """``POST /facts``: the user says ``text`` (observed ``at``), extracted by the offline model
    unless ``infer`` says otherwise; ``extra`` goes into the body as it is (``scopes``, ``role``)."""

    text: str
    at: str | None = None
    infer: str = "full"
    extra: dict[str, Any] = field(default_factory=dict)

    def body(self) -> dict[str, Any]:
        out: dict[str, Any] = {"text": self.text, "infer": self.infer, **self.extra}
        if self.at:
            out["observedAt"] = day(self.at)
        return out

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        r = api.post(f"{ctx}/facts", self.body())
        assert r.status == 200, r.text


def reply(text: str, at: str | None = None) -> say:
    """An assistant turn (stored as chat stores its replies: not extracted)."""
    return say(text, at, infer="none", extra={"role": "assistant"})


def facts(text: str, *triples: dict[str, Any], at: str | None = None, **extra: Any) -> say:
    """A turn whose facts the caller states (``infer: triples``)."""
    return say(text, at, infer="triples", extra={"triples": list(triples), **extra})


def attribute(key: str, value: str, entity: dict[str, str] = ME, **times: str) -> dict[str, Any]:
    """A triple: ``entity``'s ``key`` is ``value`` (``valid_from``/``valid_until`` in ``times``)."""
    return {"entity": entity, "key": key, "value": value, **{k: day(v) for k, v in times.items()}}


def relation(label: str, name: str, entity: dict[str, str] = ME) -> dict[str, Any]:
    return {"entity": entity, "key": label, "target": {"type": "person", "name": name}}


@dataclass(frozen=True)
class document(Step):  # noqa: N801
    """``POST /documents``, then waits for the in-process ingestion worker to chunk it."""

    title: str
    text: str

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        from agent_memory.runtime import get_runtime

        r = api.post(f"{ctx}/documents", {"title": self.title, "text": self.text})
        assert r.status in (200, 202), r.text
        get_runtime().ingestion_queue.join(timeout=60)


@dataclass(frozen=True)
class conversation(Step):  # noqa: N801
    """``POST /facts/batch`` of user ``messages`` (an assistant's line starts "assistant: "),
    extracted as one whole conversation."""

    messages: Sequence[str]

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        body = [{"role": "assistant", "content": m.removeprefix("assistant: ")} if m.startswith("assistant: ")
                else {"role": "user", "content": m} for m in self.messages]
        r = api.post(f"{ctx}/facts/batch", {"messages": body, "extract": "whole_conversation"})
        assert r.status == 200, r.text


@dataclass(frozen=True)
class no_entity(Step):  # noqa: N801
    """``GET /entities/{type}/{name}`` answers 404: nothing made ``entity`` up."""

    entity: str

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        r = api.get(f"{ctx}/entities/{self.entity}")
        assert r.status == 404, f"{self.entity}: {r.status} {r.text}"


@dataclass(frozen=True)
class unsure(Step):  # noqa: N801
    """``GET /uncertainty``: an open uncertainty whose ``about`` holds ``about``."""

    about: str

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        r = api.get(f"{ctx}/uncertainty")
        assert r.status == 200, r.text
        body = r.json()
        items = body.get("items", body.get("uncertainties", []))
        assert any(self.about in (u.get("about") or "") for u in items), items


@dataclass(frozen=True)
class chat(Step):  # noqa: N801
    """``POST /chat`` in a new session (or in the one an earlier ``chat`` with the same
    ``session`` name opened); the reply must hold each of ``says`` and none of ``never``, cite
    at least ``cites`` memories (each cited snippet holding one of ``cited`` when given).
    ``cache``: let the tier-2 response cache answer (by default it is bypassed)."""

    message: str
    says: Sequence[str] = ()
    never: Sequence[str] = ()
    cache: bool = False
    session: str | None = None
    cites: int = 0
    cited: Sequence[str] = ()

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        body: dict[str, Any] = {"message": self.message, "bypassCache": not self.cache}
        sessions = seen.setdefault("sessions", {})
        if self.session and self.session in sessions:
            body["sessionId"] = sessions[self.session]
        r = api.post(f"{ctx}/chat", body)
        assert r.status == 200, r.text
        got = r.json()
        if self.session:
            sessions[self.session] = got["sessionId"]
        text = got["reply"]
        for part in self.says:
            assert part in text, f"chat {self.message!r}: {part!r} not in {text!r}"
        for part in self.never:
            assert part not in text, f"chat {self.message!r}: {part!r} in {text!r}"
        assert len(got["citations"]) >= self.cites, f"chat {self.message!r}: {got['citations']}"
        for part in self.cited:
            assert any(part in c["snippet"] for c in got["citations"]), \
                f"chat {self.message!r}: no citation holds {part!r}: {got['citations']}"


@dataclass(frozen=True)
class ask(Step):  # noqa: N801
    """``POST /query``: the ``first`` hit's text, the ``tier``, the asked key tier 1 answered
    with (``key``), texts in this ``order`` among the hits (each present), texts ``absent``;
    at the instant ``as_of`` when given."""

    query: str
    first: str | None = None
    tier: int | None = None
    key: str | None = None
    order: Sequence[str] = ()
    absent: Sequence[str] = ()
    as_of: str | None = None
    k: int = 10

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        body: dict[str, Any] = {"query": self.query, "k": self.k}
        if self.as_of:
            body["asOf"] = day(self.as_of)
        r = api.post(f"{ctx}/query", body)
        assert r.status == 200, r.text
        got = r.json()
        texts = [h["text"] for h in got["hits"]]
        where = f"query {self.query!r}{' as of ' + self.as_of if self.as_of else ''}: {texts}"
        if self.first is not None:
            assert texts and texts[0] == self.first, where
        if self.tier is not None:
            assert got["tier"] == self.tier, where
        if self.key is not None:
            assert got["trace"]["tier1Key"] == self.key, (where, got["trace"])
        for text in self.order:
            assert text in texts, f"{text!r} missing from {where}"
        positions = [texts.index(t) for t in self.order]
        assert positions == sorted(positions), f"not in the order {list(self.order)}: {where}"
        for text in self.absent:
            assert text not in texts, f"{text!r} in {where}"


@dataclass(frozen=True)
class values(Step):  # noqa: N801
    """``GET /entities/{type}/{name}``: the current (or ``as_of``) values of ``key``, any order."""

    key: str
    expected: Sequence[str]
    entity: str = "person/user"
    as_of: str | None = None

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        path = f"{ctx}/entities/{self.entity}" + (f"?asOf={day(self.as_of)}" if self.as_of else "")
        r = api.get(path)
        assert r.status == 200, r.text
        got = sorted(a["value"] for a in r.json()["attributes"] if a["key"] == self.key)
        assert got == sorted(self.expected), f"{self.entity} {self.key}{' as of ' + self.as_of if self.as_of else ''}"


@dataclass(frozen=True)
class context(Step):  # noqa: N801
    """``POST /context``: the block holds each of ``contains`` and none of ``lacks``, and the
    texts of ``order`` in that order (each present)."""

    query: str
    contains: Sequence[str] = ()
    lacks: Sequence[str] = ()
    order: Sequence[str] = ()

    def run(self, api: Any, ctx: str, seen: dict[str, Any]) -> None:
        r = api.post(f"{ctx}/context", {"query": self.query})
        assert r.status == 200, r.text
        text = r.json()["context"]
        for part in self.contains:
            assert part in text, f"context {self.query!r}: {part!r} not in\n{text}"
        for part in self.lacks:
            assert part not in text, f"context {self.query!r}: {part!r} in\n{text}"
        for part in self.order:
            assert part in text, f"context {self.query!r}: {part!r} not in\n{text}"
        positions = [text.index(part) for part in self.order]
        assert positions == sorted(positions), f"context {self.query!r}: not in the order {list(self.order)}:\n{text}"

"""``[S1]``-style citation markers in a model reply.

A marker resolves only to a source retrieval returned (the numbered context lines of the
prompt); a marker naming anything else is removed from the reply and not cited. With
``suppress_markers`` both forms, ``[S1]`` and bare ``S1``, leave the reply while
``citations`` still lists every source the reply cited.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

MARKER = re.compile(r"\[S(\d+)\]")
BARE_MARKER = re.compile(r"(?<![\w\[])S(\d+)(?![\w\]])")
# A tail that may still grow into a marker: "[", "[S", "[S1" (held back while streaming).
_PARTIAL_TAIL = re.compile(r"\[(S\d*)?$")


@dataclass
class Resolved:
    reply: str
    cited: list[str]  # markers in order of first citation, e.g. ["S1", "S3"]


def resolve_markers(reply: str, sources: Mapping[str, Any], *, suppress: bool = False,
                    tidy: bool = True) -> Resolved:
    """Keep ``[Sn]`` markers naming a known source (``sources`` keyed ``"S1"``...) and drop
    the rest; with ``suppress`` drop known markers in both forms. A bare ``S5`` naming no
    source is ordinary text and stays."""
    cited: list[str] = []

    def note(marker: str) -> None:
        if marker not in cited:
            cited.append(marker)

    def bracketed(match: re.Match[str]) -> str:
        marker = f"S{match.group(1)}"
        if marker not in sources:
            return ""
        note(marker)
        return "" if suppress else match.group(0)

    def bare(match: re.Match[str]) -> str:
        marker = f"S{match.group(1)}"
        if marker not in sources:
            return match.group(0)
        note(marker)
        return ""

    text = MARKER.sub(bracketed, reply)
    if suppress:
        text = BARE_MARKER.sub(bare, text)
    return Resolved(_tidy(text) if tidy else text, cited)


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+([.,;:!?])", r"\1", text)
    text = re.sub(r"[ \t]{2,}", " ", text)
    return text.strip()


class MarkerStream:
    """Applies ``resolve_markers`` to a streamed reply, holding back a partial ``[S``
    marker until it resolves, so no frame ever shows a marker that is later removed."""

    def __init__(self, sources: Mapping[str, Any], *, suppress: bool = False):
        self.sources = sources
        self.suppress = suppress
        self.buffer = ""
        self.cited: list[str] = []

    def feed(self, delta: str) -> Iterator[str]:
        self.buffer += delta
        tail = _PARTIAL_TAIL.search(self.buffer)
        cut = tail.start() if tail else len(self.buffer)
        if self.suppress:
            # a bare "S" or "S1" at the very end may still be a bare marker
            bare_tail = re.search(r"(?<![\w\[])S\d*$", self.buffer[:cut])
            if bare_tail:
                cut = bare_tail.start()
        ready, self.buffer = self.buffer[:cut], self.buffer[cut:]
        if ready:
            yield from self._emit(ready)

    def close(self) -> Iterator[str]:
        if self.buffer:
            ready, self.buffer = self.buffer, ""
            yield from self._emit(ready)

    def _emit(self, text: str) -> Iterator[str]:
        resolved = resolve_markers(text, self.sources, suppress=self.suppress, tidy=False)
        for marker in resolved.cited:
            if marker not in self.cited:
                self.cited.append(marker)
        if resolved.reply:
            yield resolved.reply

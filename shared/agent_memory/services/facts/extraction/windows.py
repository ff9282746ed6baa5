"""One extraction call over a window of consecutive document chunks, split back per chunk.

The window prompt (``services/prompts/extraction.build_window_prompt``) asks the model to name, on every item, the
passage it comes from. ``split_by_passage`` turns that one answer into one ``ExtractionOutput``
per passage, so each fact is written with its own chunk as source (citations and
``positionPercent`` stay exact). A model that leaves ``passage`` out, or names one outside the
window, is not trusted blindly: the item goes to the passage whose text contains most of what it
states (its value, entity, object, verb...; the earliest on a tie), and to the window's first
passage when none contains any of it. An
entity is listed under every passage whose items use it, as a per-chunk call would list it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agent_memory.models.extraction import ExtractedEntity, ExtractionOutput
from agent_memory.services.facts.fact_kinds import FACT_KINDS


def split_by_passage(output: ExtractionOutput, passages: Sequence[str]) -> list[ExtractionOutput]:
    """``output`` of a window call -> one output per passage, in order, ``passage`` cleared."""
    lowered = [p.casefold() for p in passages]
    buckets: list[dict[str, list[Any]]] = [{k.field: [] for k in FACT_KINDS} for _ in passages]
    for kind in FACT_KINDS:
        for item in getattr(output, kind.field):
            index = _passage_of(item, kind.text_fields, lowered)
            buckets[index][kind.field].append(item.model_copy(update={"passage": None}))
    by_name = {e.name.casefold(): e for e in output.entities if e.name}
    for bucket in buckets:
        listed = {e.name.casefold() for e in bucket["entities"]}
        for kind in FACT_KINDS:
            for item in bucket[kind.field]:
                for ref in (name.casefold() for name in kind.names_in(item) if name):
                    if ref not in listed and ref in by_name:
                        bucket["entities"].append(_unplaced(by_name[ref]))
                        listed.add(ref)
    return [ExtractionOutput(**bucket) for bucket in buckets]


def _passage_of(item: Any, fields: tuple[str, ...], lowered: list[str]) -> int:
    named = item.passage
    if isinstance(named, int) and not isinstance(named, bool) and 0 <= named < len(lowered):
        return named
    needles = [n for n in ((getattr(item, f) or "").strip().casefold() for f in fields) if n]
    scores = [sum(needle in text for needle in needles) for text in lowered]
    best = max(scores, default=0)
    return scores.index(best) if best else 0


def _unplaced(entity: ExtractedEntity) -> ExtractedEntity:
    return entity.model_copy(update={"passage": None})

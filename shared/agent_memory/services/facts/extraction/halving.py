"""An extraction too large for one write, cut down to what one transaction holds.

A write commits its turn and every fact change in one transaction, which holds at most
``MAX_TRANSACT_OPS`` operations and ``TRANSACT_BATCH_BYTES``. A model turn that states more
keeps its first half (``halve``, with an uncertainty saying what was left out); a document
chunk or derived facts are committed in two halves instead (``halves``). Either way a claim
travels with the entities it names, so no half refers to an entity it does not write.
"""

from __future__ import annotations

from typing import Any

from agent_memory.kernel.ids import normalise_entity_name
from agent_memory.models.extraction import ExtractedEntity, ExtractedUncertainty, ExtractionOutput
from agent_memory.services.facts.fact_kinds import CLAIM_FIELDS, kind_of_claim

CLAIM_KINDS = CLAIM_FIELDS
TRUNCATED_ABOUT = "facts left out of this turn"


def claim_names(claim: Any) -> list[str]:
    """The entity names one claim refers to (its entities must be written with it)."""
    return kind_of_claim(claim).names_in(claim)


def mentioned_names(extraction: ExtractionOutput) -> list[str]:
    """Every entity name ``extraction`` uses, listed or named by a claim (what a write loads)."""
    names = [e.name for e in extraction.entities]
    names += [n for kind in CLAIM_KINDS for claim in getattr(extraction, kind) for n in claim_names(claim)]
    return [n for n in names if n]


def extraction_size(extraction: ExtractionOutput) -> int:
    return len(extraction.entities) + sum(len(getattr(extraction, kind)) for kind in CLAIM_KINDS)


def halve(current: ExtractionOutput, original: ExtractionOutput) -> ExtractionOutput:
    """The first half of ``current``'s claims with only the entities they name (entities
    no claim names are halved too), plus an uncertainty saying what was left out."""
    def half(items: list) -> list:
        return items[: len(items) // 2]

    claims = [(kind, item) for kind in CLAIM_KINDS if kind != "uncertainties"
              for item in half(getattr(current, kind))]
    claims += [("uncertainties", u) for u in current.uncertainties if u.about != TRUNCATED_ABOUT][:3]
    kept = _with_entities(claims, half(_free_entities(current)), current.entities)
    kept.uncertainties.append(ExtractedUncertainty(
        about=TRUNCATED_ABOUT,
        reason=f"this turn stated more facts than one write holds; kept {len(kept.attributes)} of "
               f"{len(original.attributes)} attributes and {len(kept.relations)} of {len(original.relations)} "
               "relations"))
    return kept


def halves(extraction: ExtractionOutput | None) -> tuple[ExtractionOutput, ExtractionOutput] | None:
    """An extraction in two halves, each with only the entities its claims name (unnamed
    entities are shared out too), or None when it cannot be split further."""
    if extraction is None:
        return None
    claims = [(kind, item) for kind in CLAIM_KINDS for item in getattr(extraction, kind)]
    free = _free_entities(extraction)
    if len(claims) + len(free) < 2:
        return None
    middle, free_middle = len(claims) // 2, len(free) // 2
    return (_with_entities(claims[:middle], free[:free_middle], extraction.entities),
            _with_entities(claims[middle:], free[free_middle:], extraction.entities))


def _with_entities(claims: list[tuple[str, Any]], free: list[ExtractedEntity],
                   entities: list[ExtractedEntity]) -> ExtractionOutput:
    """An extraction of ``claims``, the entities they name, and the unreferenced ``free`` ones."""
    named = {normalise_entity_name(n) for _, claim in claims for n in claim_names(claim)}
    out = ExtractionOutput(entities=[e for e in entities if normalise_entity_name(e.name) in named] + free)
    for kind, item in claims:
        getattr(out, kind).append(item)
    return out


def _free_entities(extraction: ExtractionOutput) -> list[ExtractedEntity]:
    """Entities no claim names (they still cost one insert each)."""
    named = {normalise_entity_name(n) for kind in CLAIM_KINDS for claim in getattr(extraction, kind)
             for n in claim_names(claim)}
    return [e for e in extraction.entities if normalise_entity_name(e.name) not in named]

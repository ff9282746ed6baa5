"""Caller-supplied facts (``infer: triples``) read as an ``ExtractionOutput``.

A triple is authoritative: no model call, and it is checked as a request field (a 422
problem naming ``triples[i].field``), never trusted to fit: entity names, keys and times
are held to the limits a model's extraction is held to.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import Unprocessable
from agent_memory.kernel.ids import MAX_ENTITY_NAME_BYTES, MAX_KEY_BYTES, entity_name_fits, key_fits
from agent_memory.models.extraction import (
    ExtractedAction,
    ExtractedAttribute,
    ExtractedEntity,
    ExtractedRelation,
    ExtractionOutput,
)
from agent_memory.models.requests import Triple

TRIPLES_PER_WRITE = 16  # openapi.yaml's maxItems: worst case 5 operations each (two entities, row, head, old row)


def triples_to_extraction(raw: list[dict[str, Any]]) -> ExtractionOutput:
    """Caller-supplied facts (``infer: triples``) as an extraction; 422 names a bad index."""
    out = ExtractionOutput()
    for i, item in enumerate(raw):
        where = f"triples[{i}]"
        try:
            triple = Triple.model_validate(item)
        except ValidationError as exc:
            first = exc.errors()[0]
            field = ".".join(str(p) for p in first["loc"])
            raise Unprocessable(f"{where}.{field}: {first['msg']}", field=f"{where}.{field}") from exc
        etype, name = _entity_ref(triple.entity, f"{where}.entity")
        if triple.key is not None and not key_fits(triple.key.strip()):
            raise Unprocessable(f"{where}.key: at most {MAX_KEY_BYTES} bytes", field=f"{where}.key")
        given = [k for k in ("value", "target", "verb") if getattr(triple, k) not in (None, "")]
        if len(given) > 1:
            raise Unprocessable(f"{where}: at most one of value, target or verb", field=where)
        if triple.confidence is not None and not 0 <= triple.confidence <= 1:
            raise Unprocessable(f"{where}.confidence: must be between 0 and 1", field=f"{where}.confidence")
        times = {}
        for key in ("occurred_at", "valid_from", "valid_until"):
            value = getattr(triple, key)
            if value is not None:
                try:
                    times[key] = timeutil.normalise(value)
                except ValueError as exc:
                    raise Unprocessable(f"{where}.{key}: must be RFC 3339", field=f"{where}.{key}") from exc
        category = triple.memory_category
        out.entities.append(ExtractedEntity(name=name, type=etype, category=category))
        if "value" in given:
            if not (triple.key or "").strip():
                raise Unprocessable(f"{where}.key: required with value", field=f"{where}.key")
            if not isinstance(triple.value, str | int | float | bool):
                raise Unprocessable(f"{where}.value: must be a string, number or boolean", field=f"{where}.value")
            out.attributes.append(ExtractedAttribute(
                entity=name, entity_type=etype, key=triple.key, value=str(triple.value), category=category,
                confidence=triple.confidence if triple.confidence is not None else 1.0,
                valid_from=times.get("valid_from"), valid_until=times.get("valid_until")))
        elif "target" in given:
            if not (triple.key or "").strip():
                raise Unprocessable(f"{where}.key: the relation label is required with target", field=f"{where}.key")
            ttype, tname = _entity_ref(triple.target, f"{where}.target")
            out.entities.append(ExtractedEntity(name=tname, type=ttype, category=category))
            out.relations.append(ExtractedRelation(
                subject=name, subject_type=etype, label=triple.key, object=tname, object_type=ttype,
                category=category, valid_from=times.get("valid_from"), valid_until=times.get("valid_until")))
        elif "verb" in given:
            out.actions.append(ExtractedAction(
                actor=name, actor_type=etype, verb=triple.verb, object=triple.object,
                occurred_at=times.get("occurred_at"), summary=triple.summary or
                " ".join(p for p in (name, triple.verb, triple.object or "") if p), category=category))
    return out


def _entity_ref(ref: Any, where: str) -> tuple[str, str]:
    if not isinstance(ref, dict):
        raise Unprocessable(f"{where}: must be an object with type and name", field=where)
    name, etype = ref.get("name"), ref.get("type")
    if not isinstance(name, str) or not name.strip():
        raise Unprocessable(f"{where}.name: required", field=f"{where}.name")
    if not isinstance(etype, str) or not etype.strip():
        raise Unprocessable(f"{where}.type: required", field=f"{where}.type")
    if not entity_name_fits(name):
        raise Unprocessable(f"{where}.name: at most {MAX_ENTITY_NAME_BYTES} bytes once normalised",
                            field=f"{where}.name")
    return etype, name.strip()

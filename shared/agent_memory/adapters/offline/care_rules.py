"""The offline provider's memory-care rules (docs/memory-care.md, "Offline rules"). Each reads
the prompt's data block (``rules/care_data``), the same input a real model gets.

**Reflection** (``ReflectionOutput``): the reflection lists what the evidence says, best first,
at most three lines ("Memory holds 2 items on <query>: ...; ..."); ``evidence`` is every id
shown; one conclusion per entity with two or more attribute lines in the evidence, key
``summary``, value its attributes joined ("job title: CTO; employer: Acme").

**Elaboration** (``ElaborationOutput``), for the target entity:
1. shared value: another entity with the same ``employer`` value (attribute), or the same
   ``employer``/``member``/``team`` relation object -> ``colleague``;
2. team and project: the target has a ``member``/``team`` relation to T and T ``owns`` P
   (or P ``owner``/``owned_by`` T) -> the target ``works_on`` P.
"""

from __future__ import annotations

from typing import Any

from agent_memory.models.care import Conclusion, ElaborationOutput, ProposedRelation, ReflectionOutput
from agent_memory.rules.care_data import read_data_block
from agent_memory.rules.vocabulary import normalise_label, normalise_value

SHARED_KEYS = ("employer",)
GROUP_LABELS = ("employer", "member", "team", "works_at", "works_for")
OWNS = ("owns", "responsible_for", "maintains")
OWNED = ("owner", "owned_by", "maintained_by")


def reflection_handler(system: str, user: str) -> ReflectionOutput:
    data = read_data_block(user)
    evidence: list[dict[str, Any]] = data.get("evidence") or []
    query = str(data.get("query") or "").strip()
    if not evidence:
        return ReflectionOutput(reflection="Nothing is known in memory about that.")
    shown = [str(e.get("text", "")).strip() for e in evidence[:3]]
    noun = "item" if len(evidence) == 1 else "items"
    reflection = f"Memory holds {len(evidence)} {noun} on {query!r}: " + "; ".join(s for s in shown if s) + "."
    by_entity: dict[str, list[dict[str, Any]]] = {}
    for e in evidence:
        if e.get("kind") == "attribute" and e.get("entity") and e.get("key") and e.get("key") != "summary":
            by_entity.setdefault(str(e["entity"]), []).append(e)
    conclusions = []
    for entity, rows in sorted(by_entity.items()):
        if len(rows) < 2:
            continue
        etype, _, name = entity.removeprefix("entity:").partition("/")
        value = "; ".join(f"{str(r['key']).replace('_', ' ')}: {r.get('value')}" for r in rows)
        conclusions.append(Conclusion(entity=name, entity_type=etype or "other", key="summary", value=value))
    return ReflectionOutput(reflection=reflection, evidence=[str(e.get("id")) for e in evidence],
                            conclusions=conclusions)


def elaboration_handler(system: str, user: str) -> ElaborationOutput:
    data = read_data_block(user)
    target = data.get("target")
    attrs = data.get("attributes") or []
    rels = [{**r, "label": normalise_label(str(r.get("label", "")))} for r in data.get("relations") or []]
    names = {e["id"]: e.get("name") or e["id"] for e in data.get("entities") or []}
    if not target:
        return ElaborationOutput()
    out: list[ProposedRelation] = []
    mine = {(a["key"], normalise_value(str(a["value"]))) for a in attrs if a.get("entity") == target
            and a.get("key") in SHARED_KEYS}
    for a in attrs:
        other = a.get("entity")
        if other != target and (a.get("key"), normalise_value(str(a.get("value")))) in mine:
            out.append(ProposedRelation(subject=target, label="colleague", object=other,
                                        rationale=f"both have {a['key']} {a['value']!r}"))
    groups = {r["object"] for r in rels if r.get("subject") == target and r["label"] in GROUP_LABELS}
    for r in rels:
        other = r.get("subject")
        if other != target and r["label"] in GROUP_LABELS and r.get("object") in groups:
            out.append(ProposedRelation(subject=target, label="colleague", object=other,
                                        rationale=f"both are {r['label']} of {names.get(r['object'], r['object'])}"))
    for r in rels:
        if r.get("subject") in groups and r["label"] in OWNS:
            project, team = r.get("object"), r.get("subject")
        elif r.get("object") in groups and r["label"] in OWNED:
            project, team = r.get("subject"), r.get("object")
        else:
            continue
        out.append(ProposedRelation(subject=target, label="works_on", object=project,
                                    rationale=f"{names.get(team, team)}, which the target belongs to, owns it"))
    return ElaborationOutput(relations=out)


def register_offline_care(model: Any) -> None:
    """Teach an ``OfflineLanguageModel`` the memory-care schemas."""
    model.register_structured(ReflectionOutput, reflection_handler)
    model.register_structured(ElaborationOutput, elaboration_handler)

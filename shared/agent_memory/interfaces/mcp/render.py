"""Tool results for the agent: short lines of text with the ids a follow-up call takes (the
structured content keeps the full JSON, ``jsonable``)."""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable
from typing import Any

from pydantic import BaseModel

from agent_memory.models.wire_base import WireModel

log = logging.getLogger(__name__)


def jsonable(value: Any) -> Any:
    if isinstance(value, WireModel):
        return value.to_wire()
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", by_alias=True)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    return value


def _get(d: dict[str, Any], snake: str, default: Any = None) -> Any:
    """A field by its snake_case name or its camelCase spelling (the API uses both)."""
    if snake in d:
        return d[snake]
    head, *rest = snake.split("_")
    return d.get(head + "".join(p.title() for p in rest), default)


def _extraction_lines(x: dict[str, Any] | None) -> list[str]:
    if not x:
        return []
    lines = [f"+ {_get(a, 'entity_id')} {a['key']} = {a['value']} [{a['id']}]" for a in x.get("attributes", [])]
    lines += [f"+ {r['subject']} {r['label']} {r['object']}" for r in x.get("relations", [])]
    lines += [f"+ {a['actor']} {a['verb']}: {a['summary']}" for a in x.get("actions", [])]
    lines += [f"+ instruction ({i['label']}): {i['description']} [{i['id']}]" for i in x.get("instructions", [])]
    lines += [f"~ corrected {_get(c, 'entity_id')} {c['key']}: {_get(c, 'old_value')} -> "
              f"{_get(c, 'new_value') or '(no longer true)'}" for c in x.get("corrections", [])]
    lines += [f"? unsure about {u['about']}: {u['reason']}" for u in x.get("uncertainties", [])]
    return lines


def _fact_line(f: dict[str, Any]) -> str:
    if "key" in f and "value" in f:
        line = f"{f.get('entity') or _get(f, 'entity_id')} {f['key']} = {f['value']}"
    elif "label" in f and "subject" in f:
        line = f"{f['subject']} {f['label']} {f['object']}"
    elif "verb" in f:
        line = f"{f['actor']} {f['verb']}: {f['summary']}"
    elif "description" in f:
        line = f"instruction ({f['label']}): {f['description']}"
    else:
        line = f.get("text") or f.get("name") or ""
    since, until = _get(f, "valid_from"), _get(f, "valid_until")
    if since or until:
        line += f" ({since or '(start)'} .. {until or 'now'})"
    return f"{line} [{f['id']}]" if f.get("id") else line


def _text_remember(r: dict[str, Any]) -> str:
    lines = [f"Stored turn {_get(r, 'turn_id')} in session {_get(r, 'session_id')}."
             if _get(r, "turn_id") else f"Nothing stored ({r.get('mode')}); session {_get(r, 'session_id')}."]
    extracted = _extraction_lines(r.get("extraction"))
    lines += extracted or ["Nothing extracted."]
    return "\n".join(lines)


def _text_hits(r: dict[str, Any]) -> str:
    hits = r.get("hits", [])
    if not hits:
        return "Nothing found."
    lines = []
    for n, h in enumerate(hits, 1):
        when = f" {_get(h, 'occurred_at')}" if _get(h, "occurred_at") else ""
        lines.append(f"{n}. [{h.get('kind') or h.get('source')}{when}] {h['text']} (score {h['score']:.2f}, "
                     f"id {h['id']})")
    return "\n".join(lines)


def _text_context(r: dict[str, Any]) -> str:
    sources = [f"{s['marker']} {s.get('kind') or s.get('source')} {s['id']}" for s in r.get("sources", [])]
    return (r.get("context") or "(no memory for this query)") + ("\n\nSources: " + "; ".join(sources)
                                                                 if sources else "")


def _text_chat(r: dict[str, Any]) -> str:
    lines = [r["reply"], "", f"session {_get(r, 'session_id')} (pass it as session_id to continue), "
             f"trace {_get(r, 'trace_id')}"]
    lines += [f"{c['marker']} {c['kind']} {c['id']}: {c['snippet']}" for c in r.get("citations", [])]
    lines += _extraction_lines(_get(r, "memory_updates"))
    return "\n".join(lines)


def _text_state(r: dict[str, Any]) -> str:
    lines = []
    for name in ("identity", "knowledge", "context"):
        category = r.get(name) or {}
        rows = [_fact_line(f) for kind in ("attributes", "relations", "actions") for f in category.get(kind, [])]
        lines.append(f"{name}:" + ("" if rows else " (empty)"))
        lines += [f"  {row}" for row in rows]
    if r.get("instructions"):
        lines.append("instructions:")
        lines += [f"  {i['label']}: {i['description']} [{i['id']}]" for i in r["instructions"]]
    if r.get("unknowns"):
        lines.append("open questions:")
        lines += [f"  {u['about']} ({u['reason']})" for u in r["unknowns"]]
    cut = [k for k, v in (r.get("truncated") or {}).items() if v]
    if cut:
        lines.append(f"(truncated: {', '.join(cut)}; raise limit)")
    return "\n".join(lines)


def _text_entity(r: dict[str, Any]) -> str:
    e = r.get("entity") or {}
    head = f"{e.get('name')} ({_get(e, 'entity_type')}, {e.get('id')})"
    if _get(r, "as_of"):
        head += f" as of {_get(r, 'as_of')}"
    rows = [f"  {_fact_line(f)}" for f in [*r.get("attributes", []), *r.get("relations", [])]]
    return "\n".join([head, *(rows or ["  (no current attributes or relations)"])])


def _text_history(r: dict[str, Any]) -> str:
    rows = [f"{_get(a, 'valid_from') or '(start)'} .. {_get(a, 'valid_until') or 'now'}: {a['value']} [{a['id']}]"
            for a in r.get("history", [])]
    return "\n".join(rows) or "No values."


def _text_forgotten(r: dict[str, Any]) -> str:
    dry = r.get("deleted") == 0 and r.get("items")
    lines = [("Would delete:" if dry else f"Deleted {r.get('deleted', 0)}.")]
    lines += [f"- {i.get('kind', 'item')} {i['text']} [{i['id']}]" for i in r.get("items", [])]
    lines += [f"- entity {e['name']} (nothing left about it) [{e['id']}]" for e in r.get("entities", [])]
    return "\n".join(lines)


def _text_corrected(r: dict[str, Any]) -> str:
    lines = [f"~ {_get(c, 'entity_id')} {c['key']}: {_get(c, 'old_value')} -> {_get(c, 'new_value')}"
             for c in r.get("corrections", [])]
    return "\n".join([*lines, f"Now: {_fact_line(r['fact'])}"])


def _text_reflect(r: dict[str, Any]) -> str:
    lines = [r.get("reflection", ""), "evidence: " + (", ".join(r.get("evidence", [])) or "(none)")]
    lines += [f"stored: {_fact_line(a)}" for a in _get(r, "persisted_attributes", [])]
    return "\n".join(lines)


def _text_consolidate(r: dict[str, Any]) -> str:
    head = (f"{'Would create' if _get(r, 'dry_run') else 'Created'} {r.get('created', 0)}, updated "
            f"{r.get('updated', 0)}, superseded {r.get('superseded', 0)}.")
    rows = [f"{o['kind']} {_get(o, 'entity_id')} {o['key']} = {o['value']} (stated {_get(o, 'proof_count')} "
            f"times{', ' + _get(o, 'observation_id') if _get(o, 'observation_id') else ''})"
            for o in r.get("outcomes", [])]
    return "\n".join([head, *rows])


def _text_fsck(r: dict[str, Any]) -> str:
    lines = [f"Checked {r.get('total', 0)} facts."]
    for check in ("contradictions", "duplicates", "injection"):
        findings = r.get(check, [])
        lines.append(f"{check}: {len(findings)}")
        lines += [f"  {f['reason']} [{', '.join(f['ids'])}]" for f in findings]
    return "\n".join(lines)


def _text_thread_append(r: dict[str, Any]) -> str:
    return (f"Appended turn {_get(r, 'turn_index')} ({_get(r, 'turn_id')}) to thread {_get(r, 'thread_id')}.")


def _text_thread_context(r: dict[str, Any]) -> str:
    rows = [f"#{_get(i, 'turn_index')} [{i['origin']}] {i.get('text') or '(text not inline)'} "
            f"({_get(i, 'turn_id')})" for i in r.get("items", [])]
    return "\n".join(rows) or "No turns."


_TEXT: dict[str, Callable[[dict[str, Any]], str]] = {
    "remember": _text_remember, "recall": _text_hits, "get_context": _text_context, "chat": _text_chat,
    "state": _text_state, "entity": _text_entity, "history": _text_history, "forget": _text_forgotten,
    "correct_fact": _text_corrected, "delete_fact": _text_forgotten, "reflect": _text_reflect,
    "consolidate": _text_consolidate, "fsck": _text_fsck, "thread_append": _text_thread_append,
    "thread_context": _text_thread_context,
}


def result_text(tool: str, result: Any) -> str:
    """A tool result as short lines of text (the structured content keeps the full JSON)."""
    render = _TEXT.get(tool)
    if render is not None and isinstance(result, dict):
        try:
            return render(result)
        except (KeyError, TypeError, AttributeError):
            log.debug("no text rendering of this %s result; JSON instead", tool, exc_info=True)
    return json.dumps(result, ensure_ascii=False)

"""Memory as text for people, shared by the CLI's commands (``cli_client``) and the terminal
chat's ``/state``: scopes, values side by side across scopes, the state snapshot."""

from __future__ import annotations

from typing import Any

from agent_memory.models import wire


def state_lines(state: wire.State) -> list[str]:
    """The snapshot for people, by category (``state`` and chat's ``/state``)."""
    out: list[str] = []
    categories: list[wire.StateCategory] = [getattr(state, name) for name in ("identity", "knowledge", "context")]
    scoped = side_by_side([((a.entity, a.key), a.scopes) for c in categories for a in c.attributes]
                          + [((r.subject, "rel", r.label), r.scopes) for c in categories for r in c.relations])
    for name, category in zip(("identity", "knowledge", "context"), categories, strict=True):
        rows = [f"  {a.entity} {a.key} = {a.value}{scope_note(scoped, (a.entity, a.key), a.scopes)}  [{a.id}]"
                for a in category.attributes]
        rows += [f"  {r.subject} {r.label} {r.object}{scope_note(scoped, (r.subject, 'rel', r.label), r.scopes)}"
                 f"  [{r.id}]" for r in category.relations]
        rows += [f"  {a.actor} {a.verb}: {a.summary}  [{a.id}]" for a in category.actions]
        out.append(f"{name}:" if rows else f"{name}: (empty)")
        out.extend(rows)
    if state.instructions:
        out.append("instructions:")
        out.extend(f"  {i.label}: {i.description}" for i in state.instructions)
    if state.unknowns:
        out.append("unknowns:")
        out.extend(f"  {u.about} ({u.reason})" for u in state.unknowns)
    truncated = [name for name, cut in state.truncated.model_dump().items() if cut]
    if truncated:
        out.append(f"(truncated: {', '.join(truncated)}; raise --limit)")
    return out


def scope_text(scopes: list[list[str]]) -> str:
    """A DNF scope for people: ``unscoped``, ``org/acme/user/alice``, ``a + b | c`` (clauses
    OR-ed with ``|``, the paths of one clause AND-ed with ``+``)."""
    return " | ".join(" + ".join(clause) for clause in scopes) or "unscoped"


def side_by_side(slots: list[tuple[Any, list[list[str]]]]) -> set[Any]:
    """The slots (an entity's key, a subject's label, a history chain) holding values of more
    than one scope: a value supersedes only one of its own scope, so there values coexist,
    and each is shown with its scope."""
    seen: dict[Any, set[str]] = {}
    for slot, scopes in slots:
        seen.setdefault(slot, set()).add(scope_text(scopes))
    return {slot for slot, found in seen.items() if len(found) > 1}


def scope_note(scoped: set[Any], slot: Any, scopes: list[list[str]]) -> str:
    return f"  (scope: {scope_text(scopes)})" if slot in scoped else ""

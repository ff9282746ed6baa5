"""Record ids (``<kind>_<ULID>``: sortable by creation time) and entity natural keys."""

from __future__ import annotations

import re
import unicodedata

from ulid import ULID

KINDS = {"turn", "sess", "attr", "rel", "act", "instr", "unc", "doc", "chunk", "trace", "thr", "tturn", "key", "cache", "audit"}

ENTITY_TYPES = (
    "person", "organisation", "project", "location", "topic", "product",
    "policy", "concept", "event", "agent", "service", "other",
)

_TYPE_ALIASES = {
    "organization": "organisation", "org": "organisation", "company": "organisation",
    "employer": "organisation", "place": "location", "city": "location", "country": "location",
    "user": "person", "people": "person", "human": "person", "tool": "service",
}

_CONTEXT_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")


def new_id(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown id kind {kind}")
    return f"{kind}_{str(ULID()).lower()}"


def valid_context_id(value: str) -> bool:
    return bool(_CONTEXT_RE.match(value or ""))


def normalise_entity_type(value: str) -> str:
    t = (value or "").strip().lower()
    t = _TYPE_ALIASES.get(t, t)
    return t if t in ENTITY_TYPES else "other"


def normalise_entity_name(value: str) -> str:
    """Lower-case, accents folded, whitespace collapsed to ``-``; ``/`` and ``:`` removed."""
    text = unicodedata.normalize("NFKD", value or "")
    text = "".join(c for c in text if not unicodedata.combining(c)).lower().strip()
    text = re.sub(r"[/:]+", " ", text)
    text = re.sub(r"[^\w\s.'-]", "", text)
    return re.sub(r"\s+", "-", text).strip("-")


# Names and keys become parts of record keys (an entity's sort key is ``<type>/<name>``;
# a fact's current-index key joins entity id, key and row id), which a store caps at
# 1,024 bytes. These bounds keep every such key well inside that.
MAX_ENTITY_NAME_BYTES = 256  # an entity name, normalised
MAX_KEY_BYTES = 128  # an attribute key or relation label


def entity_name_fits(name: str) -> bool:
    return len(normalise_entity_name(name).encode("utf-8")) <= MAX_ENTITY_NAME_BYTES


def key_fits(key: str) -> bool:
    return len((key or "").encode("utf-8")) <= MAX_KEY_BYTES


def entity_id(entity_type: str, name: str) -> str:
    return f"entity:{normalise_entity_type(entity_type)}/{normalise_entity_name(name)}"


def split_entity_id(eid: str) -> tuple[str, str]:
    body = eid.removeprefix("entity:")
    etype, _, name = body.partition("/")
    return etype, name

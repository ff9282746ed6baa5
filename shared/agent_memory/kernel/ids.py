"""Record ids (``<kind>_<ULID>``: sortable by creation time) and entity natural keys."""

from __future__ import annotations

import os
import re
import threading
import time
import unicodedata

KINDS = {"turn", "sess", "attr", "rel", "act", "instr", "unc", "doc", "chunk", "trace", "thr", "tturn", "key", "cache", "audit",
         "job", "rcpt"}

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


_CROCKFORD = "0123456789abcdefghjkmnpqrstvwxyz"
_ulid_lock = threading.Lock()
_ulid_last = (0, 0)  # (milliseconds, randomness) of the last ULID made here


def new_ulid() -> str:
    """A ULID in lower case: 48 bits of Unix milliseconds and 80 random bits, 26 Crockford
    base-32 characters, so ids sort by creation time. Monotonic within a process: in the same
    millisecond (or if the clock steps back) the randomness of the last one plus one. (Written
    here rather than imported: python-ulid's import, importlib.metadata included, cost every
    function 10-20 ms of cold start.)"""
    global _ulid_last
    with _ulid_lock:
        ms = time.time_ns() // 1_000_000
        last_ms, last_rand = _ulid_last
        if ms <= last_ms:
            ms, rand = last_ms, last_rand + 1
            if rand >> 80:  # 2^80 ids in one millisecond: move to the next
                ms, rand = ms + 1, int.from_bytes(os.urandom(10), "big")
        else:
            rand = int.from_bytes(os.urandom(10), "big")
        _ulid_last = (ms, rand)
    value = (ms << 80) | rand
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def ulid_ms(identifier: str) -> int | None:
    """The Unix milliseconds a ``<kind>_<ulid>`` id was minted at; None if it is not one."""
    body = identifier.rsplit("_", 1)[-1].lower()
    if len(body) != 26 or any(c not in _CROCKFORD for c in body):
        return None
    value = 0
    for c in body[:10]:
        value = value * 32 + _CROCKFORD.index(c)
    return value  # the first 10 characters are bits 129..80: two zero bits, then the 48-bit time


def ulid_floor(ms: int) -> str:
    """The smallest ULID minted at Unix milliseconds ``ms`` (a key-range bound: every id made
    at or after ``ms`` sorts at or after ``<kind>_<ulid_floor(ms)>``)."""
    value = max(0, ms) << 80
    return "".join(_CROCKFORD[(value >> shift) & 31] for shift in range(125, -1, -5))


def new_id(kind: str) -> str:
    if kind not in KINDS:
        raise ValueError(f"unknown id kind {kind}")
    return f"{kind}_{new_ulid()}"


def valid_context_id(value: str) -> bool:
    return bool(_CONTEXT_RE.fullmatch(value or ""))


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


# An id named in a request's path (a session, document, trace, fact, thread, principal...),
# percent-decoded: at most this many UTF-8 bytes, valid UTF-8, no control characters. A stored key holds
# an id as sent (percent-encoded: up to three bytes for each), beside a prefix, a context id
# and a row id, inside the store's 1,024-byte sort key. A principal's id is quoted once more
# in its grants' key, hence its smaller bound. openapi.yaml states both.
MAX_PATH_ID_BYTES = 256
MAX_PRINCIPAL_ID_BYTES = 128
_PATH_ID_LIMITS = {"principal_id": MAX_PRINCIPAL_ID_BYTES}


def path_id_problem(name: str, raw: str) -> str | None:
    """Why the path parameter ``name`` (``raw``: as sent, percent-encoded) is not a valid id,
    or ``None``."""
    from urllib.parse import unquote

    limit = _PATH_ID_LIMITS.get(name, MAX_PATH_ID_BYTES)
    if len(raw) > 3 * limit:
        return f"{name} is longer than {limit} bytes"
    try:
        value = unquote(raw, errors="strict")
        value.encode("utf-8")
    except UnicodeError:
        return f"{name} is not valid UTF-8 text"
    return id_problem(name, value, limit)


def id_problem(name: str, value: str, limit: int = MAX_PATH_ID_BYTES) -> str | None:
    """Why ``value`` (decoded) is not a valid caller-named id, or ``None``: the rule of a path
    id, applied to an id a body names (a session a write creates under the caller's name)."""
    size = len(value.encode("utf-8", errors="surrogatepass"))
    if size == 0 or size > limit:
        return f"{name} must be 1 to {limit} bytes (UTF-8) long"
    if any(unicodedata.category(c) in ("Cc", "Cs") for c in value):
        return f"{name} must not contain control characters"
    return None


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

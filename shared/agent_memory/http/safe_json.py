"""Parsing JSON from callers with bounds, so bad input is a 400 and never a crash.

The standard decoder recurses once per nesting level (a body nested about a thousand
deep raises ``RecursionError``), turns a 5,000-digit integer into a ``ValueError`` from
the int-to-string guard, reads ``NaN``/``Infinity`` (not JSON) as floats, and reads
``1e999`` as infinity. ``loads`` checks all of these while parsing and raises
``JsonLimitExceeded`` naming the limit; every request body and every JSON form field
goes through it.
"""

from __future__ import annotations

import json
import math
from typing import Any

MAX_DEPTH = 64  # arrays/objects inside one another
MAX_INTEGER_DIGITS = 20  # an int64 has 19; a JSON integer longer than this is not an id or a count


class JsonLimitExceeded(ValueError):
    """Valid-looking JSON that passes a parse-time bound (``limit`` names which; ``path``
    is where, dotted, when known)."""

    def __init__(self, message: str, limit: str, path: str | None = None):
        super().__init__(message)
        self.limit = limit
        self.path = path


def _integer(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INTEGER_DIGITS:
        raise JsonLimitExceeded(f"an integer has more than {MAX_INTEGER_DIGITS} digits", "integer digits")
    return int(text)


def _check(value: Any) -> None:
    """Depth and finite numbers, without recursion (the path is built only for an error)."""
    stack: list[tuple[Any, int, tuple[Any, ...]]] = [(value, 1, ())]
    while stack:
        node, depth, path = stack.pop()
        if isinstance(node, float):
            if not math.isfinite(node):
                where = ".".join(str(p) for p in path) or None
                raise JsonLimitExceeded(f"{where or 'a value'}: {node} is not a finite JSON number",
                                        "finite numbers", where)
            continue
        if isinstance(node, dict):
            children = node.items()
        elif isinstance(node, list):
            children = enumerate(node)
        else:
            continue
        if depth > MAX_DEPTH:
            raise JsonLimitExceeded(f"JSON is nested more than {MAX_DEPTH} levels deep", "nesting depth")
        stack.extend((child, depth + 1, (*path, key)) for key, child in children)


def loads(data: str | bytes | bytearray) -> Any:
    """``json.loads`` with the bounds above (``JsonLimitExceeded``; ``json.JSONDecodeError``
    and ``UnicodeDecodeError`` for malformed input, as usual). ``NaN``, ``Infinity`` and
    numbers too large for a float are read, then refused with where they were."""
    try:
        value = json.loads(data, parse_int=_integer)
    except RecursionError:
        raise JsonLimitExceeded(f"JSON is nested more than {MAX_DEPTH} levels deep", "nesting depth") from None
    _check(value)
    return value

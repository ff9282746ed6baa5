"""Opaque paging cursors: base64url of ``{context, collection, last key}`` signed with
HMAC-SHA256 under the stack's cursor secret. A cursor from another context or collection,
or with a bad signature, is rejected with 400."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable

from agent_memory.kernel.errors import InvalidCursor

# The HMAC key of paging cursors, read when a page is served (``config.Settings.cursor_secret``:
# Secrets Manager on Lambda), so building a service reads no secret.
CursorSecret = Callable[[], bytes]


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _secret(secret: bytes | CursorSecret) -> bytes:
    """The key itself; a ``CursorSecret`` is called only when a cursor is made or checked, so
    a first page that is also the last reads no secret (on Lambda: no Secrets Manager call)."""
    return secret() if callable(secret) else secret


def encode(secret: bytes | CursorSecret, context_id: str, collection: str,
           last_key: dict[str, str] | None) -> str | None:
    if last_key is None:
        return None
    secret = _secret(secret)
    payload = json.dumps({"c": context_id, "k": collection, "l": last_key}, separators=(",", ":"),
                         sort_keys=True).encode()
    sig = hmac.new(secret, payload, hashlib.sha256).digest()[:16]
    return f"{_b64(payload)}.{_b64(sig)}"


def decode(secret: bytes | CursorSecret, context_id: str, collection: str,
           cursor: str | None) -> dict[str, str] | None:
    if cursor in (None, ""):
        return None
    secret = _secret(secret)
    try:
        body, sig = cursor.split(".", 1)
        payload = _unb64(body)
        expected = hmac.new(secret, payload, hashlib.sha256).digest()[:16]
        if not hmac.compare_digest(expected, _unb64(sig)):
            raise ValueError("bad signature")
        data = json.loads(payload)
    except (ValueError, TypeError, json.JSONDecodeError) as exc:
        raise InvalidCursor("cursor is malformed or was not issued by this service", field="cursor") from exc
    if data.get("c") != context_id or data.get("k") != collection or not isinstance(data.get("l"), dict):
        raise InvalidCursor("cursor belongs to another context or collection", field="cursor")
    return data["l"]

"""Opaque paging cursors: ``{context, collection, last key}`` under deterministic authenticated
encryption (SIV over HMAC-SHA256) with two keys derived from the stack's cursor secret. A
cursor from another context or collection, altered, or not issued by the service is a 400.

Why encrypted, not only signed: the last key a page covered may be the key of a row the reader
may not read (a page cut by the scan budget ends past rows the filter dropped), and a signed
cursor is readable by whoever holds it. Encrypted, a cursor carries no id, key or count a
reader could decode (docs/decisions.md, "Cursors").

The construction (stdlib only, nothing on the cold start): ``tag = HMAC(k_mac, payload)[:16]``
is both the authenticator and the synthetic IV; the payload is XORed with the keystream
``HMAC(k_enc, tag || counter)``; the cursor is base64url of ``tag || ciphertext``. Decoding
recomputes the tag over the decrypted payload and compares in constant time. Deterministic:
the same page gives the same cursor (equality is all it shows).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from collections.abc import Callable
from functools import lru_cache

from agent_memory.kernel.errors import InvalidCursor

# The key of paging cursors, read when a page is served (``runtime.Runtime.cursor_secret``:
# Secrets Manager on Lambda), so building a service reads no secret.
CursorSecret = Callable[[], bytes]

TAG_BYTES = 16
_BLOCK = hashlib.sha256().digest_size


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def _secret(secret: bytes | CursorSecret) -> bytes:
    """The key itself; a ``CursorSecret`` is called only when a cursor is made or checked, so
    a first page that is also the last reads no secret (on Lambda: no Secrets Manager call)."""
    return secret() if callable(secret) else secret


@lru_cache(maxsize=8)
def _keys(secret: bytes) -> tuple[bytes, bytes]:
    """(encryption key, authentication key), derived from the cursor secret by domain."""
    def derive(label: bytes) -> bytes:
        return hmac.new(secret, b"agent-memory cursor " + label, hashlib.sha256).digest()

    return derive(b"encryption"), derive(b"authentication")


def _keystream(key: bytes, tag: bytes, length: int) -> bytes:
    blocks = (hmac.new(key, tag + i.to_bytes(4, "big"), hashlib.sha256).digest()
              for i in range(-(-length // _BLOCK)))
    return b"".join(blocks)[:length]


def _xor(a: bytes, b: bytes) -> bytes:
    return bytes(x ^ y for x, y in zip(a, b, strict=True))


def seal(secret: bytes, payload: bytes) -> str:
    """``payload`` encrypted and authenticated under ``secret`` (base64url)."""
    k_enc, k_mac = _keys(secret)
    tag = hmac.new(k_mac, payload, hashlib.sha256).digest()[:TAG_BYTES]
    return _b64(tag + _xor(payload, _keystream(k_enc, tag, len(payload))))


def unseal(secret: bytes, token: str) -> bytes:
    """The payload ``seal`` made; ``ValueError`` for anything it did not make under ``secret``."""
    raw = _unb64(token)
    if len(raw) <= TAG_BYTES or _b64(raw) != token:  # canonical base64url only: one spelling
        raise ValueError("malformed")
    k_enc, k_mac = _keys(secret)
    tag, body = raw[:TAG_BYTES], raw[TAG_BYTES:]
    payload = _xor(body, _keystream(k_enc, tag, len(body)))
    if not hmac.compare_digest(tag, hmac.new(k_mac, payload, hashlib.sha256).digest()[:TAG_BYTES]):
        raise ValueError("bad tag")
    return payload


def encode(secret: bytes | CursorSecret, context_id: str, collection: str,
           last_key: dict[str, str] | None) -> str | None:
    if last_key is None:
        return None
    payload = json.dumps({"c": context_id, "k": collection, "l": last_key}, separators=(",", ":"),
                         sort_keys=True).encode()
    return seal(_secret(secret), payload)


def decode(secret: bytes | CursorSecret, context_id: str, collection: str,
           cursor: str | None) -> dict[str, str] | None:
    if cursor in (None, ""):
        return None
    try:
        data = json.loads(unseal(_secret(secret), cursor))
        if not isinstance(data, dict):
            raise ValueError("not an object")
    except (ValueError, TypeError, UnicodeDecodeError) as exc:  # binascii.Error, JSONDecodeError are ValueErrors
        raise InvalidCursor("cursor is malformed or was not issued by this service", field="cursor") from exc
    if data.get("c") != context_id or data.get("k") != collection or not isinstance(data.get("l"), dict):
        raise InvalidCursor("cursor belongs to another context or collection", field="cursor")
    return data["l"]

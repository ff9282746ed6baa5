"""Paging cursors (``kernel.cursor``): encrypted and authenticated under keys derived from the
cursor secret, so a cursor carries nothing its holder can read, and any change is a 400."""

from __future__ import annotations

import base64

import pytest

from agent_memory.kernel import cursor
from agent_memory.kernel.errors import InvalidCursor

SECRET = b"unit-test-cursor-secret"
KEY = {"pk": "c#acme#default#threads", "sk": "t-hidden-thread-of-team-b"}


def test_a_cursor_round_trips_and_is_deterministic():
    token = cursor.encode(SECRET, "acme", "threads:default", KEY)
    assert token == cursor.encode(SECRET, "acme", "threads:default", KEY)
    assert cursor.decode(SECRET, "acme", "threads:default", token) == KEY
    assert cursor.decode(lambda: SECRET, "acme", "threads:default", token) == KEY
    assert cursor.encode(SECRET, "acme", "threads:default", None) is None
    assert cursor.decode(SECRET, "acme", "threads:default", None) is None


def test_a_cursor_shows_no_key_context_or_collection():
    token = cursor.encode(SECRET, "acme", "threads:default", KEY)
    raw = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
    for text in ("t-hidden-thread-of-team-b", "acme", "threads", "default", '"sk"'):
        assert text.encode() not in raw and text not in token
    other = cursor.encode(SECRET, "acme", "threads:default", {**KEY, "sk": "t-hidden-thread-of-team-c"})
    assert other != token and len(other) == len(token)


@pytest.mark.parametrize("context, collection, secret", [
    ("other", "threads:default", SECRET), ("acme", "sessions:default", SECRET),
    ("acme", "threads:default", b"another-secret")])
def test_a_cursor_is_refused_elsewhere(context, collection, secret):
    token = cursor.encode(SECRET, "acme", "threads:default", KEY)
    with pytest.raises(InvalidCursor):
        cursor.decode(secret, context, collection, token)


def test_any_changed_character_is_refused():
    token = cursor.encode(SECRET, "acme", "threads:default", KEY)
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"
    for at in range(len(token)):
        for swap in (alphabet[(alphabet.index(token[at]) + 1) % 64], alphabet[(alphabet.index(token[at]) + 32) % 64]):
            with pytest.raises(InvalidCursor):
                cursor.decode(SECRET, "acme", "threads:default", token[:at] + swap + token[at + 1:])
    for bad in (token[:-4], token + "A", "forged.cursor", "", "AAAA", token[:22]):
        if bad:
            with pytest.raises(InvalidCursor):
                cursor.decode(SECRET, "acme", "threads:default", bad)

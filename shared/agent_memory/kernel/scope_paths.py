"""The shape of a scope path (``org/acme/user/alice``) that stored items are filtered by.

Below the access rules (``access.scopes``: selectors, regions and coverage, which hands these on),
so the stored item's filter attributes (``kernel.stored_item``) need nothing above the kernel.
"""

from __future__ import annotations


def ancestors(path: str) -> list[str]:
    """``a/b/c`` -> ``["a", "a/b", "a/b/c"]``: the region paths that would cover ``path``."""
    parts = path.split("/")
    return ["/".join(parts[: i + 1]) for i in range(len(parts))]

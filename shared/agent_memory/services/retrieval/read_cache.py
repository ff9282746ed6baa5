"""Decoded tier-1 store reads kept while the store's generation is unchanged (``ReadCache``)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    pass


class ReadCache:
    """Decoded tier-1 store reads (entities by key, a partition's fact units), kept while the
    store's ``generation()`` token is unchanged, so a question about the same people as the
    last one reads and decodes nothing again. Stores without the token are read every time.
    Entries carry the token they were read under: one read under an older token never
    serves a newer one, whichever thread stored it."""

    MAX_ITEMS = 4096

    def __init__(self) -> None:
        self.items: dict[Any, tuple[Any, Any]] = {}

    @staticmethod
    def token(store: Any) -> Any:
        generation = getattr(store, "generation", None)
        return generation() if callable(generation) else None

    def get(self, token: Any, key: Any) -> Any:
        if token is None:
            return None
        hit = self.items.get(key)
        return hit[1] if hit is not None and hit[0] == token else None

    def put(self, token: Any, key: Any, value: Any) -> None:
        if token is None:
            return
        if len(self.items) >= self.MAX_ITEMS:
            self.items.clear()
        self.items[key] = (token, value)


MISSING = object()  # a cached "no such record"

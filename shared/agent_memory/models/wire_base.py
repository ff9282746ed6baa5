"""``WireModel``: the base of every response model (``models.wire``, ``models.extraction``).

camelCase on the wire (``alias``), snake_case attributes, and readable by either name
(``state.identity["attributes"]``, ``correction["oldValue"]``) as the spec's examples do.
Imports pydantic only: the light client install depends on it.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """camelCase on the wire, snake_case in Python, subscriptable by either name."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="allow")

    def __getitem__(self, name: str) -> Any:
        field = _field_by_alias(type(self)).get(name, name)
        if field in type(self).model_fields:
            return getattr(self, field)
        extra = self.__pydantic_extra__ or {}
        if name in extra:
            return extra[name]
        raise KeyError(name)

    def get(self, name: str, default: Any = None) -> Any:
        try:
            return self[name]
        except KeyError:
            return default

    def to_wire(self) -> dict[str, Any]:
        """The camelCase JSON dict (every key present, nulls kept)."""
        return self.model_dump(by_alias=True, mode="json")


def _field_by_alias(model: type[BaseModel]) -> dict[str, str]:
    return {(f.alias or name): name for name, f in model.model_fields.items()}

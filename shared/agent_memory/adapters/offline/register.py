"""``register_offline_extractor``: what the offline provider teaches an ``OfflineLanguageModel``,
and ``build``, the provider's entry in ``adapters.models.registry``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from agent_memory.adapters.models.offline import OfflineLanguageModel
from agent_memory.adapters.offline.extractor import extraction_handler
from agent_memory.adapters.offline.reply import offline_chat_responder
from agent_memory.models.extraction import ExtractionOutput
from agent_memory.ports import LanguageModel

if TYPE_CHECKING:
    from agent_memory.adapters.models.registry import ProviderOptions


def register_offline_extractor(model: Any) -> None:
    """Teach an ``OfflineLanguageModel`` to answer ``structured(schema=ExtractionOutput)``,
    to acknowledge a chat statement from that same parse (``reply.py``), and the memory-care
    schemas (``care.py``)."""
    model.register_structured(ExtractionOutput, extraction_handler)
    model.register_responder(offline_chat_responder)
    from agent_memory.adapters.offline.care_rules import register_offline_care

    register_offline_care(model)


def build(model: str, options: ProviderOptions) -> LanguageModel:
    """The ``offline`` provider's entry (``adapters.models.registry.PROVIDERS``): the model
    under its full name, taught the extractor, the chat reply and the memory-care schemas."""
    offline = OfflineLanguageModel(name=options.name)
    register_offline_extractor(offline)
    return offline

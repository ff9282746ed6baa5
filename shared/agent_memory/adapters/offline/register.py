"""``register_offline_extractor``: what the offline provider teaches an ``OfflineLanguageModel``."""

from __future__ import annotations

from typing import Any

from agent_memory.adapters.offline.extractor import extraction_handler
from agent_memory.adapters.offline.reply import offline_chat_responder
from agent_memory.models.extraction import ExtractionOutput


def register_offline_extractor(model: Any) -> None:
    """Teach an ``OfflineLanguageModel`` to answer ``structured(schema=ExtractionOutput)``,
    to acknowledge a chat statement from that same parse (``reply.py``), and the memory-care
    schemas (``care.py``)."""
    model.register_structured(ExtractionOutput, extraction_handler)
    model.register_responder(offline_chat_responder)
    from agent_memory.adapters.offline.care import register_offline_care

    register_offline_care(model)

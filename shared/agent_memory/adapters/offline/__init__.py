"""The offline model provider: deterministic English patterns instead of a model (tests, CI,
keyless local runs). ``register_offline_extractor`` teaches an ``OfflineLanguageModel``
(``adapters/models/offline.py``) to answer extraction calls.

- ``extractor``: the patterns (the table in its docstring).
- ``words``: its word lists (data).
- ``reply``: the chat reply to a statement, acknowledged from the extractor's parse.

The turn comes from the extraction prompt's JSON payload (``agent_memory.rules.turn_data``).
"""

from agent_memory.adapters.offline.extractor import (
    extraction_handler,
    instruction_label,
    is_question,
    offline_extract,
)
from agent_memory.adapters.offline.register import register_offline_extractor

__all__ = ["extraction_handler", "instruction_label", "is_question", "offline_extract", "register_offline_extractor"]

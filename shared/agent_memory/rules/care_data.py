"""The data block of the memory-care prompts (reflect, elaborate): one fenced JSON object
after a ``# Data`` heading, the only part of the prompt that carries stored text, so a model
(and the offline provider, which reads it back) sees memory as data, never as instructions."""

from __future__ import annotations

import json
import re
from typing import Any

_BLOCK = re.compile(r"# Data\n```json\n(.*?)\n```", re.DOTALL)


def data_block(payload: dict[str, Any]) -> str:
    return "# Data\n```json\n" + json.dumps(payload, ensure_ascii=False, indent=1) + "\n```"


def read_data_block(text: str) -> dict[str, Any]:
    found = _BLOCK.search(text or "")
    if not found:
        return {}
    try:
        parsed = json.loads(found.group(1))
    except json.JSONDecodeError:
        return {}
    return parsed if isinstance(parsed, dict) else {}

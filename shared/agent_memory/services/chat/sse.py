"""Server-sent events for ``stream: true`` (docs/decisions.md, "SSE"): ``event: delta`` frames
(``{"delta": ...}``), one ``event: done`` with the full ChatResponseJson, or
``event: error`` with a problem document, then ``data: [DONE]``."""

from __future__ import annotations

import json
from typing import Any


def frame(event: str, data: Any) -> str:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n"


DONE = "data: [DONE]\n\n"

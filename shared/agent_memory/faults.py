"""Fault points for crash tests: ``AGENT_MEMORY_FAULT=<name>`` makes the process exit at once
(``os._exit``: no cleanup, no flush, as a kill would) when it reaches the named point.

Named points:
- ``projection-after-commit``: a projected record is committed, its search-index write not
  yet made (``services.operations.projector.ProjectingRecordStore``).
"""

from __future__ import annotations

import os

ENV = "AGENT_MEMORY_FAULT"
EXIT_CODE = 86


def point(name: str) -> None:
    if os.environ.get(ENV) == name:
        os._exit(EXIT_CODE)

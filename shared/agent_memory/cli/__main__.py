"""``python -m agent_memory.cli``: the same as the ``agent-memory`` console script."""

import sys

from agent_memory.cli import main

sys.exit(main())

"""``python -m agent_memory.interfaces.cli``: the same as the ``agent-memory`` console script."""

import sys

from agent_memory.interfaces.cli import main

sys.exit(main())

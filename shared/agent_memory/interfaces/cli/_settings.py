"""Settings for an operator command, with its flags applied."""

from __future__ import annotations

import argparse
import os
import sys


def settings_for(args: argparse.Namespace):
    """Settings for a command, with its flags applied; ``None`` after printing a clear
    configuration error (the command then exits 2)."""
    from agent_memory.config import load_settings
    from agent_memory.kernel.errors import ConfigurationError

    if getattr(args, "data_dir", None):
        os.environ["AGENT_MEMORY_DATA_DIR"] = args.data_dir
    if getattr(args, "store", None):
        os.environ["AGENT_MEMORY_STORE"] = args.store
    try:
        return load_settings()
    except ConfigurationError as exc:
        print(f"agent-memory: configuration error: {exc}", file=sys.stderr)
        return None

"""Ranking loads numpy; the handlers that only sometimes rank must not pay for it at cold start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def test_recipes_and_the_threads_service_import_without_numpy():
    code = ("import sys, agent_memory.ranking.recipes, agent_memory.services.conversation.threads; "
            "assert 'numpy' not in sys.modules, 'numpy loaded at import'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)


def test_the_documents_handler_imports_without_numpy():
    """Only POST /documents/query ranks; uploads and reads must not load numpy at cold start."""
    code = ("import sys; sys.path.insert(0, 'functions/documents'); import app; "
            "assert 'numpy' not in sys.modules, 'numpy loaded at import'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=REPO)

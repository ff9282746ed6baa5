"""The README's SDK quick start runs as printed (the URL pointed at the test server)."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

README = Path(__file__).resolve().parents[2] / "README.md"


def quickstart() -> str:
    section = README.read_text(encoding="utf-8").split("## Python SDK", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_quickstart_runs(env_server, model, capsys):
    code = quickstart()
    assert len(code.strip().splitlines()) <= 20
    namespace: dict = {}
    exec(compile(code.replace("http://127.0.0.1:8080", env_server), "README.md", "exec"), namespace)
    asyncio.run(namespace["main"]())
    out = capsys.readouterr().out
    assert "[S1]" in out or "Berlin" in out

"""``agent-memory export`` / ``import`` and the SDK's ``export_context`` / ``import_context``
against the local server: a context written out and read back into another answers the same
state, a second import writes nothing, and the progress goes to stderr."""

from __future__ import annotations

import asyncio
import json

import pytest

from agent_memory.client import AgentMemory, ApiError
from agent_memory.client.aio import AsyncAgentMemory
from agent_memory.interfaces import cli


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_the_cli_exports_a_context_and_imports_it_into_another(env_server, capsys, tmp_path):
    assert run(capsys, "remember", "--context", "acme", "I live in London.")[0] == 0
    assert run(capsys, "remember", "--context", "acme", "I moved to Berlin.")[0] == 0
    path = tmp_path / "acme.ndjson"
    code, out, err = run(capsys, "export", "--context", "acme", "-o", str(path))
    assert code == 0 and out == "" and "export acme" in err and "done" in err
    lines = path.read_text().splitlines()
    assert json.loads(lines[0])["type"] == "header" and json.loads(lines[-1])["type"] == "end"
    code, out, err = run(capsys, "import", "--context", "copy", str(path))
    assert code == 0 and "written" in out and "import acme.ndjson" in err
    code, out, _ = run(capsys, "import", "--context", "copy", str(path), "--json")
    assert json.loads(out)["written"] == 0  # the same file twice
    code, out, _ = run(capsys, "history", "--context", "copy", "person/user", "location")
    assert [line.rsplit(": ", 1)[-1] for line in out.splitlines()] == ["London", "Berlin"]
    bad = tmp_path / "bad.ndjson"
    bad.write_text(lines[0] + "\n{oops\n" + lines[-1] + "\n")
    code, _, err = run(capsys, "import", "--context", "copy", str(bad))
    assert code == 1 and "line 2" in err


def test_the_sdks_stream_the_export_and_import_it(env_server):
    with AgentMemory("acme") as memory:
        memory.remember("I like tea.")
        lines = list(memory.export_context())
        assert json.loads(lines[-1])["records"] == len(lines) - 2
        with AgentMemory("other") as other:
            result = other.import_context(lines)
            assert result.written == result.records and result.by_type["attribute"] == 1
            assert other.import_context("\n".join(lines)).unchanged == result.records
            with pytest.raises(ApiError) as refused:
                other.import_context(b'{"type":"header","format":"agent-memory-export","version":9}\n')
            assert refused.value.status == 400 and refused.value.code == "export_version_unsupported"


def test_the_async_sdk_streams_the_export(env_server):
    async def main() -> None:
        async with AsyncAgentMemory("acme") as memory:
            await memory.remember("I like coffee.")
            lines = [line async for line in memory.export_context()]
            result = await memory.import_context(lines)
            assert result.unchanged == result.records and result.written == 0

    asyncio.run(main())


def test_the_cli_uses_the_job_form_when_asked_and_for_a_service_elsewhere(env_server, capsys, tmp_path):
    from agent_memory.interfaces.cli_client import _use_job

    assert run(capsys, "remember", "--context", "acme", "I live in London.")[0] == 0
    path = tmp_path / "acme.ndjson"
    code, out, err = run(capsys, "export", "--context", "acme", "-o", str(path), "--via", "job")
    assert code == 0 and "export acme (job)" in err
    inline = tmp_path / "inline.ndjson"
    assert run(capsys, "export", "--context", "acme", "-o", str(inline))[0] == 0
    assert path.read_text().splitlines()[1:-1] == inline.read_text().splitlines()[1:-1]
    code, out, _ = run(capsys, "import", "--context", "copy", str(path), "--via", "job", "--json")
    assert code == 0 and json.loads(out)["written"] == json.loads(out)["records"] > 0
    bad = tmp_path / "bad.ndjson"
    lines = path.read_text().splitlines()
    bad.write_text(lines[0] + "\n{oops\n" + lines[-1] + "\n")
    code, _, err = run(capsys, "import", "--context", "copy", str(bad), "--via", "job")
    assert code == 1 and "line 2" in err  # the job's problem, as the inline route answers it
    # auto: stream to this machine, the job form to a deployed stack
    assert not _use_job(AgentMemory("acme", "http://127.0.0.1:8080"), "auto")
    assert _use_job(AgentMemory("acme", "https://abc.execute-api.eu-west-1.amazonaws.com"), "auto")
    assert not _use_job(AgentMemory("acme", "https://abc.execute-api.eu-west-1.amazonaws.com"), "stream")

"""Long CLI commands show progress on stderr: `documents upload` (polling ingestion through
the SDK) and `reindex`; plain lines when stderr is not a terminal, a bar when it is."""

from __future__ import annotations

import io
import subprocess
import sys

import pytest

from agent_memory.interfaces import cli


class FakeTty(io.StringIO):
    def isatty(self) -> bool:
        return True


HANDBOOK = "# Handbook\n\nThe office is in Porto.\n\n## Hours\n\nWe open at nine.\n"


def test_documents_upload_waits_for_ingestion_with_plain_progress_lines(env_server, tmp_path, capsys):
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK)
    code = cli.main(["documents", "upload", "--context", "acme", str(path), "--label", "ops"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert out.startswith("document doc_") and ": ready, " in out and "chunks" in out
    for line in err.splitlines():
        assert line.startswith("ingest handbook.md: ") and "\x1b[" not in line
    code = cli.main(["documents", "upload", "--context", "acme", str(path), "--json"])
    out, _ = capsys.readouterr()
    assert code == 0 and '"deduplicated": true' in out


def test_documents_upload_draws_a_bar_on_a_terminal(env_server, tmp_path, capsys, monkeypatch):
    """The upload is answered as still ingesting and the first poll too, so the bar follows
    chunks_done to the end; stderr is a terminal."""
    pytest.importorskip("rich")
    from agent_memory.client.sync import Documents
    from agent_memory.models import wire

    real_upload, real_get = Documents.upload, Documents.get
    answers = iter(["ingesting"])

    def upload(self, *a, **kw):
        accepted = real_upload(self, *a, **kw)
        return wire.UploadDocumentResponse.model_validate({**accepted.to_wire(), "status": "ingesting"})

    def get(self, document_id):
        doc = real_get(self, document_id)
        status = next(answers, None)
        return doc.model_copy(update={"status": status, "chunks_done": 0}) if status else doc

    monkeypatch.setattr(Documents, "upload", upload)
    monkeypatch.setattr(Documents, "get", get)
    tty = FakeTty()
    monkeypatch.setattr(sys, "stderr", tty)
    path = tmp_path / "handbook.md"
    path.write_text(HANDBOOK)
    code = cli.main(["documents", "upload", "--context", "acme", str(path)])
    out, _ = capsys.readouterr()
    assert code == 0 and ": ready" in out
    drawn = tty.getvalue()
    assert "ingest handbook.md" in drawn and "━" in drawn and "\x1b[" in drawn and "chunks" in drawn


def test_documents_upload_of_a_missing_file(env_server, capsys):
    code = cli.main(["documents", "upload", "--context", "acme", "nope.md"])
    assert code == 2 and "no such file" in capsys.readouterr().err


def test_reindex_prints_progress_lines_when_not_a_terminal(tmp_path, monkeypatch, capsys):
    data = tmp_path / "d"
    env = {"AGENT_MEMORY_DATA_DIR": str(data), "PATH": "", "HOME": str(tmp_path)}
    write = ("from agent_memory.runtime import get_runtime;"
             "from agent_memory.models.requests import WriteFactsRequest as W;"
             "from agent_memory.access.request_context import RequestContext as R;"
             "get_runtime().facts.write(R(context_id='acme', principal='p', admin=True), W(text='I live in Oslo.'))")
    subprocess.run([sys.executable, "-c", write], env=env, check=True, cwd=tmp_path)
    monkeypatch.setenv("AGENT_MEMORY_DATA_DIR", str(data))
    code = cli.main(["reindex", "--context", "acme", "--data-dir", str(data)])
    out, err = capsys.readouterr()
    assert code == 0 and out.startswith("acme: ")
    records = int(out.split(": ")[1].split()[0])
    assert f"reindex acme: {records} records done" in err.splitlines()

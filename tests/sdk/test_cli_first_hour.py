"""The first hour at the command line: chat opens with a banner and keeps its slash commands
out of memory; remember says what it extracted or that nothing was new; an unreachable
service names --url and AGENT_MEMORY_URL; a busy port names the setting in use (PORT= under
make, --port otherwise); keys and documents answer scripts with --json; documents list, query
and delete besides upload."""

from __future__ import annotations

import builtins
import json
import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agent_memory.interfaces import cli
from tests.conftest import REPO
from tests.sdk.test_cli_plain import _run, assert_one_line_error


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_chat_opens_with_a_banner_and_never_stores_its_commands(env_server, memory, capsys, monkeypatch):
    feed = iter(["/help", "/session", "/state", "/nonsense", "I live in London.", "/state", "//etc is a folder",
                 "/quit", "never read"])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(feed))
    code, out, _ = run(capsys, "chat", "--context", "acme")
    assert code == 0
    lines = out.splitlines()
    assert lines[0] == f"agent-memory chat: context acme at {env_server}, a new session."
    assert "/help lists commands" in lines[1] and "/quit or Ctrl-D" in lines[1]
    for command in ("/help", "/state", "/session", "/quit"):
        assert any(line.strip().startswith(command) for line in lines[2:8]), (command, lines)
    assert "no session yet" in out and "unknown command /nonsense: /help lists them" in out
    # /state before any turn: empty; after "I live in London.": the fact
    first, second = out.split("identity:", 2)[1:]
    assert "London" not in first.split("Agent: ")[0] and "entity:person/user location = London" in second
    assert out.count("Agent: ") == 2
    session_id = out.rsplit("--session ", 1)[1].split(")")[0]
    contents = [t.content for t in memory.sessions.turns(session_id) if t.role == "user"]
    assert contents == ["I live in London.", "/etc is a folder"]  # // sends the rest, one /


def test_chat_banner_names_a_resumed_session_and_the_partition(env_server, memory, capsys, monkeypatch):
    session = memory.sessions.create()
    monkeypatch.setattr(builtins, "input", lambda prompt="": "/quit")
    code, out, _ = run(capsys, "chat", "--context", "acme", "--session", session.id, "--partition", "p1")
    assert code == 0
    assert out.splitlines()[0] == f"agent-memory chat: context acme at {env_server}, partition p1, session {session.id}."


def test_remember_prints_what_it_extracted_or_nothing_new(env_server, capsys):
    code, out, _ = run(capsys, "remember", "--context", "acme", "I live in London.")
    assert code == 0 and "+ entity:person/user location = London" in out and "nothing new" not in out
    code, out, _ = run(capsys, "remember", "--context", "acme", "Hello there.")
    assert code == 0 and out.startswith("stored turn ")
    assert out.splitlines()[1].strip().startswith("nothing new")


def test_an_unreachable_service_names_url_and_the_variable(env_server, capsys, monkeypatch):
    code, _, err = run(capsys, "state", "--context", "acme", "--url", "http://127.0.0.1:9")
    assert code == 2 and "cannot reach http://127.0.0.1:9 (--url)" in err
    assert "--url URL or AGENT_MEMORY_URL=URL" in err and "make serve" in err
    monkeypatch.setenv("AGENT_MEMORY_URL", "http://127.0.0.1:9")
    code, _, err = run(capsys, "recall", "--context", "acme", "anything")
    assert code == 2 and "cannot reach http://127.0.0.1:9 (AGENT_MEMORY_URL)" in err and "--url" in err


@pytest.fixture
def busy_port():
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        yield busy.getsockname()[1]


def test_a_busy_port_names_the_setting_in_use(busy_port, tmp_path) -> None:
    out = _run("serve", "--port", str(busy_port), "--data-dir", str(tmp_path))
    assert_one_line_error(out, "already in use", "pick another with --port")
    out = _run("serve", "--data-dir", str(tmp_path), env={"PORT": str(busy_port)})
    assert_one_line_error(out, f"127.0.0.1:{busy_port}", "pick another with PORT= or --port")
    out = _run("serve", "--data-dir", str(tmp_path), env={"PORT": str(busy_port), "AGENT_MEMORY_PORT_SETTING": "make"})
    assert_one_line_error(out, "pick another with PORT= (PORT=8081 make serve)")
    assert "--port" not in out.stderr
    out = _run("serve", "--data-dir", str(tmp_path), env={"PORT": "eighty"})
    assert_one_line_error(out, "PORT='eighty' is not a port number")


@pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")
def test_make_serve_on_a_busy_port_says_port_equals(busy_port, tmp_path) -> None:
    # The Makefile's own serve recipe, its venv stood in by this interpreter (nothing installed).
    shutil.copy(REPO / "Makefile", tmp_path / "Makefile")
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    bin_dir = tmp_path / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").symlink_to(sys.executable)
    script = bin_dir / "agent-memory"
    script.write_text(f"#!/bin/sh\nexec {sys.executable} -c 'import sys; from agent_memory.interfaces.cli import main; "
                      "sys.exit(main(sys.argv[1:]))' \"$@\"\n")
    script.chmod(0o755)
    (tmp_path / ".venv" / ".installed").touch()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MEMORY_", "MAKE", "PORT"))}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "shared"), str(REPO), env.get("PYTHONPATH", "")])
    out = subprocess.run(["make", "-s", "serve", f"PORT={busy_port}", f"AGENT_MEMORY_DATA_DIR={tmp_path / 'data'}"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode != 0
    line = next(line for line in out.stderr.splitlines() if line.startswith("agent-memory: "))
    assert f"cannot listen on 127.0.0.1:{busy_port}" in line and "PORT= (PORT=8081 make serve)" in line
    assert "--port" not in line


def test_keys_answer_scripts_with_json(tmp_path, capsys) -> None:
    data = str(tmp_path / "data")
    code, out, err = run(capsys, "keys", "create", "--principal", "alice", "--name", "ci", "--ttl-seconds", "3600",
                         "--context", "acme", "--data-dir", data, "--json")
    assert code == 0
    created = json.loads(out)  # stdout is the JSON alone; the note on keys goes to stderr
    assert created["principal"] == "alice" and created["name"] == "ci" and created["key"]
    assert created["keyId"] and created["validUntil"] and created["grant"]["contexts"] == ["acme"]
    code, out, _ = run(capsys, "keys", "list", "--data-dir", data, "--json")
    listed = json.loads(out)
    assert [k["keyId"] for k in listed] == [created["keyId"]]
    assert "key" not in listed[0] and created["key"] not in out  # never the key itself
    code, out, _ = run(capsys, "keys", "revoke", created["keyId"], "--data-dir", data, "--json")
    assert code == 0 and json.loads(out) == {"keyId": created["keyId"], "revoked": True}
    code, out, _ = run(capsys, "keys", "revoke", created["keyId"], "--data-dir", data, "--json")
    assert code == 1 and json.loads(out) == {"keyId": created["keyId"], "revoked": False}


def test_scopes_status_and_backfill_answer_scripts_with_json(tmp_path, capsys) -> None:
    data = str(tmp_path / "data")
    code, out, _ = run(capsys, "scopes", "backfill", "--data-dir", data, "--json")
    done = json.loads(out)  # one object, no progress lines before it
    assert code == 0 and done["complete"] is True and done["finishedAt"]
    code, out, _ = run(capsys, "scopes", "status", "--data-dir", data, "--json")
    assert json.loads(out) == done


def test_documents_list_query_and_delete(env_server, capsys, tmp_path: Path) -> None:
    path = tmp_path / "refunds.md"
    path.write_text("# Refunds\n\nRefunds are paid within 14 days of a return, to the card used.\n")
    code, out, _ = run(capsys, "documents", "upload", "--context", "acme", str(path), "--json")
    doc_id = json.loads(out)["id"]
    code, out, _ = run(capsys, "documents", "list", "--context", "acme")
    assert code == 0 and out.startswith(f"{doc_id}  ready  markdown") and out.rstrip().endswith("Refunds")
    assert f"{path.stat().st_size} bytes" in out
    code, out, _ = run(capsys, "documents", "list", "--context", "acme", "--json")
    assert [d["id"] for d in json.loads(out)] == [doc_id]
    code, out, _ = run(capsys, "documents", "query", "--context", "acme", "How long do refunds take?", "-k", "3")
    assert code == 0 and out.startswith(" 1. Refunds [" + doc_id) and "14 days" in out
    code, out, _ = run(capsys, "documents", "query", "--context", "acme", "refunds", "--json")
    hits = json.loads(out)["results"]
    assert hits[0]["document"]["id"] == doc_id and "14 days" in hits[0]["chunk"]["text"]
    code, out, _ = run(capsys, "documents", "delete", "--context", "acme", doc_id)
    assert code == 0 and out.strip() == f"deleted {doc_id}"
    code, out, _ = run(capsys, "documents", "list", "--context", "acme")
    assert out.strip() == "(no documents)"
    code, _, err = run(capsys, "documents", "delete", "--context", "acme", doc_id)
    assert code == 1 and "404" in err

"""The CLI commands that talk to a server go through the SDK: remember, recall, state,
history (human-readable, or --json) and chat, against the local server; no httpx INFO
lines reach the terminal."""

from __future__ import annotations

import builtins
import json
import logging

from agent_memory.interfaces import cli


def run(capsys, *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out = capsys.readouterr()
    return code, out.out, out.err


def test_operator_commands_print_text_or_json(env_server, capsys, caplog):
    caplog.set_level(logging.DEBUG)
    code, out, _ = run(capsys, "remember", "--context", "acme", "I live in London.")
    assert code == 0 and "+ entity:person/user location = London" in out
    code, out, _ = run(capsys, "remember", "--context", "acme", "I moved to Berlin.")
    assert "~ entity:person/user location: London -> Berlin" in out
    code, out, _ = run(capsys, "recall", "--context", "acme", "Where do I live?", "-k", "3")
    assert code == 0 and out.startswith(" 1. [attribute") and "Berlin" in out.splitlines()[0]
    code, out, _ = run(capsys, "state", "--context", "acme")
    assert "identity:" in out and "entity:person/user location = Berlin" in out
    code, out, _ = run(capsys, "history", "--context", "acme", "person/user", "location")
    lines = out.splitlines()
    assert len(lines) == 2 and lines[0].endswith(": London") and lines[1].endswith(": Berlin")
    code, out, _ = run(capsys, "history", "--context", "acme", "person/user", "location", "--json")
    assert [row["value"] for row in json.loads(out)] == ["London", "Berlin"]
    code, out, _ = run(capsys, "state", "--context", "acme", "--json")
    assert set(json.loads(out)) >= {"identity", "knowledge", "context", "instructions", "unknowns"}
    assert not [r for r in caplog.records if r.name.startswith(("httpx", "httpcore")) and r.levelno < logging.WARNING]


def test_errors_and_an_unreachable_service(env_server, capsys, monkeypatch):
    code, _, err = run(capsys, "history", "--context", "acme", "person/nobody", "location")
    assert code == 1 and "404" in err
    code, _, err = run(capsys, "state", "--context", "acme", "--url", "http://127.0.0.1:9")
    assert code == 2 and "cannot reach http://127.0.0.1:9" in err


def test_chat_command_runs_the_repl_over_the_sdk(env_server, model, capsys, monkeypatch):
    feed = iter(["I live in London.", "Where do I live?", "exit"])
    monkeypatch.setattr(builtins, "input", lambda prompt="": next(feed))
    code, out, _ = run(capsys, "chat", "--context", "acme")
    assert code == 0 and out.count("Agent: ") == 2 and "London" in out.split("Agent: ")[2]
    assert "resume with --session sess_" in out


def test_fact_commands_show_correct_and_delete_by_id(env_server, capsys):
    code, out, _ = run(capsys, "remember", "--context", "acme", "I live in London.")
    fact_id = out.split("[", 1)[1].split("]", 1)[0]
    assert fact_id.startswith("attr_")
    code, out, _ = run(capsys, "fact", "show", "--context", "acme", fact_id)
    assert code == 0 and out.strip() == f"entity:person/user location = London  [{fact_id}]"
    code, out, _ = run(capsys, "fact", "correct", "--context", "acme", fact_id, "Leeds", "--note", "typo")
    assert code == 0 and "~ entity:person/user location: London -> Leeds" in out
    new_id = out.rsplit("[", 1)[1].split("]", 1)[0]
    code, out, _ = run(capsys, "fact", "show", "--context", "acme", fact_id)
    assert f"(superseded by {new_id})" in out
    code, out, _ = run(capsys, "fact", "delete", "--context", "acme", new_id)
    assert code == 0 and "Leeds" in out
    code, _, err = run(capsys, "fact", "show", "--context", "acme", new_id)
    assert code == 1 and "404" in err
    code, out, _ = run(capsys, "state", "--context", "acme")
    assert "Leeds" not in out


def test_values_side_by_side_in_two_scopes_show_their_scope(env_server, memory, capsys):
    # The README's example: a session scoped to org/acme/user/alice. Its Berlin supersedes only
    # a location of that scope, so it is current beside the unscoped Madrid, and both say so.
    run(capsys, "remember", "--context", "acme", "I live in London.")
    run(capsys, "remember", "--context", "acme", "I moved to Madrid.")
    session = memory.sessions.create(scopes=["org/acme/user/alice"])
    memory.chat("I moved to Berlin last month.", session_id=session.id)
    code, out, _ = run(capsys, "state", "--context", "acme")
    assert code == 0
    assert "location = Madrid  (scope: unscoped)" in out
    assert "location = Berlin  (scope: org/acme/user/alice)" in out
    state = memory.state()
    assert sorted((a.value, a.scopes) for a in state.identity.attributes if a.key == "location") == [
        ("Berlin", [["org/acme/user/alice"]]), ("Madrid", [])]
    code, out, _ = run(capsys, "history", "--context", "acme", "person/user", "location")
    assert sorted(line.split(": ", 1)[1] for line in out.splitlines()) == [  # "last month": Berlin is oldest
        "Berlin  (scope: org/acme/user/alice)", "London  (scope: unscoped)", "Madrid  (scope: unscoped)"]
    code, out, _ = run(capsys, "fact", "show", "--context", "acme",
                       next(a.id for a in state.identity.attributes if a.value == "Berlin"))
    assert "(scope: org/acme/user/alice)" in out
    # one scope only: nothing to tell apart, so no scope is printed
    code, out, _ = run(capsys, "remember", "--context", "acme", "I like hiking.")
    code, out, _ = run(capsys, "state", "--context", "acme")
    assert "likes = hiking  [" in out

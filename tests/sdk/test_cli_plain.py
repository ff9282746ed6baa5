"""The ``agent-memory`` command speaks plainly: plain-text help with a description for every
subcommand and option; errors (a busy port, a missing extra, a bad config, Ctrl-C) are one
line on stderr and a non-zero exit, never a traceback; libraries' INFO lines stay quiet
unless ``--verbose``."""

from __future__ import annotations

import argparse
import os
import re
import signal
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest

from agent_memory.interfaces import cli
from tests.conftest import REPO


def _parsers(parser: argparse.ArgumentParser, path: str = "agent-memory"
             ) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield from _parsers(child, f"{path} {name}")


def test_every_subcommand_and_option_is_described() -> None:
    undescribed, no_help = [], []
    for path, parser in _parsers(cli.build_parser()):
        if not (parser.description or "").strip():
            undescribed.append(path)
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction | argparse._SubParsersAction):
                continue  # a subcommand's help line is checked as its parser's description
            if not (action.help or "").strip() or action.help == argparse.SUPPRESS:
                no_help.append(f"{path} {'/'.join(action.option_strings) or action.dest}")
    assert not undescribed, undescribed
    assert not no_help, no_help


def _run(*args: str, env: dict[str, str] | None = None, stdin: str = "", prelude: str = "",
         timeout: float = 120) -> subprocess.CompletedProcess[str]:
    """``agent-memory ARGS`` in a fresh interpreter (``prelude`` runs first)."""
    code = f"{prelude}\nimport sys\nfrom agent_memory.interfaces.cli import main\nsys.exit(main(sys.argv[1:]))"
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MEMORY_", "OPENAI_", "LOG_LEVEL"))}
    return subprocess.run([sys.executable, "-c", code, *args], input=stdin, capture_output=True, text=True,
                          timeout=timeout, env={**base, **(env or {})}, cwd=REPO)


def assert_one_line_error(out: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert out.returncode != 0, out
    assert "Traceback" not in out.stderr, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("agent-memory: "), out.stderr
    for needle in needles:
        assert needle in lines[0], lines[0]


def test_help_is_plain_text(capsys) -> None:
    for path, _ in _parsers(cli.build_parser()):
        with pytest.raises(SystemExit) as exited:
            cli.main([*path.split()[1:], "--help"])
        assert exited.value.code == 0
        out = capsys.readouterr().out
        assert out.startswith(f"usage: {path}"), path
        for markup in ("``", ":func:", ":class:", "cli_client", "agent_memory.", "interfaces"):
            assert markup not in out, (path, markup)
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    top = capsys.readouterr().out
    assert "A memory service for LLM agents" in top and "serve" in top and "--verbose" in top


def test_a_busy_port_is_one_line(tmp_path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        out = _run("serve", "--port", str(port), "--data-dir", str(tmp_path))
    assert_one_line_error(out, f"cannot listen on 127.0.0.1:{port}", "already in use", "--port")


def test_a_bad_config_is_one_line(tmp_path) -> None:
    config = tmp_path / "agent-memory.yaml"
    config.write_text("models: [extraction\nlimits: {}\n")
    out = _run("serve", "--port", "0", "--data-dir", str(tmp_path), env={"AGENT_MEMORY_CONFIG": str(config)})
    assert_one_line_error(out, "configuration error", "invalid YAML at line")
    config.write_text("models:\n  extraction: nope\n")
    out = _run("reindex", "--data-dir", str(tmp_path), env={"AGENT_MEMORY_CONFIG": str(config)})
    assert_one_line_error(out, "configuration error", "models.extraction")


@pytest.mark.parametrize(("module", "args", "extra"), [
    ("uvicorn", ["serve", "--port", "0"], "server"),
    ("mcp", ["mcp", "--context", "acme"], "mcp"),
])
def test_a_missing_extra_is_one_line_naming_an_install_that_works(module, args, extra, tmp_path) -> None:
    if args[0] == "serve":
        args = [*args, "--data-dir", str(tmp_path)]
    out = _run(*args, prelude=f"import sys; sys.modules[{module!r}] = None")
    assert_one_line_error(out, "extra")
    assert "pip install 'agent-memory[" not in out.stderr  # no package index has it
    assert f"[{extra}]" in out.stderr or "make install" in out.stderr


def test_an_unexpected_failure_is_one_line_unless_verbose(monkeypatch, capsys) -> None:
    from agent_memory.interfaces.cli import keys

    def boom(args):
        raise RuntimeError("the disk\nis full")

    monkeypatch.setattr(keys, "run", boom)  # keys.add_parser binds run when main builds the parser
    assert cli.main(["keys", "list", "--data-dir", "/nonexistent"]) == 1
    err = capsys.readouterr().err
    assert err.strip() == "agent-memory: RuntimeError: the disk is full (--verbose shows where)"
    with pytest.raises(RuntimeError):
        cli.main(["keys", "list", "--verbose"])


def test_libraries_info_lines_are_quiet_unless_verbose(tmp_path) -> None:
    """`serve` prints its own two lines; faiss' loader and the like only with --verbose."""
    def startup(*flags: str) -> str:
        proc = subprocess.Popen([sys.executable, "-X", "faulthandler", "-m", "agent_memory.interfaces.cli", "serve",
                                 "--port", "0", "--data-dir", str(tmp_path), *flags], cwd=REPO, stdout=subprocess.DEVNULL,
                                stderr=subprocess.PIPE, text=True,
                                env={k: v for k, v in os.environ.items()
                                     if not k.startswith(("AGENT_MEMORY_", "OPENAI_", "LOG_LEVEL"))})
        lines = []
        try:
            for line in proc.stderr:
                lines.append(line)
                if "memory inspector:" in line:
                    break
        finally:
            proc.send_signal(signal.SIGINT)
            try:
                rest = proc.communicate(timeout=60)[1]
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGABRT)  # faulthandler prints every thread's stack
                raise AssertionError("serve did not stop on Ctrl-C:\n" + proc.communicate(timeout=30)[1][-8000:]) from None
        assert "Traceback" not in rest, rest  # Ctrl-C stops it quietly
        return "".join(lines)

    quiet = startup()
    assert [line.split(" INFO agent_memory: ")[1].split(" ")[0] for line in quiet.splitlines()] == [
        "agent-memory", "memory"], quiet
    assert " INFO " in startup("--verbose")


@pytest.fixture
def chat_env(server: str) -> dict[str, str]:
    return {"AGENT_MEMORY_URL": server}


def test_chat_ctrl_d_ends_the_line_and_prints_the_session(chat_env) -> None:
    out = _run("chat", "--context", "acme", stdin="I live in London.\n", env=chat_env)
    assert out.returncode == 0 and "Traceback" not in out.stderr, out.stderr
    match = re.search(r"You: \n\(session (sess_\w+); resume with --session \1\)\n\Z", out.stdout)
    assert match, out.stdout


def test_chat_ctrl_c_ends_the_line_and_prints_the_session(chat_env) -> None:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("AGENT_MEMORY_", "OPENAI_", "LOG_LEVEL"))}
    proc = subprocess.Popen([sys.executable, "-m", "agent_memory.interfaces.cli", "chat", "--context", "acme"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env={**base, **chat_env}, cwd=REPO)
    assert proc.stdin and proc.stdout
    proc.stdin.write(b"I live in London.\n")
    proc.stdin.flush()
    seen = b""
    while seen.count(b"You: ") < 2:  # the second prompt: the first turn has been answered
        chunk = os.read(proc.stdout.fileno(), 1)
        assert chunk, seen
        seen += chunk
    proc.send_signal(signal.SIGINT)  # what Ctrl-C sends to the terminal's foreground process
    rest, err = proc.communicate(timeout=60)
    assert proc.returncode == 0 and b"Traceback" not in err, err
    assert re.fullmatch(rb"\n\(session (sess_\w+); resume with --session \1\)\n", rest), rest


def test_ctrl_c_stops_serve_started_with_sigint_ignored(tmp_path) -> None:
    """A shell's background job starts with SIGINT ignored; a Ctrl-C (kill -INT) still stops it."""
    proc = subprocess.Popen([sys.executable, "-m", "agent_memory.interfaces.cli", "serve", "--port", "0",
                             "--data-dir", str(tmp_path)], cwd=REPO, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
                            env={k: v for k, v in os.environ.items()
                                 if not k.startswith(("AGENT_MEMORY_", "OPENAI_", "LOG_LEVEL"))})
    try:
        for line in proc.stderr:
            if "memory inspector:" in line:
                break
        proc.send_signal(signal.SIGINT)
        rest = proc.communicate(timeout=60)[1]
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0 and "Traceback" not in rest, rest

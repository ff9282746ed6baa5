"""The ``agent-memory`` commands that talk to a running service, all through the SDK:
``chat`` (the terminal loop) and the operator commands ``remember``, ``recall``, ``state``,
``history``, ``fact show|correct|delete`` (one fact by the id ``state`` prints), ``documents
upload|list|query|delete``, and ``export`` /
``import`` of a whole context (docs/export.md). Each prints human-readable text, or the response JSON with ``--json``.
An error response prints its problem and exits 1; a service that cannot be reached exits 2."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from typing import Any

from agent_memory.client import AgentMemory, AgentMemoryError, ApiError
from agent_memory.client._calls import fact_collection
from agent_memory.interfaces.memory_text import scope_note, scope_text, side_by_side, state_lines
from agent_memory.models import wire


def add_commands(sub: Any) -> None:
    chat = _command(sub, "chat", "chat in the terminal with a running service", _chat)
    chat.add_argument("--session", default=None, help="resume a session")

    remember = _command(sub, "remember", "store a statement and print what it extracted", _remember)
    remember.add_argument("text", help="the statement, e.g. \"I moved to Berlin last month.\"")
    remember.add_argument("--session", default=None, help="append to this session")

    recall = _command(sub, "recall", "ranked memory for a query", _recall)
    recall.add_argument("query", help="what to look for, e.g. \"Where do I live?\"")
    recall.add_argument("-k", type=int, default=None, help="number of hits (default 10)")
    recall.add_argument("--as-of", default=None, help="facts valid at this RFC 3339 instant")

    state = _command(sub, "state", "the current memory snapshot, by category", _state)
    state.add_argument("--limit", type=int, default=None, help="rows per table (default 100)")

    history = _command(sub, "history", "one attribute's supersession chain", _history)
    history.add_argument("entity", help="type/name, e.g. person/user")
    history.add_argument("key", help="attribute key, e.g. location")

    fact = sub.add_parser("fact", help="one remembered fact by its id (state and remember print ids)")
    fact_sub = fact.add_subparsers(dest="fact", required=True, title="commands", metavar="COMMAND")
    show = _command(fact_sub, "show", "print one fact", _fact_show)
    show.add_argument("id", help="attr_..., rel_..., act_... or instr_...")
    correct = _command(fact_sub, "correct", "correct an attribute or relation (history is kept)", _fact_correct)
    correct.add_argument("id", help="attr_... or rel_...")
    correct.add_argument("value", help="the new value (a relation: its new object, e.g. person/erin)")
    correct.add_argument("--note", default=None, help="why, kept with the correcting turn")
    delete = _command(fact_sub, "delete", "forget one fact (soft delete; --purge also its history)", _fact_delete)
    delete.add_argument("id", help="attr_..., rel_..., act_... or instr_...")
    delete.add_argument("--purge", action="store_true", help="hard-delete it and its superseded history")

    documents = sub.add_parser("documents", help="documents of a context")
    documents_sub = documents.add_subparsers(dest="documents", required=True, title="commands", metavar="COMMAND")
    upload = _command(documents_sub, "upload", "upload a document and wait until it is ingested", _upload)
    upload.add_argument("file", help="a PDF, DOCX, HTML, Markdown or text file (a large one goes through "
                                      "POST /documents/uploads)")
    upload.add_argument("--title", default=None, help="default: the file name")
    upload.add_argument("--format", choices=["text", "markdown"], default=None, help="default: by extension")
    upload.add_argument("--label", action="append", dest="labels", help="a label (repeatable)")
    upload.add_argument("--no-wait", action="store_true", help="return once the upload is accepted")
    upload.add_argument("--timeout", type=float, default=600.0, help="seconds to wait for ingestion")
    listing = _command(documents_sub, "list", "the documents of the context, with their status", _documents_list)
    listing.add_argument("--limit", type=int, default=None, help="at most this many (default: all)")
    query = _command(documents_sub, "query", "the chunks of the documents that best answer a query", _documents_query)
    query.add_argument("query", help="what to look for, e.g. \"refund policy\"")
    query.add_argument("-k", type=int, default=None, help="number of chunks (default 10)")
    query.add_argument("--mode", choices=["hybrid", "vector", "bm25", "graph"], default=None,
                       help="default: hybrid; graph also follows the entities the top chunks mention")
    query.add_argument("--threshold", type=float, default=None,
                       help="drop chunks scoring below this share (0-1) of the best")
    delete_doc = _command(documents_sub, "delete", "delete a document, its chunks and its original", _documents_delete)
    delete_doc.add_argument("id", help="doc_..., as documents list prints it")

    export = _command(sub, "export", "export the context as versioned NDJSON (docs/export.md; needs admin)", _export)
    export.add_argument("-o", "--output", default=None, help="file to write (default: stdout)")
    export.add_argument("--only-partition", default=None, dest="only_partition",
                        help="export only this partition (default: every partition)")
    export.add_argument("--include-principals", action="store_true", help="add principals and grants (never keys)")
    export.add_argument("--no-originals", action="store_true", help="leave documents' original bytes out")
    export.add_argument("--via", choices=["auto", "job", "stream"], default="auto",
                        help="job: the job form (the stack's bucket and a presigned download; any size); stream: "
                             "GET /export (a deployed stack answers at most 6 MB); auto (default): stream from "
                             "a service on this machine, the job form from any other")

    imp = _command(sub, "import", "import an export (or Mem0's get_all output) into the context", _import)
    imp.add_argument("file", help="an export (.ndjson), or with --from mem0 a JSON file of Mem0's get_all")
    imp.add_argument("--from", dest="source", choices=["agent-memory", "mem0"], default="agent-memory",
                     help="what the file is (default: an agent-memory export)")
    imp.add_argument("--via", choices=["auto", "job", "stream"], default="auto",
                     help="job: a presigned upload and an import job (any size); stream: POST /import (a deployed "
                          "stack takes at most 6 MB); auto (default): stream to a service on this machine, the job "
                          "form to any other")


def _use_job(memory: AgentMemory, via: str) -> bool:
    """The job form for a service not on this machine (a deployed stack: Lambda carries at
    most 6 MB each way); the local service streams either way."""
    if via != "auto":
        return via == "job"
    from urllib.parse import urlsplit

    host = (urlsplit(str(memory.base_url)).hostname or "").lower()
    return host not in ("localhost", "127.0.0.1", "::1") and not host.startswith("127.")


def _job_progress(bar: Any) -> Callable[[Any], None]:
    def show(job: Any) -> None:
        bar.update(completed=job.records_done, total=job.records_total)
    return show


def _export(memory: AgentMemory, args: argparse.Namespace) -> int:
    from agent_memory.interfaces.progress import ProgressBar

    if _use_job(memory, args.via):
        with ProgressBar(f"export {args.context} (job)", unit="records") as bar:
            data = memory.export_job(partition=args.only_partition,
                                     include_principals=args.include_principals or None,
                                     originals=False if args.no_originals else None, on_progress=_job_progress(bar))
        if args.output:
            with open(args.output, "wb") as f:
                f.write(data)
        else:
            sys.stdout.write(data.decode("utf-8"))
        return 0
    out = open(args.output, "w", encoding="utf-8") if args.output else sys.stdout  # noqa: SIM115
    try:
        with ProgressBar(f"export {args.context}", unit="lines") as bar:
            for line in memory.export_context(partition=args.only_partition,
                                              include_principals=args.include_principals or None,
                                              originals=False if args.no_originals else None):
                out.write(line + "\n")
                bar.advance()
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _import(memory: AgentMemory, args: argparse.Namespace) -> int:
    from pathlib import Path

    from agent_memory.interfaces.progress import ProgressBar

    path = Path(args.file)
    if not path.is_file():
        print(f"agent-memory: {path}: no such file", file=sys.stderr)
        return 2
    if args.source == "mem0":
        return _import_mem0(memory, args, path)
    lines = path.read_bytes().splitlines()
    with ProgressBar(f"import {path.name}", len(lines), unit="lines") as bar:
        if _use_job(memory, args.via):
            result = memory.import_job(b"\n".join(lines) + b"\n", on_progress=_job_progress(bar))
        else:
            result = memory.import_context(b"\n".join(lines) + b"\n")
        bar.update(completed=len(lines))
    if args.json:
        _print_json(result)
        return 0
    print(f"imported {result.records} records into {result.context_id}: {result.written} written, "
          f"{result.unchanged} already there; {result.originals} originals, {result.principals} principal grants")
    return 0


def _import_mem0(memory: AgentMemory, args: argparse.Namespace, path: Any) -> int:
    from agent_memory.compat.mem0 import Memory, read_mem0
    from agent_memory.interfaces.progress import ProgressBar

    try:
        memories, history = read_mem0(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        print(f"agent-memory: {path}: {exc}", file=sys.stderr)
        return 1
    # Each Mem0 user_id is a partition of the context, as the Mem0-style entry point maps it.
    with Memory(context=args.context, base_url=args.url, api_key=args.api_key) as mem0, \
            ProgressBar(f"import {path.name} (mem0)", len(memories), unit="memories") as bar:
        result = mem0.import_memories(memories, history, progress=bar.advance)
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    print(f"imported {result['memories']} Mem0 memories into {args.context}: {result['written']} written, "
          f"{result['unchanged']} already there, {result['updates']} history updates")
    return 0


def _command(sub: Any, name: str, help: str, run: Callable[[AgentMemory, argparse.Namespace], int]
             ) -> argparse.ArgumentParser:
    cmd = sub.add_parser(name, help=help)
    cmd.add_argument("--context", required=True,
                     help="the memory context (tenant) to use, e.g. acme; each context is separate memory")
    cmd.add_argument("--url", default=None, help="service URL (AGENT_MEMORY_URL, default http://127.0.0.1:8080)")
    cmd.add_argument("--api-key", default=None, help="bearer key (AGENT_MEMORY_API_KEY)")
    cmd.add_argument("--partition", default=None, help="a partition within the context (the x-memory-partition header; default: none)")
    cmd.add_argument("--on-behalf-of", default=None, dest="on_behalf_of",
                     help="act for this principal (X-Spectron-On-Behalf-Of; the key needs 'delegate')")
    cmd.add_argument("--json", action="store_true", help="print the response JSON")
    cmd.set_defaults(func=lambda args: _run(args, run))
    return cmd


def _run(args: argparse.Namespace, run: Callable[[AgentMemory, argparse.Namespace], int]) -> int:
    try:
        with AgentMemory(args.context, base_url=args.url, api_key=args.api_key, partition=args.partition,
                         on_behalf_of=args.on_behalf_of, timeout=120) as memory:
            return run(memory, args)
    except ApiError as exc:
        print(f"agent-memory: {exc.status} {exc.title}: {exc.detail}", file=sys.stderr)
        return 1
    except AgentMemoryError as exc:
        print(unreachable_message(args.url, exc), file=sys.stderr)
        return 2


def unreachable_message(url_flag: str | None, exc: Exception) -> str:
    """Names the URL tried, where it came from, and both ways to point elsewhere."""
    env = os.environ.get("AGENT_MEMORY_URL")
    url, source = ((url_flag, "--url") if url_flag else (env, "AGENT_MEMORY_URL") if env
                   else ("http://127.0.0.1:8080", "the default"))
    return (f"agent-memory: cannot reach {url} ({source}): {exc}. Is the service running (`make serve` or "
            "`agent-memory serve`)? Point at another with --url URL or AGENT_MEMORY_URL=URL")


def _print_json(model: Any) -> None:
    data = model.to_wire() if isinstance(model, wire.WireModel) else [m.to_wire() for m in model]
    print(json.dumps(data, indent=2, ensure_ascii=False))


def _chat(memory: AgentMemory, args: argparse.Namespace) -> int:
    from agent_memory.interfaces.terminal_chat import run_repl

    run_repl(memory, args.session)
    return 0


def _remember(memory: AgentMemory, args: argparse.Namespace) -> int:
    result = memory.remember(args.text, session_id=args.session)
    if args.json:
        _print_json(result)
        return 0
    print(f"stored turn {result.turn_id} in session {result.session_id}")
    extraction = result.extraction
    if extraction is None:
        print("  nothing extracted" + (f" (mode {result.mode})" if result.mode != "full" else ""))
        return 0
    if not any((extraction.attributes, extraction.relations, extraction.actions, extraction.instructions,
                extraction.corrections, extraction.uncertainties)):
        print("  nothing new: memory already held all of it, or it held no fact to keep")
        return 0
    for a in extraction.attributes:
        print(f"  + {a.entity_id} {a.key} = {a.value}  [{a.id}]")
    for r in extraction.relations:
        print(f"  + {r.subject} {r.label} {r.object}")
    for act in extraction.actions:
        print(f"  + {act.actor} {act.verb}: {act.summary}")
    for i in extraction.instructions:
        print(f"  + instruction {i.label}: {i.description}")
    for c in extraction.corrections:
        print(f"  ~ {c.entity_id} {c.key}: {c.old_value} -> {c.new_value or '(no longer true)'}")
    for u in extraction.uncertainties:
        print(f"  ? {u.about} ({u.reason})")
    return 0


def _recall(memory: AgentMemory, args: argparse.Namespace) -> int:
    result = memory.recall(args.query, k=args.k, as_of=args.as_of)
    if args.json:
        _print_json(result)
        return 0
    if not result.hits:
        print("(nothing found)")
    for n, hit in enumerate(result.hits, 1):
        when = f" {hit.occurred_at}" if hit.occurred_at else ""
        print(f"{n:>2}. [{hit.kind}{when}] {hit.text}  ({hit.score:.3f})")
    return 0


def _state(memory: AgentMemory, args: argparse.Namespace) -> int:
    state = memory.state(limit=args.limit)
    if args.json:
        _print_json(state)
        return 0
    for row in state_lines(state):
        print(row)
    return 0


# A request body at most this large goes to POST /documents (a multipart body adds a little).
SYNC_UPLOAD_BYTES = 2_900_000


def _upload(memory: AgentMemory, args: argparse.Namespace) -> int:
    from pathlib import Path

    from agent_memory.interfaces.progress import ProgressBar

    path = Path(args.file)
    if not path.is_file():
        print(f"agent-memory: {path}: no such file", file=sys.stderr)
        return 2
    if path.stat().st_size > SYNC_UPLOAD_BYTES:
        # Over the synchronous body cap (the service's limits.sync_body_bytes): a presigned
        # upload (S3 when deployed, the local server's own upload store locally).
        accepted = memory.documents.upload_large(path, args.title, format=args.format, labels=args.labels)
    else:
        accepted = memory.documents.upload(path, args.title, format=args.format, labels=args.labels)
    document: Any = accepted
    if accepted.status in ("ingesting", "uploading") and not args.no_wait:
        with ProgressBar(f"ingest {path.name}", accepted.chunks_total, unit="chunks") as bar:
            document = memory.documents.wait_ready(
                accepted.id, timeout=args.timeout,
                on_progress=lambda d: bar.update(completed=d.chunks_done, total=d.chunks_total or None))
    if args.json:
        _print_json(document)
        return 0
    chunks = getattr(document, "chunk_count", None)
    print(f"document {document.id}: {document.status}" + (f", {chunks} chunks" if chunks is not None else "")
          + (" (already stored)" if getattr(accepted, "deduplicated", False) else ""))
    error = getattr(document, "error", None)
    if error is not None:
        print(f"agent-memory: ingestion failed: {error.detail}", file=sys.stderr)
        return 1
    return 0


def _documents_list(memory: AgentMemory, args: argparse.Namespace) -> int:
    from itertools import islice

    documents = list(islice(memory.documents.list(), args.limit))
    if args.json:
        _print_json(documents)
        return 0
    if not documents:
        print("(no documents)")
    for d in documents:
        progress = f"{d.chunks_done}/{d.chunks_total} chunks" if d.status != "ready" else f"{d.chunk_count} chunks"
        print(f"{d.id}  {d.status}  {d.format}  {progress}  {d.size_bytes} bytes  {d.title}")
    return 0


def _documents_query(memory: AgentMemory, args: argparse.Namespace) -> int:
    result = memory.documents.query(args.query, k=args.k, mode=args.mode, threshold=args.threshold)
    if args.json:
        _print_json(result)
        return 0
    if not result.results:
        print("(nothing found)")
    for n, hit in enumerate(result.results, 1):
        chunk, document = hit.chunk, hit.document
        text = " ".join(chunk.text.split())
        title = getattr(document, "title", None) or chunk.document_title or "(deleted document)"
        where = f", {chunk.section}" if chunk.section else ""
        print(f"{n:>2}. {title} [{document.id}, chunk {chunk.ordinal}{where}]  ({hit.score:.3f})")
        print(f"    {text[:300]}{'…' if len(text) > 300 else ''}")
    return 0


def _documents_delete(memory: AgentMemory, args: argparse.Namespace) -> int:
    memory.documents.delete(args.id)
    if args.json:
        print(json.dumps({"id": args.id, "deleted": True}))
        return 0
    print(f"deleted {args.id}")
    return 0


def _fact_api(memory: AgentMemory, fact_id: str) -> Any:
    collection = fact_collection(fact_id)
    if collection is None:
        raise SystemExit("agent-memory: a fact id starts with attr_, rel_, act_ or instr_")
    return getattr(memory, collection)


def _fact_line(fact: Any) -> str:
    if isinstance(fact, wire.MemoryAttribute):
        line = f"{fact.entity} {fact.key} = {fact.value}"
    elif isinstance(fact, wire.MemoryRelation):
        line = f"{fact.subject} {fact.label} {fact.object}"
    elif isinstance(fact, wire.MemoryAction):
        line = f"{fact.actor} {fact.verb}: {fact.summary}"
    else:
        line = f"instruction {fact.label}: {fact.description}"
    if getattr(fact, "scopes", None):
        line += f"  (scope: {scope_text(fact.scopes)})"
    if getattr(fact, "superseded_by", None):
        line += f"  (superseded by {fact.superseded_by})"
    elif getattr(fact, "valid_until", None):
        line += f"  (until {fact.valid_until})"
    return f"{line}  [{fact.id}]"


def _fact_show(memory: AgentMemory, args: argparse.Namespace) -> int:
    fact = _fact_api(memory, args.id).get(args.id)
    if args.json:
        _print_json(fact)
    else:
        print(_fact_line(fact))
    return 0


def _fact_correct(memory: AgentMemory, args: argparse.Namespace) -> int:
    api = _fact_api(memory, args.id)
    if api not in (memory.attributes, memory.relations):
        print("agent-memory: only attributes and relations are corrected; delete and restate others",
              file=sys.stderr)
        return 2
    out = api.update(args.id, args.value, note=args.note)
    if args.json:
        _print_json(out)
        return 0
    for c in out.corrections:
        print(f"  ~ {c.entity_id} {c.key}: {c.old_value} -> {c.new_value or '(no longer true)'}")
    print(f"now: {_fact_line(out.fact)}")
    return 0


def _fact_delete(memory: AgentMemory, args: argparse.Namespace) -> int:
    out = _fact_api(memory, args.id).delete(args.id, purge=args.purge or None)
    if args.json:
        _print_json(out)
        return 0
    for item in out.items:
        print(f"  - {item.text}  [{item.id}]")
    for e in out.entities:
        print(f"  - entity {e.name} (nothing left about it)  [{e.id}]")
    return 0


def _history(memory: AgentMemory, args: argparse.Namespace) -> int:
    type_, _, name = args.entity.removeprefix("entity:").partition("/")
    if not name:
        print("agent-memory: entity must be type/name, e.g. person/user", file=sys.stderr)
        return 2
    chain = memory.entities.history(type_, name, args.key)
    if args.json:
        _print_json(chain)
        return 0
    scoped = side_by_side([("chain", a.scopes) for a in chain])
    for a in chain:
        until = a.valid_until or "now"
        print(f"{a.valid_from or '(start)'} .. {until}: {a.value}{scope_note(scoped, 'chain', a.scopes)}")
    return 0

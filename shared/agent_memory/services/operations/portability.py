"""Export a context as versioned NDJSON and import it into either record store (docs/export.md).

The stream is the context's stored records, each with its key made relative to the context
(``<partition>#<collection>``), so an import keeps every id, window, supersession link, head row
and version exactly and can re-key into another context by prefixing another id. The search
index is not exported: the records are written through the store the runtime hands us, which
projects them like any other write (the projection wrapper locally, DynamoDB Streams on AWS).

Which record kinds travel is a closed list: the fact kinds of the one registry
(``facts.fact_kinds.FACT_KINDS``) plus the conversation, thread, document and scope kinds below.
Derived and operational rows (idempotency replies, caches, traces, audit rows and erasure
receipts, pending ingestion parts) are left out and counted in the trailer; API keys never leave the store.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any

from agent_memory.access.principal_grants import PRINCIPALS_PK
from agent_memory.access.request_context import RequestContext
from agent_memory.kernel import timeutil
from agent_memory.kernel.errors import Conflict, Forbidden, InvalidRequest
from agent_memory.kernel.ids import valid_context_id
from agent_memory.kernel.stored_item import MAX_ITEM_BYTES, record_bytes, transaction_batches
from agent_memory.ports import Put, Record, RecordStore, UploadStore
from agent_memory.services.facts.fact_kinds import FACT_KINDS

FORMAT = "agent-memory-export"
FORMAT_VERSION = 1

#: Kinds of memory besides the fact kinds: conversation, threads, documents, the scope registry,
#: and the graph's bookkeeping rows that supersession and entity deletion read (heads, refs).
OTHER_KINDS = ("head", "ref", "session", "turn", "thread", "thread_turn", "thread_turn_part", "document",
               "document-hash", "chunk", "keyword", "keyword-document", "document-keyword", "scope")
RECORD_TYPES: tuple[str, ...] = (*(k.kind for k in FACT_KINDS), *OTHER_KINDS)
#: Rows that are derived from memory or about its use, not memory: rebuilt or not worth moving.
DERIVED_KINDS = frozenset({"idempotency", "idempotency_ref", "audit", "cache_entry", "cache_mark", "cache_ref",
                           "trace", "document-part", "budget", "key_use", "recent_unit",
                           # an erasure receipt proves what this deployment removed; it stays
                           # with the deployment's audit log, not with the memory it erased
                           "receipt"})
PRINCIPAL_TYPE = "principal_grants"
ORIGINAL_TYPE = "original"
ORIGINAL_MAX_BYTES = 64 * 1024 * 1024
_IMPORT_BATCH = 100


@dataclass
class ImportResult:
    context_id: str
    records: int = 0        # records in the stream
    written: int = 0        # records written (new, or older than the stream's)
    unchanged: int = 0      # already there, identical or newer: an import twice writes nothing
    originals: int = 0
    principals: int = 0
    by_type: dict[str, int] = field(default_factory=dict)


def _relative(key: str, prefix: str) -> str:
    return key[len(prefix):]


def _line(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, separators=(",", ":"), sort_keys=True) + "\n"


class Portability:
    """``GET /export`` and ``POST /import`` of one context (and optionally one partition)."""

    def __init__(self, store: RecordStore, uploads: Callable[[], UploadStore | None], *,
                 catalogue: Any = None):
        self.store = store
        self._uploads = uploads
        self._catalogue = catalogue  # operations.catalogue.CatalogueService: the pickers list the context

    # --- export -------------------------------------------------------------------------------

    def export(self, ctx: RequestContext, *, partition: str | None = None, include_principals: bool = False,
               include_originals: bool = True) -> Iterator[str]:
        """The context's NDJSON lines: a header, records in key order, originals, principals,
        then a trailer with counts (a stream cut short has no trailer, and import refuses it)."""
        # Checked here, before the first line: a streamed response cannot turn into a 403 later.
        self.check_export(ctx, partition, include_principals)
        return self._lines(ctx, partition, include_principals, include_originals)

    @staticmethod
    def check_export(ctx: RequestContext, partition: str | None, include_principals: bool) -> None:
        """What an export refuses before its first line (and an export job before it is queued)."""
        admin_only(ctx, "export")
        if include_principals and not ctx.admin:
            raise Forbidden("principals and grants are exported only for an admin", code="admin_required")
        if partition is not None and not valid_context_id(partition):
            raise InvalidRequest(f"partition {partition!r} is not a valid partition name", field="partition")

    def _lines(self, ctx: RequestContext, partition: str | None, include_principals: bool,
               include_originals: bool) -> Iterator[str]:
        prefix = f"c#{ctx.context_id}#"
        scan_prefix = prefix + (f"{partition}#" if partition else "")
        yield _line({"type": "header", "format": FORMAT, "version": FORMAT_VERSION, "contextId": ctx.context_id,
                     "partition": partition, "exportedAt": timeutil.now_iso(),
                     "types": list(RECORD_TYPES)})
        # Key order makes two exports of equal contexts equal line for line, on either store.
        records = sorted((r for r in self.store.scan(scan_prefix) if r.pk.startswith(scan_prefix)),
                         key=lambda r: (r.pk, r.sk))
        counts: dict[str, int] = {}
        skipped: dict[str, int] = {}
        originals: list[tuple[str, str]] = []
        for r in records:
            kind = str(r.data.get("kind") or "")
            if kind not in RECORD_TYPES:
                skipped[kind or "?"] = skipped.get(kind or "?", 0) + 1
                continue
            counts[kind] = counts.get(kind, 0) + 1
            yield _line(_record_line(r, prefix))
            if kind == "document" and include_originals and r.data.get("originalKey"):
                originals.append((str(r.data["originalKey"]), str(r.data.get("mimeType") or
                                                                  "application/octet-stream")))
        uploads = self._uploads() if originals else None
        n_originals = 0
        for key, content_type in originals:
            data = uploads.read(key, ORIGINAL_MAX_BYTES) if uploads is not None else None
            if data is None:
                continue
            n_originals += 1
            yield _line({"type": ORIGINAL_TYPE, "key": key, "contentType": content_type,
                         "data": base64.b64encode(data).decode("ascii")})
        n_principals = 0
        if include_principals:
            for r in self._principal_rows(ctx.context_id):
                n_principals += 1
                yield _line({"type": PRINCIPAL_TYPE, "sk": _relative(r.sk, f"{ctx.context_id}#"),
                             "version": r.version, "data": r.data})
        yield _line({"type": "end", "records": sum(counts.values()), "originals": n_originals,
                     "principals": n_principals, "counts": counts, "skipped": skipped})

    def _principal_rows(self, context_id: str) -> Iterator[Record]:
        after = None
        while True:
            page = self.store.query(PRINCIPALS_PK, prefix=f"{context_id}#", after=after, limit=200)
            yield from (r for r in page.records if r.data.get("kind") == PRINCIPAL_TYPE)
            if page.last_key is None:
                return
            after = page.last_key

    # --- import -------------------------------------------------------------------------------

    def import_(self, ctx: RequestContext, lines: Iterable[bytes | str],
                progress: Callable[[int], None] | None = None) -> ImportResult:
        """Read the whole stream first and write only when every line is valid (a bad line
        anywhere writes nothing), then write in transactions, skipping records already there
        unchanged or newer (so the same file twice changes nothing)."""
        admin_only(ctx, "import")
        parsed = _parse(lines, ctx.context_id)
        if parsed.principals and not ctx.admin:
            raise Forbidden("principals and grants are imported only by an admin", code="admin_required")
        result = ImportResult(ctx.context_id, records=len(parsed.records), by_type=parsed.by_type)
        uploads = self._uploads() if parsed.originals else None
        if parsed.originals and uploads is None:
            raise InvalidRequest("the stream carries document originals and this deployment keeps none",
                                 field="original")
        # Document ids are global: an original already kept under the key with other bytes
        # belongs to another context's document, and is never overwritten.
        fresh = []
        for key, content_type, data in parsed.originals:
            kept = uploads.read(key, ORIGINAL_MAX_BYTES)  # type: ignore[union-attr]
            if kept is not None and kept != data:
                raise Conflict(f"{key} is already kept with other bytes; an import never replaces an original",
                               code="original_conflict")
            if kept is None:
                fresh.append((key, content_type, data))
        for key, content_type, data in fresh:
            uploads.write(key, data, content_type)  # type: ignore[union-attr]
        result.originals = len(parsed.originals)
        rows = [*parsed.records, *parsed.principals]
        for start in range(0, len(rows), _IMPORT_BATCH):
            chunk = rows[start:start + _IMPORT_BATCH]
            present = {(r.pk, r.sk): r for r in self.store.batch_get([(r.pk, r.sk) for r in chunk])}
            todo = []
            for r in chunk:
                have = present.get((r.pk, r.sk))
                if have is not None and (have.version > r.version or
                                         (have.version == r.version and have.data == r.data)):
                    result.unchanged += 1
                else:
                    todo.append(r)
            for batch in transaction_batches([Put(r) for r in todo]):
                self.store.transact(batch)
            result.written += len(todo)
            if progress is not None:
                progress(len(chunk))
        result.principals = len(parsed.principals)
        if self._catalogue is not None:
            for part in sorted({r.pk.split("#", 3)[2] for r in parsed.records}):
                self._catalogue.note(replace(ctx, partition=part))
        return result


def admin_only(ctx: RequestContext, what: str) -> None:
    # A whole context, past reader lists and write regions: only an admin moves it.
    if not ctx.admin:
        raise Forbidden(f"{what} of a whole context needs the admin verb", code="admin_required")


def _record_line(r: Record, prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {"type": r.data["kind"], "pk": _relative(r.pk, prefix), "sk": r.sk,
                           "version": r.version, "data": r.data}
    if r.gsi1pk is not None and r.gsi1sk is not None and r.gsi1pk.startswith(prefix):
        out["gsi1pk"] = _relative(r.gsi1pk, prefix)
        out["gsi1sk"] = r.gsi1sk
    if r.expires_at is not None:
        out["expiresAt"] = r.expires_at
    return out


_CONTEXT_FIELDS = ("context_id", "contextId")


def _rekeyed(data: dict[str, Any], source: str, target: str) -> dict[str, Any]:
    """The record's data with the source context's id, where it names it, replaced by the target's."""
    if source == target or not any(data.get(f) == source for f in _CONTEXT_FIELDS):
        return data
    return {k: (target if k in _CONTEXT_FIELDS and v == source else v) for k, v in data.items()}


@dataclass
class _Parsed:
    records: list[Record] = field(default_factory=list)
    principals: list[Record] = field(default_factory=list)
    originals: list[tuple[str, str, bytes]] = field(default_factory=list)
    original_lines: list[int] = field(default_factory=list)
    by_type: dict[str, int] = field(default_factory=dict)


def _bad(n: int, detail: str) -> InvalidRequest:
    return InvalidRequest(f"line {n}: {detail}", field="body", code="invalid_export_line", line=n)


def _parse(lines: Iterable[bytes | str], context_id: str) -> _Parsed:
    out = _Parsed()
    prefix = f"c#{context_id}#"
    header: dict[str, Any] | None = None
    ended = False
    seen: set[tuple[str, str]] = set()
    n = 0
    for n, raw in enumerate(lines, start=1):
        text = raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw
        if not text.strip():
            continue
        if ended:
            raise _bad(n, "a line after the trailer ({\"type\": \"end\"})")
        try:
            obj = json.loads(text)
        except ValueError as exc:
            raise _bad(n, f"not JSON ({exc.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("type"), str):
            raise _bad(n, "not an object with a string \"type\"")
        kind = obj["type"]
        if header is None:
            header = _header(n, obj)
            continue
        if kind == "header":
            raise _bad(n, "a second header")
        if kind == "end":
            if obj.get("records") != len(out.records):
                raise _bad(n, f"the trailer counts {obj.get('records')!r} records, the stream holds "
                              f"{len(out.records)}")
            ended = True
        elif kind in RECORD_TYPES:
            rec = _record(n, obj, prefix, str(header.get("contextId") or context_id), context_id)
            if (rec.pk, rec.sk) in seen:
                raise _bad(n, f"a second record at key {obj['pk']!r} / {obj['sk']!r}")
            seen.add((rec.pk, rec.sk))
            out.records.append(rec)
            out.by_type[kind] = out.by_type.get(kind, 0) + 1
        elif kind == ORIGINAL_TYPE:
            out.originals.append(_original(n, obj))
            out.original_lines.append(n)
        elif kind == PRINCIPAL_TYPE:
            out.principals.append(_principal(n, obj, str(header.get("contextId") or context_id), context_id))
        else:
            raise _bad(n, f"unknown type {kind!r} (format {FORMAT_VERSION} has {', '.join(RECORD_TYPES)}, "
                          f"{ORIGINAL_TYPE}, {PRINCIPAL_TYPE}, header, end)")
    if header is None:
        raise InvalidRequest("empty stream: an export starts with its header line", field="body",
                             code="invalid_export_line", line=1)
    if not ended:
        raise _bad(n + 1, "the stream ends without its trailer ({\"type\": \"end\"}): cut short?")
    named = {r.data.get("originalKey") for r in out.records if r.data.get("kind") == "document"}
    for line, (key, _, _) in zip(out.original_lines, out.originals, strict=True):
        if key not in named:
            raise _bad(line, f"the original {key!r} belongs to no document of the stream")
    return out


def _header(n: int, obj: dict[str, Any]) -> dict[str, Any]:
    if obj.get("type") != "header" or obj.get("format") != FORMAT:
        raise _bad(n, f"the first line must be the header ({{\"type\": \"header\", \"format\": \"{FORMAT}\"}})")
    version = obj.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(n, "the header's version must be a positive integer")
    if version > FORMAT_VERSION:
        raise InvalidRequest(f"export format version {version} is newer than this server reads "
                             f"({FORMAT_VERSION}); upgrade agent-memory to import it", field="version",
                             code="export_version_unsupported", line=n)
    return obj


def _text(n: int, obj: dict[str, Any], name: str) -> str:
    value = obj.get(name)
    if not isinstance(value, str) or not value:
        raise _bad(n, f"{name!r} must be a non-empty string")
    return value


def _version(n: int, obj: dict[str, Any]) -> int:
    version = obj.get("version", 1)
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _bad(n, "'version' must be a positive integer")
    return version


def _record(n: int, obj: dict[str, Any], prefix: str, source: str, context_id: str) -> Record:
    pk, sk = _text(n, obj, "pk"), _text(n, obj, "sk")
    partition = pk.split("#", 1)[0]
    if "#" not in pk or not valid_context_id(partition):
        raise _bad(n, f"'pk' {pk!r} must start with a partition and '#'")
    data = obj.get("data")
    if not isinstance(data, dict):
        raise _bad(n, "'data' must be an object")
    if data.get("kind") != obj["type"]:
        raise _bad(n, f"'data.kind' {data.get('kind')!r} differs from the line's type {obj['type']!r}")
    gsi1pk, gsi1sk = obj.get("gsi1pk"), obj.get("gsi1sk")
    if (gsi1pk is None) != (gsi1sk is None) or any(v is not None and not isinstance(v, str) for v in (gsi1pk, gsi1sk)):
        raise _bad(n, "'gsi1pk' and 'gsi1sk' come together, as strings")
    # Keys are relative to the context, the secondary one too, so nothing lands in another's.
    if gsi1pk is not None and ("#" not in gsi1pk or not valid_context_id(gsi1pk.split("#", 1)[0])):
        raise _bad(n, f"'gsi1pk' {gsi1pk!r} must start with a partition and '#'")
    expires = obj.get("expiresAt")
    if expires is not None and (not isinstance(expires, int) or isinstance(expires, bool)):
        raise _bad(n, "'expiresAt' must be an integer (epoch seconds)")
    data = _rekeyed(data, source, context_id)
    record = Record(pk=prefix + pk, sk=sk, data=data, version=_version(n, obj),
                    gsi1pk=prefix + gsi1pk if gsi1pk is not None else None, gsi1sk=gsi1sk, expires_at=expires)
    # Refused here rather than by the store mid-import: no stored record is this large.
    if record_bytes(record) > MAX_ITEM_BYTES:
        raise _bad(n, f"the record is over the {MAX_ITEM_BYTES} bytes one stored item holds")
    return record


def _original(n: int, obj: dict[str, Any]) -> tuple[str, str, bytes]:
    key = _text(n, obj, "key")
    if not key.startswith("originals/") or ".." in key:
        raise _bad(n, "'key' of an original must be under originals/")
    try:
        data = base64.b64decode(_text(n, obj, "data"), validate=True)
    except (binascii.Error, ValueError):
        raise _bad(n, "'data' of an original must be base64") from None
    return key, str(obj.get("contentType") or "application/octet-stream"), data


def _principal(n: int, obj: dict[str, Any], source: str, context_id: str) -> Record:
    sk = _text(n, obj, "sk")
    data = obj.get("data")
    if not isinstance(data, dict) or data.get("kind") != PRINCIPAL_TYPE:
        raise _bad(n, "'data' of a principal_grants line must be its stored row")
    return Record(pk=PRINCIPALS_PK, sk=f"{context_id}#{sk}", data=_rekeyed(data, source, context_id),
                  version=_version(n, obj))

"""Persisted context views of the embedded index (``view.ContextView``).

Why: a view was rebuilt from SQLite row by row whenever a context was first searched after
a start (or after the LRU dropped it), re-tokenising every text for the in-memory BM25 leg:
about 0.6 s at 10k units, and the first query of a 100k context took 20 s. A snapshot holds
the view as built: numeric columns as ``.npy`` files read straight into the view's arrays,
and the rest (ids, code tables, the term index's postings, payload features) as one
``marshal`` blob, which loads at C speed with no per-row Python work and, unlike pickle,
runs no code.

How it stays consistent with SQLite (the truth) across crashes:

- ``view_snapshots`` (SQLite) names each context's snapshot and the ``view_log`` sequence
  number it was taken at. A snapshot is written to a fresh directory and registered only
  after its files are on disk; the directory it replaces is removed after the registration
  commits, so a crash at any point leaves the registered snapshot whole.
- While a context has a registered snapshot, triggers log the key (``pk``) of every unit
  row inserted, updated or deleted in that context (``view_log``) in the write's own
  transaction. Loading a snapshot replays the rows logged after it from SQLite: a unit
  deleted since is dropped, one written since is read again. So a snapshot can be old, but
  never serves what SQLite no longer holds.
- A snapshot that is missing, unreadable or from another Python or format is ignored: the
  view is rebuilt from SQLite, and the log says so.
"""

from __future__ import annotations

import json
import marshal
import os
import shutil
import sys
import uuid
from typing import Any

import numpy as np

FORMAT = 1
SCHEMA = """
CREATE TABLE IF NOT EXISTS view_snapshots (
    context_id TEXT PRIMARY KEY, seq INTEGER NOT NULL, snapshot TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS view_log (
    seq INTEGER PRIMARY KEY AUTOINCREMENT, context_id TEXT NOT NULL, pk INTEGER NOT NULL);
CREATE INDEX IF NOT EXISTS view_log_context ON view_log (context_id, seq);
CREATE TRIGGER IF NOT EXISTS units_view_log_ai AFTER INSERT ON units
WHEN EXISTS (SELECT 1 FROM view_snapshots WHERE context_id = new.context_id) BEGIN
    INSERT INTO view_log (context_id, pk) VALUES (new.context_id, new.pk);
END;
CREATE TRIGGER IF NOT EXISTS units_view_log_au AFTER UPDATE ON units
WHEN EXISTS (SELECT 1 FROM view_snapshots WHERE context_id = new.context_id) BEGIN
    INSERT INTO view_log (context_id, pk) VALUES (new.context_id, new.pk);
END;
CREATE TRIGGER IF NOT EXISTS units_view_log_ad AFTER DELETE ON units
WHEN EXISTS (SELECT 1 FROM view_snapshots WHERE context_id = old.context_id) BEGIN
    INSERT INTO view_log (context_id, pk) VALUES (old.context_id, old.pk);
END;
"""


class SnapshotUnusable(Exception):
    """The registered snapshot cannot be read as written (the view is rebuilt instead)."""


def current_seq(db: Any) -> int:
    """The last ``view_log`` sequence number handed out (AUTOINCREMENT never reuses one, so a
    snapshot's number stays below every change logged after it)."""
    row = db.execute("SELECT seq FROM sqlite_sequence WHERE name = 'view_log'").fetchone()
    return 0 if row is None else int(row[0])


def registered(db: Any, context_id: str) -> tuple[int, str] | None:
    row = db.execute("SELECT seq, snapshot FROM view_snapshots WHERE context_id = ?", (context_id,)).fetchone()
    return None if row is None else (int(row[0]), str(row[1]))


def changed_pks(db: Any, context_id: str, after: int) -> list[int]:
    """Unit keys of the context written or deleted after sequence number ``after``."""
    rows = db.execute("SELECT DISTINCT pk FROM view_log WHERE context_id = ? AND seq > ?", (context_id, after))
    return [int(pk) for (pk,) in rows]


def write(root: str, token: str, arrays: dict[str, np.ndarray], objects: dict[str, Any],
          meta: dict[str, Any]) -> str:
    """Write a snapshot into a new directory under ``root``; returns its name. Every file is
    flushed to disk before the directory gets its final name."""
    name = f"{token}-{uuid.uuid4().hex[:12]}"
    final = os.path.join(root, name)
    tmp = final + ".tmp"
    os.makedirs(tmp)
    try:
        for key, arr in arrays.items():
            _durable(os.path.join(tmp, key + ".npy"), lambda f, arr=arr: np.save(f, arr, allow_pickle=False))
        _durable(os.path.join(tmp, "objects.marshal"), lambda f: marshal.dump(objects, f))
        body = {**meta, "format": FORMAT, "python": list(sys.version_info[:2]), "arrays": sorted(arrays)}
        _durable(os.path.join(tmp, "meta.json"), lambda f: f.write(json.dumps(body).encode()))
        os.rename(tmp, final)
        _fsync_dir(root)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return name


def read(root: str, name: str, into: dict[str, np.ndarray]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Fill each array of ``into`` (its first rows, as many as were saved) from the snapshot
    ``name``; returns ``(meta, objects)``. Raises ``SnapshotUnusable`` when it cannot."""
    path = os.path.join(root, name)
    try:
        with open(os.path.join(path, "meta.json"), "rb") as f:
            meta = json.loads(f.read())
        if meta.get("format") != FORMAT or meta.get("python") != list(sys.version_info[:2]):
            raise SnapshotUnusable(f"snapshot {name} is format {meta.get('format')} of Python {meta.get('python')}")
        if sorted(into) != meta["arrays"]:
            raise SnapshotUnusable(f"snapshot {name} holds other columns")
        for key, out in into.items():
            _read_npy_into(os.path.join(path, key + ".npy"), out)
        with open(os.path.join(path, "objects.marshal"), "rb") as f:
            objects = marshal.loads(f.read())  # from bytes: ``marshal.load`` reads a file in small pieces
    except SnapshotUnusable:
        raise
    except (OSError, ValueError, EOFError, TypeError, KeyError) as exc:
        raise SnapshotUnusable(f"snapshot {name} unreadable: {exc}") from exc
    return meta, objects


def read_meta(root: str, name: str) -> dict[str, Any]:
    try:
        with open(os.path.join(root, name, "meta.json"), "rb") as f:
            return json.loads(f.read())
    except (OSError, ValueError) as exc:
        raise SnapshotUnusable(f"snapshot {name} unreadable: {exc}") from exc


def remove_others(root: str, token: str, keep: str | None) -> None:
    """Remove this context's snapshot directories other than ``keep`` (replaced ones, and
    any a crash left half written)."""
    try:
        names = os.listdir(root)
    except FileNotFoundError:
        return
    for name in names:
        if name.startswith(token + "-") and name != keep:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def _read_npy_into(path: str, out: np.ndarray) -> None:
    with open(path, "rb") as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f)
        else:
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f)
        if fortran or dtype != out.dtype or tuple(shape) != out.shape:
            raise SnapshotUnusable(f"{os.path.basename(path)} is {dtype}{shape}, the view wants {out.dtype}{out.shape}")
        view = memoryview(out).cast("B")
        if f.readinto(view) != view.nbytes or f.read(1):
            raise SnapshotUnusable(f"{os.path.basename(path)} is not {view.nbytes} bytes of data")


def _durable(path: str, fill: Any) -> None:
    with open(path, "wb") as f:
        fill(f)
        f.flush()
        os.fsync(f.fileno())


def _fsync_dir(path: str) -> None:
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)

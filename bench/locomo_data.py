"""Prepare the LoCoMo conversations the LoCoMo benchmarks read (bench/locomo.py,
bench/locomo_latency.py, bench/chat_figures.py, ``agent-memory bench locomo``).

LoCoMo is public research data: Maharana et al., "Evaluating Very Long-Term Conversational
Memory of LLM Agents" (ACL 2024), published at https://github.com/snap-research/locomo. It is
never committed here (``.locomo/`` is git-ignored). Fetch it once, then split it::

    git clone --depth 1 https://github.com/snap-research/locomo /tmp/locomo
    python bench/locomo_data.py /tmp/locomo/data --out .locomo

The source is the repository's ``data`` folder, its ``locomo10.json`` (a list of ten
conversations, each ``{sample_id, conversation, qa, ...}``) or a zip of it. Each conversation
is written as ``.locomo/<n>.json`` (``conv-26`` -> ``26.json``); by default only the seven of
the benchmark's tuning and validation splits (``SPLITS`` in bench/locomo.py), ``--all`` for
every one. Reads files only: nothing here touches the network.
"""

from __future__ import annotations

import argparse
import json
import sys
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

SPLIT_CONVERSATIONS = ("26", "30", "41", "42", "43", "44", "47")


def _documents(source: Path) -> Iterator[tuple[str, Any]]:
    """Every JSON document in ``source`` with its file's stem: a .json file, a .zip of them, or
    a folder of either."""
    if source.is_dir():
        for path in sorted(source.iterdir()):
            if path.suffix in (".json", ".zip"):
                yield from _documents(path)
    elif source.suffix == ".zip":
        with zipfile.ZipFile(source) as archive:
            for name in sorted(archive.namelist()):
                if name.endswith(".json") and not name.startswith("__MACOSX/"):
                    yield Path(name).stem, json.loads(archive.read(name).decode("utf-8"))
    else:
        yield source.stem, json.loads(source.read_text(encoding="utf-8"))


def conversations(source: Path) -> dict[str, dict[str, Any]]:
    """Conversation number -> conversation, from the layouts LoCoMo has been published in: a
    sample's ``sample_id`` names it, else a one-conversation file's numeric name (``26.json``,
    the layout this script writes)."""
    found: dict[str, dict[str, Any]] = {}
    for stem, document in _documents(source):
        for sample in document if isinstance(document, list) else [document]:
            if not isinstance(sample, dict) or "qa" not in sample:
                continue
            if "conversation" not in sample and "speaker_a" not in sample:
                continue
            sample_id = str(sample.get("sample_id") or "")
            if sample_id:
                number = sample_id.rsplit("-", 1)[-1]
            elif isinstance(document, dict) and stem.isdigit():
                number = stem
            else:
                number = str(len(found))
            found[number] = sample
    return found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path, help="snap-research/locomo's data folder, locomo10.json or a zip of it")
    parser.add_argument("--out", type=Path, default=Path(".locomo"), help="folder to write (default .locomo)")
    parser.add_argument("--all", action="store_true", help="every conversation, not only the seven benchmarked")
    args = parser.parse_args(argv)
    if not args.source.exists():
        print(f"locomo_data: {args.source}: no such file or folder (fetch it first, see --help)", file=sys.stderr)
        return 2
    found = conversations(args.source)
    wanted = sorted(found) if args.all else [n for n in SPLIT_CONVERSATIONS if n in found]
    missing = [] if args.all else [n for n in SPLIT_CONVERSATIONS if n not in found]
    if not wanted:
        print(f"locomo_data: no LoCoMo conversations in {args.source}", file=sys.stderr)
        return 1
    args.out.mkdir(parents=True, exist_ok=True)
    for number in wanted:
        (args.out / f"{number}.json").write_text(json.dumps(found[number], ensure_ascii=False), encoding="utf-8")
    print(f"wrote {len(wanted)} conversations to {args.out}: {', '.join(wanted)}"
          + (f" (missing from the source: {', '.join(missing)})" if missing else ""))
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())

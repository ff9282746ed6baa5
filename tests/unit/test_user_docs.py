"""The user docs say what the service does today, and this fails when they drift: no internal
issue numbers; Spectron explained wherever its name appears; keys' expiry, Document.version and
sizeBytes as they work; the README's deploy commands run the `sam` that `make tools` installs."""

from __future__ import annotations

import re
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[2]
USER_DOCS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md")), REPO / "clients" / "typescript" / "README.md"]
# "issue 30", "issues 12 and 14", "#71", "(i62)": the tracker's numbers mean nothing to a reader
ISSUE_REF = re.compile(r"\bissues? ?#?\d+|(?<![\w&/])#\d+\b|\(i\d+\)", re.IGNORECASE)


def _text(path: Path) -> str:
    return path.read_text(encoding="utf-8")


def _prose(text: str) -> str:
    """Markdown without fenced code and link targets (anchors like #L12 are not references)."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return re.sub(r"\]\([^)]*\)", "]", text)


def _descriptions(node: object) -> list[str]:
    if isinstance(node, dict):
        return [v for k, v in node.items() if k == "description" and isinstance(v, str)] + \
            [d for v in node.values() for d in _descriptions(v)]
    if isinstance(node, list):
        return [d for v in node for d in _descriptions(v)]
    return []


def test_user_docs_cite_no_issue_numbers() -> None:
    found = {str(p.relative_to(REPO)): ISSUE_REF.findall(_prose(_text(p))) for p in USER_DOCS}
    found["openapi.yaml"] = ISSUE_REF.findall(" ".join(_descriptions(yaml.safe_load(_text(REPO / "openapi.yaml")))))
    assert not {k: v for k, v in found.items() if v}, "say what changed, not which issue asked for it"


def test_every_doc_naming_spectron_says_what_it_is() -> None:
    readme = _text(REPO / "README.md")
    assert "## What is Spectron?" in readme and "SurrealDB" in readme.split("## What is Spectron?")[1][:400]
    # the TypeScript README travels in the npm tarball without the repository: it says it inline
    unexplained = [str(p.relative_to(REPO)) for p in USER_DOCS[1:] if "Spectron" in _text(p)
                   and "README.md#what-is-spectron" not in _text(p) and "SurrealDB's Agent Memory API" not in _text(p)]
    assert not unexplained, f"link the README's note where Spectron is named: {unexplained}"
    assert "Spectron, SurrealDB's Agent Memory API" in yaml.safe_load(_text(REPO / "openapi.yaml"))["info"]["description"]


def test_keys_expiry_and_document_fields_are_described_as_they_work() -> None:
    typescript = _text(REPO / "docs" / "typescript.md")
    assert "no expiry" not in typescript and "--ttl-seconds" in typescript
    document = yaml.safe_load(_text(REPO / "openapi.yaml"))["components"]["schemas"]["Document"]["properties"]
    assert "until re-ingestion exists" not in document["version"]["description"]
    assert "re-ingestion" in document["version"]["description"]
    assert "original" in document["sizeBytes"]["description"] and "same as size" not in document["sizeBytes"]["description"]
    assert "extracted" in document["size"]["description"]
    assert "until re-ingestion exists" not in _text(REPO / "docs" / "decisions.md")


def test_the_readme_deploys_with_the_sam_make_tools_installs() -> None:
    makefile = _text(REPO / "Makefile")
    tools = re.search(r"^TOOLS := (\S+)$", makefile, re.MULTILINE).group(1)
    assert re.search(r"^SAM := \$\(TOOLS\)/bin/sam$", makefile, re.MULTILINE)
    deploy = _text(REPO / "README.md").split("## Deploy", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```sh\n(.*?)```", deploy, flags=re.DOTALL)[0]
    assert commands.splitlines()[0].startswith("make tools")
    bare = [line for line in commands.splitlines() if re.search(r"(^|&& )sam ", line)]
    assert not bare, f"`sam` is not on PATH after make tools: {bare}"
    assert f"{tools}/bin/sam build" in commands and f"{tools}/bin/sam deploy" in commands

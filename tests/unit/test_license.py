"""The license is declared wherever a package is built from this repository, and every
third-party package the Lambda layer ships is listed with its license in THIRD_PARTY_NOTICES.md."""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TS = REPO / "clients" / "typescript"
SPDX = "Apache-2.0"


def test_the_license_file_is_the_apache_license_and_the_typescript_package_has_the_same_copy() -> None:
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert "Apache License" in text and "Version 2.0, January 2004" in text and "END OF TERMS AND CONDITIONS" in text
    assert (TS / "LICENSE").read_text(encoding="utf-8") == text


def test_both_packages_declare_the_license() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == SPDX
    assert set(project["license-files"]) == {"LICENSE", "THIRD_PARTY_NOTICES.md"}
    assert all((REPO / name).is_file() for name in project["license-files"])
    package = json.loads((TS / "package.json").read_text(encoding="utf-8"))
    assert package["license"] == SPDX and not package.get("private")


def _layer_packages() -> set[str]:
    lines = (REPO / "shared" / "requirements.txt").read_text(encoding="utf-8").splitlines()
    return {re.split(r"[=<>;\s\[]", line.strip(), maxsplit=1)[0].lower()
            for line in lines if line.strip() and not line.lstrip().startswith("#")}


def test_every_layer_package_is_listed_with_a_license() -> None:
    notices = (REPO / "THIRD_PARTY_NOTICES.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| ([a-z0-9][a-z0-9._-]*) \| ([^|]+?) \|$", notices, flags=re.MULTILINE))
    missing = _layer_packages() - set(rows)
    assert not missing, f"add these layer packages and their licenses to THIRD_PARTY_NOTICES.md: {sorted(missing)}"
    unlicensed = {name for name, lic in rows.items() if not re.fullmatch(r"[A-Za-z0-9.+-]+( (AND|OR) [A-Za-z0-9.+-]+)*", lic)}
    assert not unlicensed, f"give these an SPDX license: {sorted(unlicensed)}"


def test_every_direct_dependency_of_the_shipped_extras_is_listed() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    extras = project["optional-dependencies"]
    names = {re.split(r"[=<>;\s\[]", dep, maxsplit=1)[0].lower()
             for dep in [*project["dependencies"], *(d for extra in ("server", "mcp", "cli", "ann", "semantic")
                                                     for d in extras[extra])]}
    notices = (REPO / "THIRD_PARTY_NOTICES.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| ([a-z0-9][a-z0-9._-]*) \| [^|]+ \|$", notices, flags=re.MULTILINE))
    missing = {n for n in names if n.replace("_", "-") not in listed}
    assert not missing, f"add these dependencies and their licenses to THIRD_PARTY_NOTICES.md: {sorted(missing)}"


def test_the_served_swagger_ui_and_its_package_are_noted() -> None:
    notices = (REPO / "THIRD_PARTY_NOTICES.md").read_text(encoding="utf-8")
    from agent_memory.interfaces.reference import _VENDORED

    assert "swagger-ui-bundle" in notices and all(name in notices for name in ("swagger-ui-bundle.js", "swagger-ui.css"))
    assert _VENDORED  # the files /docs serves come from that package

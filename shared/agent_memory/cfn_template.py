"""Reads template.yaml, the one source of infrastructure truth, for the local server
(route -> function wiring) and tests (the DynamoDB table definition).

CloudFormation short-form tags (``!Ref``, ``!Sub``, ``!If``...) are loaded as
``{"Ref": ...}`` / ``{"Fn::Sub": ...}`` dicts, as CloudFormation itself reads them.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

# libyaml's parser when the wheel has it (several times faster on a 1,000-line template).
_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _CfnLoader(_BaseLoader):  # type: ignore[valid-type,misc]
    pass


def _construct(tag: str):
    key = tag if tag == "Ref" or tag == "Condition" else f"Fn::{tag}"

    def construct(loader: yaml.SafeLoader, node: yaml.Node) -> dict[str, Any]:
        if isinstance(node, yaml.ScalarNode):
            value: Any = loader.construct_scalar(node)
            if tag == "GetAtt" and isinstance(value, str):
                value = value.split(".", 1)
        elif isinstance(node, yaml.SequenceNode):
            value = loader.construct_sequence(node, deep=True)
        else:
            value = loader.construct_mapping(node, deep=True)
        return {key: value}

    return construct


for _tag in ("Ref", "Condition", "Sub", "If", "GetAtt", "Join", "Select", "Split", "Equals", "Not",
             "And", "Or", "FindInMap", "Base64", "Cidr", "ImportValue", "GetAZs", "Transform"):
    _CfnLoader.add_constructor(f"!{_tag}", _construct(_tag))


_parsed: dict[tuple[str, str, int, int], Any] = {}


def _load_cached(path: str | Path, loader: type) -> Any:
    """Parsed once per file version (every test runtime and local server start reads the
    template and the spec); callers get a fresh copy they may change."""
    resolved = Path(path).resolve()
    stat = resolved.stat()
    key = (loader.__name__, str(resolved), stat.st_mtime_ns, stat.st_size)
    if key not in _parsed:
        with open(resolved, encoding="utf-8") as fh:
            _parsed[key] = yaml.load(fh, Loader=loader)  # noqa: S506 - SafeLoader subclasses
    return copy.deepcopy(_parsed[key])


def load_template(path: str | Path) -> dict[str, Any]:
    return _load_cached(path, _CfnLoader)


def load_openapi(path: str | Path) -> dict[str, Any]:
    """openapi.yaml (plain YAML, no CloudFormation tags)."""
    return _load_cached(path, _BaseLoader)


def repo_root() -> Path:
    """The directory holding template.yaml and openapi.yaml (the repo root in a checkout,
    the Lambda task root when deployed)."""
    here = Path(__file__).resolve()
    for parent in here.parents:
        if (parent / "template.yaml").exists() and (parent / "openapi.yaml").exists():
            return parent
    return Path.cwd()


def function_handler(template: dict[str, Any], props: dict[str, Any]) -> str:
    """A function's handler as a repo path (``functions/<area>/app.lambda_handler``): its
    ``CodeUri`` folder (the artifact's task root) joined with its (or Globals') ``Handler``."""
    handler = props.get("Handler") or template.get("Globals", {}).get("Function", {}).get("Handler")
    code_uri = str(props.get("CodeUri", ".")).strip("/").removeprefix("./")
    return handler if code_uri in ("", ".") else f"{code_uri}/{handler}"


def function_routes(template: dict[str, Any]) -> dict[tuple[str, str], str]:
    """``{(METHOD, path): handler}`` from every function's HttpApi events."""
    routes: dict[tuple[str, str], str] = {}
    for res in template.get("Resources", {}).values():
        if res.get("Type") != "AWS::Serverless::Function":
            continue
        props = res.get("Properties", {})
        for event in (props.get("Events") or {}).values():
            if event.get("Type") != "HttpApi":
                continue
            ep = event.get("Properties", {})
            routes[(ep["Method"].upper(), ep["Path"])] = function_handler(template, props)
    return routes

"""Reads template.yaml, the one source of infrastructure truth, for the local server
(route -> function wiring) and tests (the DynamoDB table definition).

CloudFormation short-form tags (``!Ref``, ``!Sub``, ``!If``...) are loaded as
``{"Ref": ...}`` / ``{"Fn::Sub": ...}`` dicts, as CloudFormation itself reads them.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml


class _CfnLoader(yaml.SafeLoader):
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


def load_template(path: str | Path) -> dict[str, Any]:
    with open(path, encoding="utf-8") as fh:
        return yaml.load(fh, Loader=_CfnLoader)  # noqa: S506 - SafeLoader subclass


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

"""openapi.yaml is the wire contract, template.yaml the wiring: they must agree with each
other and with the routes each function's resolver registers."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import yaml
from openapi_spec_validator import validate

from agent_memory.cfn_template import function_handler, function_routes, load_template

REPO = Path(__file__).resolve().parents[2]
METHODS = {"get", "post", "put", "delete", "patch"}


def openapi_operations() -> set[tuple[str, str]]:
    spec = yaml.safe_load((REPO / "openapi.yaml").read_text())
    return {(m.upper(), path) for path, item in spec["paths"].items() for m in item if m in METHODS}


def test_openapi_is_valid():
    validate(yaml.safe_load((REPO / "openapi.yaml").read_text()))


def test_every_operation_is_wired_to_exactly_one_function_and_back():
    template = load_template(REPO / "template.yaml")
    wired: dict[tuple[str, str], list[str]] = {}
    for res in template["Resources"].values():
        if res["Type"] != "AWS::Serverless::Function":
            continue
        for event in (res["Properties"].get("Events") or {}).values():
            if event["Type"] == "HttpApi":
                key = (event["Properties"]["Method"].upper(), event["Properties"]["Path"])
                wired.setdefault(key, []).append(function_handler(template, res["Properties"]))
    assert {k: v for k, v in wired.items() if len(v) != 1} == {}
    assert openapi_operations() == set(wired)


def _resolver_routes(handler: str) -> set[tuple[str, str]]:
    module_path = handler.rpartition(".")[0]
    spec = importlib.util.spec_from_file_location(f"_route_check_{module_path.replace('/', '_')}",
                                                  REPO / f"{module_path}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    routes = set()
    for route in module.app._static_routes + module.app._dynamic_routes:
        path = re.sub(r"<(\w+)>", r"{\1}", route.path)
        routes.add((route.method.upper(), path))
    return routes


def test_every_handler_route_is_in_openapi_and_served_by_its_wired_function():
    wired = function_routes(load_template(REPO / "template.yaml"))
    handlers = set(wired.values())
    served: dict[tuple[str, str], str] = {}
    for handler in handlers:
        for route in _resolver_routes(handler):
            served[route] = handler
    assert set(served) - openapi_operations() == set(), "handler routes missing from openapi.yaml"
    for key, handler in wired.items():
        assert served.get(key) == handler, f"{key} is wired to {handler} but that function does not serve it"


def test_every_function_directory_is_wired():
    wired_dirs = {h.split("/")[1] for h in function_routes(load_template(REPO / "template.yaml")).values()}
    template = load_template(REPO / "template.yaml")
    all_handlers = {function_handler(template, r["Properties"]).split("/")[1]
                    for r in template["Resources"].values() if r["Type"] == "AWS::Serverless::Function"}
    on_disk = {p.parent.name for p in (REPO / "functions").glob("*/app.py")}
    assert on_disk == all_handlers
    assert wired_dirs <= on_disk


def test_cfn_lint_passes():
    result = subprocess.run([str(Path(sys.executable).parent / "cfn-lint"), str(REPO / "template.yaml")],
                            capture_output=True, text=True)
    assert result.returncode == 0, result.stdout + result.stderr

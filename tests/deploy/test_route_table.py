"""README.md's route table is tests/deploy/route_table.py's, from openapi.yaml and template.yaml."""

from __future__ import annotations

import route_table
import yaml


def test_the_readme_route_table_is_the_scripts():
    assert route_table.current() == route_table.render(), "run python tests/deploy/route_table.py --write"


def test_the_table_names_every_method_and_path_of_openapi_yaml():
    spec = yaml.safe_load((route_table.REPO / "openapi.yaml").read_text(encoding="utf-8"))
    listed = {(m, p) for _, routes in route_table.rows() for m, p in routes}
    every = {(m.upper(), p) for p, item in spec["paths"].items() for m in route_table.METHODS if m in item}
    assert listed == every


def test_a_route_left_out_is_caught(monkeypatch):
    rows = route_table.rows()
    area, routes = rows[0]
    monkeypatch.setattr(route_table, "rows", lambda: [(area, routes[1:]), *rows[1:]])
    assert route_table.current() != route_table.render()

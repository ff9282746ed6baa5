"""The layer's pinned requirements agree with pyproject.toml's server dependencies (less
those only the local server imports)."""

from __future__ import annotations

from layer_pins import LOCAL_ONLY, PINS, layer_requirements, read_pins, server_requirements
from packaging.utils import canonicalize_name
from packaging.version import Version


def test_every_server_dependency_is_pinned_within_its_range():
    pins = read_pins()
    for req in layer_requirements():
        name = canonicalize_name(req.name)
        assert name in pins, f"{req.name} is a server dependency but the layer does not pin it"
        version, via = pins[name]
        assert via == [], f"{req.name} is a top-level dependency; its pin must not say 'via'"
        assert req.specifier.contains(Version(version), prereleases=True), f"{name}=={version} is outside {req}"


def test_what_only_the_local_server_imports_is_not_pinned():
    pins = read_pins()
    assert LOCAL_ONLY <= {canonicalize_name(r.name) for r in server_requirements()}
    assert not LOCAL_ONLY & set(pins), "the local server's own dependencies must not ship in the layer"
    assert "click" not in pins, "only uvicorn pulls in click"


def test_every_other_pin_is_pulled_in_by_a_pinned_package():
    pins = read_pins()
    top = {canonicalize_name(r.name) for r in layer_requirements()}
    for name, (version, via) in pins.items():
        assert version, f"{name} is not pinned with =="
        if name not in top:
            assert via and set(via) <= set(pins), f"{name} is pinned but nothing pinned needs it: {via}"


def test_pins_are_exact_and_listed_once():
    lines = [line.split("#")[0].strip() for line in PINS.read_text().splitlines()]
    specs = [line for line in lines if line]
    assert all("==" in s and not set(s) & set("<>~!;") for s in specs)
    assert len(specs) == len({canonicalize_name(s.split("==")[0]) for s in specs})


def test_grpc_and_protobufs_do_not_ship():
    assert not {"grpcio", "protobuf", "opensearch-protobufs"} & set(read_pins())

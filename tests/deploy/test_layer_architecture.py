"""The static architecture check of a built layer (layer_arch.py) on layers made here: it finds
an x86_64 extension module or wheel in an arm64 layer and the other way round, and passes a
layer whose native code and wheel tags all match. The built layers themselves are checked in
test_built_layer.py (after `make sam-build`)."""

from __future__ import annotations

from pathlib import Path

import pytest
from layer_arch import E_MACHINE, elf_machine, problems

from agent_memory.cfn_template import load_template

REPO = Path(__file__).resolve().parents[2]


def _elf(machine: int, little: bool = True) -> bytes:
    ident = b"\x7fELF" + bytes([2, 1 if little else 2, 1, 0]) + bytes(8)
    order = "little" if little else "big"
    return ident + (3).to_bytes(2, order) + machine.to_bytes(2, order) + bytes(44)


def _layer(tmp_path: Path, arch: str, so_machine: int, tag: str) -> Path:
    layer = tmp_path / arch / "python"
    (layer / "fastpkg").mkdir(parents=True)
    (layer / "fastpkg" / "__init__.py").write_text("")
    (layer / "fastpkg" / "_speed.cpython-311-linux-gnu.so").write_bytes(_elf(so_machine))
    (layer / "fastpkg.libs").mkdir()
    (layer / "fastpkg.libs" / "libopenblas-r0.so.0").write_bytes(_elf(so_machine))
    for dist, tags in (("fastpkg-1.0.dist-info", [tag]), ("purepkg-2.0.dist-info", ["py3-none-any"])):
        (layer / dist).mkdir()
        (layer / dist / "WHEEL").write_text("Wheel-Version: 1.0\nRoot-Is-Purelib: false\n"
                                            + "".join(f"Tag: {t}\n" for t in tags))
    return layer


@pytest.mark.parametrize("arch, machine, tag", [
    ("x86_64", 62, "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"),
    ("arm64", 183, "cp311-cp311-manylinux_2_17_aarch64.manylinux2014_aarch64"),
])
def test_a_layer_built_for_its_architecture_passes(tmp_path, arch, machine, tag):
    assert problems(_layer(tmp_path, arch, machine, tag), arch) == []


def test_x86_64_code_in_the_arm64_layer_is_found(tmp_path):
    layer = _layer(tmp_path, "arm64", 62, "cp311-cp311-manylinux2014_x86_64")
    found = problems(layer, "arm64")
    assert any("_speed.cpython-311-linux-gnu.so: ELF e_machine 62, not 183" in p for p in found)
    assert any(p.startswith("fastpkg.libs/libopenblas-r0.so.0:") for p in found), "vendored libraries too"
    assert any("fastpkg-1.0.dist-info: tag cp311-cp311-manylinux2014_x86_64: platform" in p for p in found)


def test_arm64_code_in_the_x86_64_layer_is_found(tmp_path):
    found = problems(_layer(tmp_path, "x86_64", 183, "cp311-cp311-manylinux2014_aarch64"), "x86_64")
    assert len([p for p in found if "ELF e_machine 183, not 62" in p]) == 2
    assert any("platform manylinux2014_aarch64" in p for p in found)


@pytest.mark.parametrize("tag, why", [
    ("cp312-cp312-manylinux2014_aarch64", "python tag cp312"),
    ("cp311-cp311-macosx_11_0_arm64", "platform macosx_11_0_arm64"),
    ("cp311-cp311-manylinux_2_34_aarch64", "no tag for glibc 2.26"),
])
def test_a_wheel_for_another_interpreter_platform_or_glibc_is_found(tmp_path, tag, why):
    found = problems(_layer(tmp_path, "arm64", 183, tag), "arm64")
    assert any(why in p for p in found), found


def test_elf_headers_are_read_in_their_byte_order(tmp_path):
    big, text = tmp_path / "big.so", tmp_path / "not-elf.so"
    big.write_bytes(_elf(E_MACHINE["arm64"], little=False))
    text.write_text("INPUT(libfoo.so.1)\n")  # a linker script named .so
    assert elf_machine(big) == 183 and elf_machine(text) is None


def test_a_layer_without_wheel_metadata_is_not_passed(tmp_path):
    (tmp_path / "python").mkdir()
    assert problems(tmp_path / "python", "x86_64") == ["no .dist-info/WHEEL files"]


def test_the_template_builds_a_layer_per_architecture_and_uses_the_chosen_one():
    template = load_template(REPO / "template.yaml")
    param = template["Parameters"]["Architecture"]
    assert param["Default"] == "x86_64" and param["AllowedValues"] == ["x86_64", "arm64"]
    glob = template["Globals"]["Function"]
    assert glob["Architectures"] == [{"Ref": "Architecture"}]
    assert glob["Layers"] == [{"Fn::If": ["IsArm64", {"Ref": "DependenciesLayerArm64"}, {"Ref": "DependenciesLayer"}]}]
    makefile = (REPO / "shared" / "Makefile").read_text()
    for name, arch, condition in (("DependenciesLayer", "x86_64", "IsX86"), ("DependenciesLayerArm64", "arm64", "IsArm64")):
        layer = template["Resources"][name]
        assert layer["Condition"] == condition
        assert layer["Properties"]["CompatibleArchitectures"] == [arch]
        assert layer["Metadata"] == {"BuildMethod": "makefile", "BuildArchitecture": arch}
        assert f"build-{name}" in makefile
    assert "build-DependenciesLayerArm64: LAYER_ARCH = arm64" in makefile
    assert "PLATFORM_arm64 := manylinux2014_aarch64" in makefile

"""Which instruction set a built layer's native code is for, read without importing it.

An arm64 layer cannot be imported on the x86_64 machines that run the checks, so its check is
static: every ELF file (extension modules and the shared libraries wheels vendor, whatever
their names) has the ELF header's ``e_machine`` of the layer's architecture, and every
installed wheel's ``.dist-info/WHEEL`` tags are for CPython 3.11 on that platform or pure
Python. ``problems(layer, arch)`` lists what is wrong; an empty list is a good layer.
"""

from __future__ import annotations

from pathlib import Path

ELF_MAGIC = b"\x7fELF"
# ELF e_machine values (System V ABI): EM_X86_64 and EM_AARCH64.
E_MACHINE = {"x86_64": 62, "arm64": 183}
# The wheel platform tag's machine for each Lambda architecture.
WHEEL_MACHINE = {"x86_64": "x86_64", "arm64": "aarch64"}
PYTHON_TAGS = {"py3", "py2", "cp311"}  # the interpreter tags a CPython 3.11 may load
ABI_TAGS = {"none", "abi3", "cp311"}
# The python3.11 runtime runs on Amazon Linux 2: glibc 2.26.
LAMBDA_GLIBC = (2, 26)
LEGACY_MANYLINUX = {"manylinux1": (2, 5), "manylinux2010": (2, 12), "manylinux2014": (2, 17)}


def elf_machine(path: Path) -> int | None:
    """The ELF header's ``e_machine`` of ``path``, or None when it is not an ELF file."""
    with open(path, "rb") as f:
        head = f.read(20)
    if len(head) < 20 or head[:4] != ELF_MAGIC:
        return None
    order = "little" if head[5] == 1 else "big"  # EI_DATA: 1 = little-endian, 2 = big
    return int.from_bytes(head[18:20], order)


def elf_files(layer: Path) -> dict[Path, int]:
    """Every ELF file under ``layer`` with its ``e_machine``."""
    found = {}
    for path in layer.rglob("*"):
        if path.is_file() and not path.is_symlink():
            machine = elf_machine(path)
            if machine is not None:
                found[path.relative_to(layer)] = machine
    return found


def wheel_tags(layer: Path) -> dict[str, list[str]]:
    """``{dist-info folder: [python-abi-platform tag, ...]}`` from each ``WHEEL`` file."""
    tags = {}
    for wheel in sorted(layer.glob("*.dist-info/WHEEL")):
        lines = wheel.read_text().splitlines()
        tags[wheel.parent.name] = [line.split(":", 1)[1].strip() for line in lines if line.startswith("Tag:")]
    return tags


def tag_problem(tag: str, arch: str) -> str | None:
    """Why a wheel tag cannot run on CPython 3.11 on Lambda's ``arch``, or None when it can."""
    parts = tag.split("-")
    if len(parts) != 3:
        return "not a python-abi-platform tag"
    python, abi, platform = parts
    if not ({p for p in python.split(".")} & PYTHON_TAGS):
        return f"python tag {python}"
    if not ({a for a in abi.split(".")} & ABI_TAGS):
        return f"abi tag {abi}"
    if platform == "any":
        return None
    machines = {p for p in platform.split(".")}
    if not machines or not all(p.startswith("manylinux") and p.endswith("_" + WHEEL_MACHINE[arch]) for p in machines):
        return f"platform {platform}"
    return None


def glibc(platform: str) -> tuple[int, int] | None:
    """The glibc a manylinux platform tag needs (``manylinux_2_17_aarch64`` -> (2, 17))."""
    for legacy, version in LEGACY_MANYLINUX.items():
        if platform.startswith(legacy + "_"):
            return version
    parts = platform.split("_")
    if parts[0] == "manylinux" and len(parts) > 3 and parts[1].isdigit() and parts[2].isdigit():
        return int(parts[1]), int(parts[2])
    return None


def problems(layer: Path, arch: str) -> list[str]:
    """What in ``layer`` is not for ``arch`` (x86_64 or arm64): ELF files of another
    instruction set and wheels tagged for another interpreter or platform."""
    out = []
    expected = E_MACHINE[arch]
    for path, machine in sorted(elf_files(layer).items()):
        if machine != expected:
            out.append(f"{path}: ELF e_machine {machine}, not {expected} ({arch})")
    tags = wheel_tags(layer)
    if not tags:
        out.append("no .dist-info/WHEEL files")
    for dist, dist_tags in tags.items():
        if not dist_tags:
            out.append(f"{dist}: WHEEL has no Tag")
        for tag in dist_tags:
            why = tag_problem(tag, arch)
            if why:
                out.append(f"{dist}: tag {tag}: {why}")
        platforms = [t.split("-")[-1] for t in dist_tags if not t.endswith("-any")]
        needs = [glibc(p) for p in platforms]
        if platforms and not any(n is not None and n <= LAMBDA_GLIBC for n in needs):
            out.append(f"{dist}: no tag for glibc {LAMBDA_GLIBC[0]}.{LAMBDA_GLIBC[1]} (Lambda's python3.11)")
    return out

"""Powertools' API Gateway resolver without the rest of its event handler package.

``aws_lambda_powertools.event_handler/__init__.py`` imports every resolver it ships (AppSync,
whose module imports asyncio; AppSync Events; Bedrock agents; VPC Lattice; Lambda function
URLs; the HTTP resolver), and ``utilities.data_classes/__init__.py``, which the API Gateway
resolver imports its event classes from, imports every event source's data class (some 60
modules). Importing ``event_handler.api_gateway`` runs both first: about a third of an HTTP
function's cold import, for classes no function uses (issue 30).

Importing this module registers both packages in ``sys.modules`` from their own specs
without running their ``__init__``, then imports ``event_handler.api_gateway``, the one
resolver module the functions use, whose ``APIGatewayHttpResolver`` and ``Response`` it
re-exports. A deferred package answers any other name on first use (PEP 562 ``__getattr__``):
a submodule is imported as usual; a name its ``__init__`` imports from one of its submodules
(``from .alb_event import ALBEvent``, read from the ``__init__``'s source) is taken from that
submodule alone; any other name runs the real ``__init__`` then. So code that imports from
either package still gets what it asks for, paying for the rest only when it needs it. Where
a package is already imported, or is not a plain package with a readable ``__init__`` (another
Powertools layout), it is imported as usual.
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import sys
import threading
from pathlib import Path

PACKAGES = ("aws_lambda_powertools.event_handler", "aws_lambda_powertools.utilities.data_classes")
_lock = threading.RLock()


def _exported_from_submodules(package: str, init: Path) -> dict[str, str]:
    """``{name: submodule}`` for each ``from .sub import name`` (or the absolute spelling) at
    the top of the package's ``__init__``."""
    names: dict[str, str] = {}
    for node in ast.parse(init.read_text(encoding="utf-8")).body:
        if not isinstance(node, ast.ImportFrom) or not node.module:
            continue
        if node.level == 1:
            module = f"{package}.{node.module}"
        elif node.level == 0 and node.module.startswith(package + "."):
            module = node.module
        else:
            continue
        for alias in node.names:
            names[alias.asname or alias.name] = module
    return names


def _defer(package: str) -> None:
    """Puts ``package`` in ``sys.modules`` with its ``__init__`` not yet run."""
    spec = importlib.util.find_spec(package)  # imports its parents
    if package in sys.modules or spec is None or spec.loader is None or not spec.submodule_search_locations \
            or not spec.origin or not spec.origin.endswith("__init__.py") or not Path(spec.origin).is_file():
        return
    exported = _exported_from_submodules(package, Path(spec.origin))
    module = importlib.util.module_from_spec(spec)
    ran = False

    def __getattr__(name: str) -> object:  # noqa: N807 - PEP 562's module hook
        nonlocal ran
        if name.startswith("__") or ran:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        if name in exported:  # one submodule's class: that submodule alone
            value = getattr(importlib.import_module(exported[name]), name)
            setattr(module, name, value)
            return value
        if importlib.util.find_spec(f"{package}.{name}") is not None:
            return importlib.import_module(f"{package}.{name}")
        with _lock:  # a name only the __init__ itself defines: run it now, once
            if not ran:
                ran = True
                module.__dict__.pop("__getattr__", None)
                spec.loader.exec_module(module)  # type: ignore[union-attr]
        return getattr(module, name)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[package] = module
    parent, _, child = package.rpartition(".")
    setattr(sys.modules[parent], child, module)


with _lock:
    for _package in PACKAGES:
        if _package not in sys.modules:
            _defer(_package)

from aws_lambda_powertools.event_handler.api_gateway import APIGatewayHttpResolver, Response  # noqa: E402

__all__ = ["APIGatewayHttpResolver", "Response"]

"""Powertools' API Gateway resolver without the rest of its event handler package.

``aws_lambda_powertools.event_handler/__init__.py`` imports every resolver it ships (AppSync,
whose module imports asyncio; AppSync Events; Bedrock agents; VPC Lattice; Lambda function
URLs; the HTTP resolver), and importing ``event_handler.api_gateway`` runs that ``__init__``
first: about a third of an HTTP function's cold import, for classes no function uses (issue 30).

Importing this module registers the package in ``sys.modules`` from its own spec without running its
``__init__``, then imports ``event_handler.api_gateway``, the one resolver module the functions
use, whose ``APIGatewayHttpResolver`` and ``Response`` it re-exports. The package module answers any other name on first use (PEP 562 ``__getattr__``): a
submodule is imported as usual, and any name the ``__init__`` exports (``AppSyncResolver``)
runs the real ``__init__`` then, so code that imports from the package still works, paying
the full import only when it does. Where the package is already imported, or its spec is not
a plain package (another Powertools layout), it is imported as usual.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading

PACKAGE = "aws_lambda_powertools.event_handler"
_lock = threading.Lock()


def _deferred_package() -> None:
    """Puts ``PACKAGE`` in ``sys.modules`` with its ``__init__`` not yet run."""
    spec = importlib.util.find_spec(PACKAGE)  # imports aws_lambda_powertools (Logger, Metrics)
    if PACKAGE in sys.modules or spec is None or spec.loader is None or not spec.submodule_search_locations:
        return
    module = importlib.util.module_from_spec(spec)
    ran = False

    def __getattr__(name: str) -> object:  # noqa: N807 - PEP 562's module hook
        nonlocal ran
        if name.startswith("__") or ran:
            raise AttributeError(f"module {PACKAGE!r} has no attribute {name!r}")
        if importlib.util.find_spec(f"{PACKAGE}.{name}") is not None:
            return importlib.import_module(f"{PACKAGE}.{name}")
        with _lock:  # a name only the __init__ defines: run it now, once
            if not ran:
                ran = True
                module.__dict__.pop("__getattr__", None)
                spec.loader.exec_module(module)  # type: ignore[union-attr]
        return getattr(module, name)

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[PACKAGE] = module
    sys.modules["aws_lambda_powertools"].event_handler = module


with _lock:
    if PACKAGE not in sys.modules:
        _deferred_package()

from aws_lambda_powertools.event_handler.api_gateway import APIGatewayHttpResolver, Response  # noqa: E402

__all__ = ["APIGatewayHttpResolver", "Response"]

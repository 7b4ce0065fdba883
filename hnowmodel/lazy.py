"""A package's names imported on first use (PEP 562): ``hnowmodel``, ``hnowmodel.jobs`` and ``hnowmodel.export``
give their public names this way, so a rank process or one ``hnow`` command imports only the modules it uses.

>>> import types
>>> pkg = types.ModuleType("demo")
>>> pkg.__getattr__, pkg.__dir__ = lazy_names("demo", {"dumps": ("json", "dumps")}, ["dumps"], vars(pkg))
>>> pkg.dumps([1])
'[1]'
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Iterable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str,
    where: Mapping[str, tuple[str, str | None]],
    public: Iterable[str],
    namespace: MutableMapping[str, Any],
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The ``__getattr__`` and ``__dir__`` of ``package``: NAME is imported from ``where[NAME]`` = (module,
    attribute; None: the module itself; a relative module is taken from ``package``) on first use and kept in
    ``namespace`` (the package's globals); ``__dir__`` lists ``namespace`` and ``public``."""
    names = list(public)

    def __getattr__(name: str) -> Any:
        if name not in where:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        module, attr = where[name]
        value = importlib.import_module(module, package)
        if attr is not None:
            value = getattr(value, attr)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(names))

    return __getattr__, __dir__

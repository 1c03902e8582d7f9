"""numba's on-disk cache of the core's kernels, keyed on the record layout as well as the source.

numba keys a cached kernel on its own source file alone, but the kernels bake in the
offsets and tables of :mod:`.layout` (and, through it, the observation layout) when they
compile: after a layout change, a cache keyed on ``kernels.py`` alone would load kernels
that read and write the old offsets. Here the cache of every kernel in this package is
stamped with :data:`LAYOUT_FINGERPRINT`, a hash of every value the layout exports, so a
layout change recompiles the kernels by itself.

:func:`install` must run before any kernel is decorated (numba picks a kernel's cache
locator then): importing this module runs it, and the package's ``__init__`` imports this
module before any other of the package.
"""

from __future__ import annotations

import hashlib
import os
from types import ModuleType
from typing import Any

import numpy as np
from numba.core import caching
from numba.core.caching import _CacheLocator

from . import layout

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: Where numba lists its cache locators, tried in order (``_CacheImpl`` in older numba).
_LOCATORS: list[Any] = (vars(caching).get("CacheImpl") or vars(caching)["_CacheImpl"])._locator_classes


def layout_fingerprint(module: ModuleType) -> str:
    """A hash of every public constant of ``module`` (ints, tuples and arrays, by name)."""
    digest = hashlib.sha256()
    for name in sorted(vars(module)):
        value = getattr(module, name)
        if name.startswith("_") or not isinstance(value, (int, tuple, np.ndarray)):
            continue
        digest.update(name.encode())
        if isinstance(value, np.ndarray):
            digest.update(f"{value.dtype.str}{value.shape}".encode())
            digest.update(np.ascontiguousarray(value).tobytes())
        else:
            digest.update(repr(value).encode())
    return digest.hexdigest()


#: The layout the kernels of this process compile against.
LAYOUT_FINGERPRINT = layout_fingerprint(layout)


class LayoutKeyedLocator(_CacheLocator):
    """The cache locator numba would choose for a function of this package, its source stamp
    paired with :data:`LAYOUT_FINGERPRINT`: a cache saved under another layout is stale."""

    def __init__(self, inner: _CacheLocator) -> None:
        self._inner = inner

    def ensure_cache_path(self) -> None:
        self._inner.ensure_cache_path()

    def get_cache_path(self) -> str:
        return self._inner.get_cache_path()

    def get_source_stamp(self) -> Any:
        return (self._inner.get_source_stamp(), LAYOUT_FINGERPRINT)

    def get_disambiguator(self) -> str:
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> LayoutKeyedLocator | None:
        if os.path.dirname(os.path.abspath(py_file)) != _PACKAGE_DIR:
            return None  # not a kernel of this package: numba's own locators serve it
        for locator_class in _LOCATORS:
            if locator_class is not cls:
                inner = locator_class.from_function(py_func, py_file)
                if inner is not None:
                    return cls(inner)
        return None


def install() -> None:
    """Put :class:`LayoutKeyedLocator` first among numba's cache locators (once)."""
    if LayoutKeyedLocator not in _LOCATORS:
        _LOCATORS.insert(0, LayoutKeyedLocator)


install()

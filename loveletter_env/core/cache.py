"""numba's on-disk cache of compiled code that uses the core, keyed on the record layout and
the core's source as well as on the function's own source.

numba keys a cached function on its own source file alone, but compiled code that uses
the core carries more than its file: the offsets and tables of :mod:`.layout` (and,
through it, the observation layout), baked in as constants, and the compiled code of the
core functions it calls (``kernels.deal_from_key`` carries ``sampling.pick``; the compiled
bots and ``tree`` carry ``kernels.play`` and the layout offsets). Keyed on its own file
alone, a cache saved before a change to the layout or to the core loaded code that read
the old offsets or ran the old functions. Here the cache of every function of this
package (``loveletter_env``), and of any other whose module uses it, is stamped with
:data:`CACHE_KEY`, a hash of every value the layout exports and of the core's source, so
such a change recompiles them by itself.

A file of such a cache that cannot be read (garbage, cut short) is a miss, named in a
warning, and is overwritten, where numba raises in every later process.

:func:`install` must run before any such function is decorated (numba picks a function's
cache locator then): importing this module runs it, and the package's ``__init__``
imports this module before any other of the package.
"""

from __future__ import annotations

import atexit
import functools
import hashlib
import os
import pickle
import shutil
import tempfile
import warnings
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
from numba.core import caching
from numba.core.caching import _CacheLocator

from . import layout

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))
#: The top package (``loveletter_env``): its folder, and its name as modules spell it.
_ROOT_DIR = os.path.dirname(_PACKAGE_DIR)
_ROOT_NAME = __name__.split(".")[0]
#: The sources compiled code that uses the core is made of besides its own: the core's
#: modules, and ``cards.py``, whose card values the kernels bake in.
_CORE_SOURCES = tuple(
    sorted(os.path.join(_PACKAGE_DIR, name) for name in os.listdir(_PACKAGE_DIR) if name.endswith(".py"))
) + tuple(path for path in [os.path.join(_ROOT_DIR, "cards.py")] if os.path.isfile(path))
#: The folders :class:`LayoutKeyedLocator` chose: the caches in which an unreadable file is a
#: miss (see :func:`_miss_if_unreadable`), and, of those, the files already warned about.
_CACHE_PATHS: set[str] = set()
_WARNED: set[str] = set()
#: The private temporary folder of :class:`_TemporaryLocator` once made (None: not yet).
_FALLBACK_DIR: str | None = None
#: What unpickling a damaged file raises (garbage, a truncated or an empty file).
_UNREADABLE = (pickle.UnpicklingError, EOFError, ValueError, TypeError)
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


def sources_fingerprint(paths: tuple[str, ...]) -> str:
    """A hash of the contents of the files ``paths`` (each named, in the order given)."""
    digest = hashlib.sha256()
    for path in paths:
        with open(path, "rb") as f:
            digest.update(os.path.basename(path).encode() + b"\0" + f.read() + b"\0")
    return digest.hexdigest()


#: The layout the kernels of this process compile against.
LAYOUT_FINGERPRINT = layout_fingerprint(layout)
#: What a cached function that uses the core is keyed on besides its own source: the layout
#: and the core's source.
CACHE_KEY = hashlib.sha256(f"{LAYOUT_FINGERPRINT} {sources_fingerprint(_CORE_SOURCES)}".encode()).hexdigest()


def _uses_package(py_func: Any, py_file: str) -> bool:
    """Whether ``py_func`` (in ``py_file``) is of this package, or its module holds a module,
    function or class of it (``training``'s solvers call ``tree``'s compiled functions)."""
    if os.path.abspath(py_file).startswith(_ROOT_DIR + os.sep):
        return True
    for value in getattr(py_func, "__globals__", {}).values():
        name = value.__name__ if isinstance(value, ModuleType) else getattr(value, "__module__", None)
        if isinstance(name, str) and name.split(".")[0] == _ROOT_NAME:
            return True
    return False


class LayoutKeyedLocator(_CacheLocator):
    """The cache locator numba would choose for a function that uses the core, its source
    stamp paired with :data:`CACHE_KEY`: a cache saved under another layout or core is stale."""

    def __init__(self, inner: _CacheLocator) -> None:
        self._inner = inner

    def ensure_cache_path(self) -> None:
        self._inner.ensure_cache_path()

    def get_cache_path(self) -> str:
        return self._inner.get_cache_path()

    def get_source_stamp(self) -> Any:
        return (self._inner.get_source_stamp(), CACHE_KEY)

    def get_disambiguator(self) -> str:
        return self._inner.get_disambiguator()

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> LayoutKeyedLocator | None:
        if not _uses_package(py_func, py_file):
            return None  # no use of the core: numba's own locators serve it
        for locator_class in _LOCATORS:
            if locator_class is not cls:
                inner = locator_class.from_function(py_func, py_file)
                if inner is not None:
                    _CACHE_PATHS.add(inner.get_cache_path())
                    return cls(inner)
        inner = _TemporaryLocator.from_function(py_func, py_file)
        if inner is None:
            return None  # not a source file (numba's own locators say what they make of it)
        _CACHE_PATHS.add(inner.get_cache_path())
        return cls(inner)


class _TemporaryLocator(caching.UserProvidedCacheLocator):
    """numba's ``NUMBA_CACHE_DIR`` locator rooted in a private temporary folder of this
    process, for when no folder numba tries can be written (a read-only install with no
    writable ``NUMBA_CACHE_DIR`` or user cache folder): numba raised ``cannot cache function
    ...: no locator available`` on import. The kernels compile each process afresh there (the
    folder is removed at exit); a
    warning says to set ``NUMBA_CACHE_DIR``. Private (``mkdtemp``), not a fixed name another
    user could fill with cache files that unpickle into code."""

    def __init__(self, py_func: Any, py_file: str) -> None:
        super().__init__(py_func, py_file)
        self._cache_path = os.path.join(_fallback_dir(), self.get_suitable_cache_subpath(py_file))

    @classmethod
    def from_function(cls, py_func: Any, py_file: str) -> _TemporaryLocator | None:
        # numba's source-file locator checks, not UserProvidedCacheLocator's NUMBA_CACHE_DIR test.
        return super(caching.UserProvidedCacheLocator, cls).from_function(py_func, py_file)


def _fallback_dir() -> str:
    """:data:`_FALLBACK_DIR`, made (with its warning) on the first call."""
    global _FALLBACK_DIR
    if _FALLBACK_DIR is None:
        try:
            _FALLBACK_DIR = tempfile.mkdtemp(prefix="loveletter_env-numba-")
        except OSError as error:
            raise RuntimeError(
                "no folder can hold numba's cache of loveletter_env's compiled kernels (the package's "
                "__pycache__, the user cache folder and the temporary folder cannot be written): set "
                f"NUMBA_CACHE_DIR to a writable folder ({error})"
            ) from error
        atexit.register(shutil.rmtree, _FALLBACK_DIR, ignore_errors=True)
        warnings.warn(
            "no writable folder for numba's cache of loveletter_env's compiled kernels (the package's "
            f"__pycache__, NUMBA_CACHE_DIR and the user cache folder): compiling into {_FALLBACK_DIR} for "
            "this process only; set NUMBA_CACHE_DIR to a writable folder to compile once",
            RuntimeWarning,
            stacklevel=2,
        )
    return _FALLBACK_DIR


def _miss_if_unreadable(load: Callable[..., Any], miss: Any) -> Callable[..., Any]:
    """``load`` (a method of numba's ``IndexDataCacheFile`` that reads the index or a data
    file) returning ``miss`` for a file of one of :data:`_CACHE_PATHS` that cannot be
    unpickled, with a warning naming it: numba (0.68, numba#10434) raised the unpickling
    error instead, in every later process until someone deleted the file. The function
    compiles afresh and numba overwrites the file when it saves it."""

    @functools.wraps(load)
    def guarded(self: Any, *args: Any) -> Any:
        try:
            return load(self, *args)
        except _UNREADABLE as error:
            if self._cache_path not in _CACHE_PATHS:
                raise  # another library's cache: numba's behaviour
            path = os.path.join(self._cache_path, args[0] if args else self._index_name)
            if path not in _WARNED:
                _WARNED.add(path)
                warnings.warn(
                    f"numba cache file {path} is unreadable ({type(error).__name__}: {error}); compiling afresh "
                    "and overwriting it",
                    RuntimeWarning,
                    stacklevel=2,
                )
            return miss

    guarded.miss_if_unreadable = True  # type: ignore[attr-defined]
    return guarded


def install() -> None:
    """Put :class:`LayoutKeyedLocator` first among numba's cache locators, and make an
    unreadable file of its caches a miss (:func:`_miss_if_unreadable`), once."""
    if LayoutKeyedLocator not in _LOCATORS:
        _LOCATORS.insert(0, LayoutKeyedLocator)
    # numba's internals: a numba that names them otherwise keeps its own behaviour.
    files = getattr(caching, "IndexDataCacheFile", None)
    load_index, load_data = getattr(files, "_load_index", None), getattr(files, "_load_data", None)
    if load_index is not None and load_data is not None and not getattr(load_index, "miss_if_unreadable", False):
        files._load_index = _miss_if_unreadable(load_index, {})  # type: ignore[union-attr]
        files._load_data = _miss_if_unreadable(load_data, None)  # type: ignore[union-attr]


install()

"""Import an optional dependency, or fail with the ``pip install`` line that brings it."""

from __future__ import annotations

import importlib
from types import ModuleType

PACKAGE = "loveletter-env"


class MissingExtraError(ImportError):
    """An optional library is not installed; the message names the extra that installs it."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtraError` naming ``pip install "loveletter-env[extra]"``."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        raise MissingExtraError(
            f'{module!r} is not installed; it comes with the {extra!r} extra: pip install "{PACKAGE}[{extra}]"'
        ) from error

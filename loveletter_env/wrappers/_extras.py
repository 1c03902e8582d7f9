"""Import an optional dependency, or fail with the ``pip install`` line that brings it."""

from __future__ import annotations

import importlib
from types import ModuleType

PACKAGE = "loveletter-env"


class MissingExtraError(ImportError):
    """An optional library is not installed, or is but cannot be imported; the message names the
    extra that installs it (and, for the second, the import's own error)."""


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or raise :class:`MissingExtraError` naming ``pip install "loveletter-env[extra]"``
    (and why the import failed, where the module is installed)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        install = f'pip install "{PACKAGE}[{extra}]"'
        # Missing only when the module itself or a package above it is not found; anything else
        # (a dependency of its own missing, a broken build) is an installed library failing to
        # import, where "not installed" would send the user to a pip install with nothing to do.
        missing = (
            isinstance(error, ModuleNotFoundError)
            and error.name is not None
            and (module == error.name or module.startswith(error.name + "."))
        )
        if missing:
            raise MissingExtraError(
                f"{module!r} is not installed; it comes with the {extra!r} extra: {install}"
            ) from error
        raise MissingExtraError(
            f"{module!r} is installed but cannot be imported ({type(error).__name__}: {error}); the {extra!r} "
            f"extra installs it with what it needs: {install}"
        ) from error

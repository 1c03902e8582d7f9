"""Turn an opponent description (a bot name, a checkpoint path or an agent) into agents.

An opponent is anything with ``act(observation_dict) -> int`` and, optionally,
``reset(seed=None)`` (see :mod:`loveletter_env.agents.base`). Descriptions accepted:

* a bot name known to :func:`loveletter_env.agents.make_agent` (``"random"``, ``"rule"``, ...);
* a path to a checkpoint written by ``training``, or to a run folder (loaded with
  ``training.checkpoint.load_agent``, greedy);
* an agent object, used as given.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Sequence, Union

if TYPE_CHECKING:
    from ..agents.base import Agent

OpponentSpec = Union[str, Path, "Agent"]
#: Suffixes that mark a string as a checkpoint path rather than a bot name.
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt")


def _looks_like_path(spec: str | Path) -> bool:
    text = str(spec)
    return isinstance(spec, Path) or text.endswith(CHECKPOINT_SUFFIXES) or "/" in text or "\\" in text


def make_opponent(spec: OpponentSpec, seed: int | None = None) -> Agent:
    """One agent from a description (bot name, checkpoint path or agent object)."""
    if isinstance(spec, (str, Path)):
        if _looks_like_path(spec) or Path(spec).is_file():
            path = Path(spec)
            if not path.exists():  # a file, or a run folder (its best.pt, else latest.pt)
                raise FileNotFoundError(f"opponent checkpoint {str(path)!r} does not exist")
            # training imports torch and sits above this package: import it only when asked.
            from training.checkpoint import load_agent

            return load_agent(path, seed=0 if seed is None else seed)
        from ..agents import make_agent

        return make_agent(str(spec), seed=seed)
    if callable(getattr(spec, "act", None)):
        return spec
    raise TypeError(
        f"an opponent must be a bot name, a checkpoint path or an object with act(observation) -> int; got {spec!r}"
    )


def make_opponents(spec: OpponentSpec | Sequence[OpponentSpec], count: int, seed: int | None = None) -> list[Agent]:
    """``count`` opponents: one description for all of them, or a sequence of exactly ``count``.

    With one description each opponent is built separately (its own generator), except
    an agent object, which is shared: pass a sequence to give each seat its own object.
    """
    specs: list[Any]
    if isinstance(spec, (str, Path)) or callable(getattr(spec, "act", None)):
        specs = [spec] * count
    else:
        specs = list(spec)
        if len(specs) != count:
            raise ValueError(f"expected {count} opponent(s), one per other seat, got {len(specs)}: {specs!r}")
    return [make_opponent(s, seed=None if seed is None else seed + i) for i, s in enumerate(specs)]

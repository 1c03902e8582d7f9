"""Agent specs: the one place that turns a description of an agent into an agent.

Everything that takes "an agent" by name uses :func:`resolve_agent`: the evaluation and
terminal-play tools, the Gymnasium env's ``opponents=`` and anything built on them. A
spec is one of:

* a bot name from :data:`~loveletter_env.agents.AGENT_NAMES`, optionally with options
  as ``name:key=value,key=value`` (``"ismcts:iterations=100,width=3"``); values are read
  as Python literals (``100``, ``0.5``, ``True``), anything else stays a string, and a
  file (``path=``, ``policy=``) stays as written. An
  option the bot does not take is an error that lists the options it does take. ``seed``
  is not an option: whoever seats the agent seeds it (an evaluation reseeds every agent at
  every episode from its own seed), so a seed written in a spec would be overridden;
  it is refused rather than ignored;
* ``solved:path=FILE``: an equilibrium that ``python -m training.solve`` saved for a ladder rung;
* a checkpoint path (a ``.pt``/``.pth``/``.ckpt`` file, any path with a separator, or an
  existing file or folder, such as a training run folder), loaded by the registered
  checkpoint loader (see below); it plays as its run's evaluations played it (the config's
  ``eval.greedy``; greedily when the file records none);
* ``checkpoint:path=FILE,greedy=False``: the same, with its way of playing given:
  ``greedy=True`` plays the most likely action, ``greedy=False`` samples the policy
  (``greedy`` is optional);
* ``"package.module:factory"``: a callable called with ``seed=`` (when it takes one) that
  returns an agent;
* an object with ``act(observation) -> int``, returned as it is (an agent *class* is
  refused: it has ``act`` too, but would fail only at its first move).

Checkpoints go through :mod:`~loveletter_env.agents.checkpoint_loading` (this package does
not depend on the training code; ``training`` registers the loaders it uses).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import os
from pathlib import Path
from typing import Any, Union

from ..validation import check_seed
from . import AGENT_NAMES, make_agent
from .base import Agent
from .checkpoint_loading import (
    CHECKPOINT_LOADER_PACKAGE,
    CHECKPOINT_SUFFIXES,
    CheckpointLoader,
    NetworkLoader,
    checkpoint_file,
    is_checkpoint_path,
    load_checkpoint_agent,
    load_checkpoint_network,
    register_checkpoint_loader,
)
from .errors import AgentSpecError, AgentTypeError

#: What :func:`resolve_agent` accepts: a spec string, a path, or an agent object.
AgentSpec = Union[str, "os.PathLike[str]", Agent]


def accepts_seed(fn: Any) -> bool:
    """Whether ``fn`` can be called with ``seed=`` (a ``seed`` parameter or ``**kwargs``)."""
    try:
        params = inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False
    return "seed" in params or any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())


def reset_agent(agent: object, seed: int) -> None:
    """Start ``agent``'s next episode: ``reset(seed=seed)``, or ``reset()`` where its ``reset``
    takes no seed (the protocol's seed is optional), or nothing for an agent without one."""
    reset = getattr(agent, "reset", None)
    if callable(reset):
        reset(seed=seed) if accepts_seed(reset) else reset()


#: The options whose values name files (``checkpoint:path=``, ``solved:path=``,
#: ``guided:policy=``): kept as written, so that a file named ``2024`` or ``0x10`` is that file.
FILE_OPTIONS = ("path", "policy")


def parse_options(text: str, spec: str) -> dict[str, Any]:
    """``"key=value,key=value"`` as keyword arguments (values read as Python literals when they
    are, except the :data:`FILE_OPTIONS`, which are paths)."""
    options: dict[str, Any] = {}
    for item in filter(None, (s.strip() for s in text.split(","))):
        key, eq, value = item.partition("=")
        if not eq or not key.strip().isidentifier():
            raise AgentSpecError(f"agent spec {spec!r}: expected name:key=value[,key=value...], got {item!r}")
        if key.strip() in options:  # the label would show both values, the agent play the last
            raise AgentSpecError(f"agent spec {spec!r}: the option {key.strip()!r} is given twice")
        if key.strip() in FILE_OPTIONS:
            options[key.strip()] = value.strip()
            continue
        try:
            options[key.strip()] = ast.literal_eval(value.strip())
        except (ValueError, SyntaxError):
            options[key.strip()] = value.strip()
    return options


def _from_factory(text: str, module_name: str, attribute: str, seed: int | None) -> Agent:
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AgentSpecError(f"agent spec {text!r}: cannot import module {module_name!r} ({exc})") from None
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise AgentSpecError(f"agent spec {text!r}: module {module_name!r} has no callable {attribute!r}")
    kwargs = {"seed": seed} if seed is not None and accepts_seed(factory) else {}
    try:
        inspect.signature(factory).bind(**kwargs)
    except TypeError:
        # Calling it would raise from inside the callable (os:system needs a command).
        called = "with seed= alone" if kwargs else "with no arguments"
        raise AgentSpecError(
            f"agent spec {text!r}: {module_name}.{attribute} is not an agent factory, it cannot be called {called}"
        ) from None
    except ValueError:  # no signature to check (some builtins): the call itself says
        pass
    agent = factory(**kwargs)
    if isinstance(agent, type):  # a class has act() too, and would fail only at its first move
        raise AgentSpecError(
            f"agent spec {text!r}: the factory returned the class {agent.__name__}, not an agent object"
        )
    if not callable(getattr(agent, "act", None)):
        raise AgentSpecError(f"agent spec {text!r}: the factory returned {agent!r}, which has no act() method")
    return agent


#: ``solved:path=FILE``: a policy that ``python -m training.solve`` saved (see :mod:`.solved`).
SOLVED = "solved"


def _solved_agent(text: str, options: dict[str, Any], seed: int | None) -> Agent:
    from .solved import SolvedAgent

    unknown = sorted(set(options) - {"path"})
    if "path" not in options or unknown:
        raise AgentSpecError(
            f"agent spec {text!r}: a solved policy is given as solved:path=FILE"
            + (f" (no option {', '.join(map(repr, unknown))})" if unknown else "")
        )
    return SolvedAgent(str(options["path"]), seed=seed)


#: ``checkpoint:path=FILE[,greedy=BOOL]``: a checkpoint, optionally with its way of playing.
CHECKPOINT = "checkpoint"
#: The options of a ``checkpoint:`` spec.
CHECKPOINT_OPTIONS = ("path", "greedy")


def checkpoint_spec(spec: AgentSpec) -> tuple[str, bool | None] | None:
    """``(path, greedy)`` for a spec that names a checkpoint: a bare checkpoint path (``greedy``
    ``None``: the checkpoint's own way) or a ``checkpoint:`` spec; ``None`` for any other spec.

    Raises:
        AgentSpecError: a ``checkpoint:`` spec without ``path``, with another option, or with a
            ``greedy`` that is not ``True`` or ``False``.
    """
    if not isinstance(spec, (str, os.PathLike)):
        return None
    text = os.fspath(spec)
    name, colon, rest = text.partition(":")
    if isinstance(spec, os.PathLike) or name not in (*AGENT_NAMES, SOLVED, CHECKPOINT):
        return (text, None) if is_checkpoint_path(spec) else None
    if name != CHECKPOINT:
        return None
    options = parse_options(rest, text) if colon else {}
    unknown = sorted(set(options) - set(CHECKPOINT_OPTIONS))
    if "path" not in options or unknown:
        raise AgentSpecError(
            f"agent spec {text!r}: a checkpoint is given as checkpoint:path=FILE[,greedy=True|False]"
            + (f" (no option {', '.join(map(repr, unknown))}; its options are path, greedy)" if unknown else "")
        )
    greedy = options.get("greedy")
    if greedy is not None and not isinstance(greedy, bool):
        raise AgentSpecError(f"agent spec {text!r}: greedy must be True or False, got {greedy!r}")
    return str(options["path"]), greedy


def resolve_agent(spec: AgentSpec, seed: int | None = None, role: str = "agent") -> Agent:
    """Turn an agent spec (see the module docstring) into an agent object.

    Args:
        spec: a bot name with optional options, a checkpoint path, ``"package.module:factory"``,
            or an object with ``act`` (returned as is).
        seed: seed of the agent's own randomness, where the agent takes one (checkpoint
            agents get 0 when it is ``None``): ``None`` or an integer in ``0..MAX_SEED``.
        role: what the caller calls the agent (``"opponent"``...), used in error messages.

    Raises:
        AgentSpecError: (a ``ValueError``) the spec names nothing known, or options the bot
            does not take (``seed`` among them).
        AgentTypeError: (also a ``TypeError``) ``spec`` is neither a spec nor an agent, or is an
            agent class rather than an agent object.
        ValueError: a bad ``seed``.
        FileNotFoundError: a checkpoint path that does not exist.
    """
    if isinstance(spec, type):
        # A class has ``act`` too, but calling it unbound fails only at the agent's first
        # move, with a message about a missing positional argument.
        raise AgentTypeError(
            f"an {role} must be an agent object, not the class {spec.__name__}: pass {spec.__name__}()"
        )
    if not isinstance(spec, (str, os.PathLike)):
        if callable(getattr(spec, "act", None)):
            return spec
        raise AgentTypeError(
            f"an {role} must be a bot name, a checkpoint path, 'package.module:factory' or an object with "
            f"act(observation) -> int; got {spec!r}"
        )
    seed = check_seed(seed, allow_none=True)
    text = os.fspath(spec)
    name, colon, rest = text.partition(":")
    if name in AGENT_NAMES and not isinstance(spec, os.PathLike):
        options = parse_options(rest, text) if colon else {}
        if "seed" in options:
            raise AgentSpecError(
                f"agent spec {text!r}: seed is not an option of the spec; the agent's seed is set by what runs it "
                "(the seed of the evaluation, game or env)"
            )
        return make_agent(name, seed=seed, **options)
    if name == SOLVED and not isinstance(spec, os.PathLike):
        return _solved_agent(text, parse_options(rest, text) if colon else {}, seed)
    checkpoint = checkpoint_spec(spec)
    if checkpoint is not None:
        path, greedy = checkpoint
        return load_checkpoint_agent(path, seed=0 if seed is None else seed, greedy=greedy)
    if colon and rest:
        return _from_factory(text, name, rest, seed)
    raise AgentSpecError(
        f"unknown agent {text!r}: use one of {list(AGENT_NAMES)} (options as 'ismcts:iterations=100'), "
        "solved:path=FILE, "
        "checkpoint:path=FILE,greedy=False, "
        f"a checkpoint path ({'/'.join(CHECKPOINT_SUFFIXES)}) or run folder, or 'package.module:factory'"
    )


def spec_files(spec: AgentSpec) -> list[Path]:
    """The files an agent spec reads its play from: a checkpoint's file (a run folder's
    ``result.pt``, ``best.pt`` or ``latest.pt``), and every file or run folder an option names
    (``guided:policy=FILE``, ``solved:path=FILE``); none for a bot or an agent object.

    A tool that keeps an agent's results compares these files' bytes to tell whether the
    agent behind a spec is still the same one.

    Raises:
        AgentSpecError: the spec is malformed (see :func:`checkpoint_spec`).
        FileNotFoundError: a checkpoint it names does not exist.
    """
    checkpoint = checkpoint_spec(spec)
    if checkpoint is not None:
        return [checkpoint_file(checkpoint[0])]
    if not isinstance(spec, str):
        return []
    name, colon, rest = spec.partition(":")
    if not colon or name not in (*AGENT_NAMES, SOLVED):
        return []
    files = []
    for key, value in parse_options(rest, spec).items():
        # Only the file options: another option's word (``opponents=greedy``) that happens to
        # name a file or folder where the tool runs is not one the agent reads.
        if key in FILE_OPTIONS and isinstance(value, str) and os.path.exists(value):
            files.append(checkpoint_file(value) if os.path.isdir(value) else Path(value))
    return files


def agent_label(spec: AgentSpec) -> str:
    """A short display name for an agent spec: the spec as written, but ``FILE (sampling)`` or
    ``FILE (greedy)`` for a ``checkpoint:`` spec that sets how it plays."""
    if isinstance(spec, (str, os.PathLike)):
        try:
            checkpoint = checkpoint_spec(spec)
        except AgentSpecError:
            checkpoint = None
        if checkpoint is not None and checkpoint[1] is not None:
            return f"{checkpoint[0]} ({'greedy' if checkpoint[1] else 'sampling'})"
        return os.fspath(spec)
    return str(getattr(spec, "name", type(spec).__name__))


__all__ = [
    "CHECKPOINT",
    "CHECKPOINT_LOADER_PACKAGE",
    "CHECKPOINT_OPTIONS",
    "CHECKPOINT_SUFFIXES",
    "AgentSpec",
    "AgentSpecError",
    "AgentTypeError",
    "CheckpointLoader",
    "NetworkLoader",
    "SOLVED",
    "accepts_seed",
    "reset_agent",
    "agent_label",
    "checkpoint_spec",
    "is_checkpoint_path",
    "load_checkpoint_agent",
    "load_checkpoint_network",
    "FILE_OPTIONS",
    "parse_options",
    "register_checkpoint_loader",
    "resolve_agent",
    "spec_files",
]

"""Training configuration: dataclasses, YAML files and ``--set`` dotted overrides.

A config is a :class:`TrainConfig` tree. It comes from the built-in defaults, a YAML
file that overrides some of them (``configs/default.yaml`` and friends), then dotted
overrides such as ``ppo.learning_rate=3e-4`` or ``env.num_players=[2,3,4]``. Unknown
keys and values of the wrong type or range raise :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import dataclasses
import difflib
import types
import typing
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

import yaml

from loveletter_env.agents import AGENT_NAMES
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.rules import PRESETS
from loveletter_env.validation import EPISODE_KINDS, PLAYER_COUNTS, check_int, check_number

from .ppo import PPOConfig

DEVICES = ("auto", "cpu", "cuda")
# Upper bounds, checked before a run allocates anything: far beyond any useful setting,
# low enough that a typo is named here instead of failing in an allocator or a seeder.
#: Largest seed (torch generators take 64-bit seeds; 2**63 - 1 keeps every path in range).
MAX_SEED = 2**63 - 1
#: Largest env.num_games, env.rollout_steps, and turns in one rollout (their product:
#: the rollout stores one 646-float observation per turn, 2.7 GB at this bound).
MAX_NUM_GAMES, MAX_ROLLOUT_STEPS, MAX_ROLLOUT_TURNS = 2**16, 2**12, 2**20
#: Largest network: layers, width of a layer, and parameters in all (100 M: 1.2 GB with Adam's state).
MAX_HIDDEN_LAYERS, MAX_HIDDEN_SIZE, MAX_PARAMETERS = 16, 2**16, 100_000_000
#: Largest torch_threads.
MAX_TORCH_THREADS = 1024


class ConfigError(ValueError):
    """A config file, key or value that cannot be used; the message names it."""


@dataclass
class EnvConfig:
    """The batched environment the rollouts run on.

    Attributes:
        num_players: table sizes; game ``i`` of the batch gets ``num_players[i % len]``,
            so ``[2, 3, 4]`` trains one network on a mix of table sizes.
        rules: rule preset name.
        episode: ``"round"`` (reward after every round) or ``"game"``.
        num_games: games played side by side.
        rollout_steps: turns each game advances per rollout (the rollout has
            ``num_games * rollout_steps`` turns, of which the learner's are trained on).
    """

    num_players: list[int] = field(default_factory=lambda: [2])
    rules: str = "classic"
    episode: str = "round"
    num_games: int = 256
    rollout_steps: int = 32


@dataclass
class ModelConfig:
    """The :class:`~training.ppo.ActorCritic` network.

    Attributes:
        hidden_sizes: widths of the shared trunk's layers.
        init_from: a checkpoint (file or run folder) whose weights start the run, e.g. a
            2-player agent to fine-tune on mixed table sizes; its ``hidden_sizes`` must match.
    """

    hidden_sizes: list[int] = field(default_factory=lambda: [256, 256])
    init_from: str | None = None


@dataclass
class OpponentConfig:
    """Who sits in the seats the learner does not control.

    Each episode of each game draws its kind with these relative weights:
    ``current`` (every seat is the learning network: self-play, every seat is trained on),
    ``past`` (one learner seat, the others a snapshot from the pool) or ``bots`` (one
    learner seat, the others heuristic bots, which act in Python and are slow).

    Attributes:
        current, past, bots: relative weights (>= 0, not all 0).
        bot_names: bots to draw from: bot names, with options where the bot takes them
            (``"ismcts:iterations=50"``), as everywhere an agent spec is read.
        snapshot_every: add the current weights to the pool every this many updates.
        pool_size: snapshots kept (the oldest leave first).
        past_greedy: snapshots play their most likely action instead of sampling (the
            exploitability tool uses it to train against an agent exactly as it plays).
    """

    current: float = 0.6
    past: float = 0.25
    bots: float = 0.15
    bot_names: list[str] = field(default_factory=lambda: ["rule", "random"])
    snapshot_every: int = 5
    pool_size: int = 20
    past_greedy: bool = False


@dataclass
class EvalConfig:
    """Periodic evaluation through ``training.evaluate.evaluate``.

    Attributes:
        every: evaluate every this many updates (and at the end); 0 disables.
        rounds: rounds per opponent, seats rotated.
        opponents: one evaluation per name; the learner plays against ``num_players - 1`` copies.
        num_players: table size of the evaluation.
        best_by: opponent whose win rate picks the ``best`` checkpoint.
        greedy: evaluate the most likely action instead of sampling.
        final_rounds: at the end of a run, ``best.pt`` and the final weights play this many
            more rounds each against ``best_by`` (new deals, the same for both) and the
            better becomes ``result.pt``; 0 makes the final weights the result unmeasured.
        duplicate: play every deal once in each seat rotation (``python -m
            training.evaluate --duplicate``), which cancels much of the deals' luck and so
            picks ``best.pt`` and ``result.pt`` on steadier figures; ``rounds`` and
            ``final_rounds`` must then be multiples of ``num_players``.
    """

    every: int = 20
    rounds: int = 300
    opponents: list[str] = field(default_factory=lambda: ["random", "rule"])
    num_players: int = 2
    best_by: str = "rule"
    greedy: bool = True
    final_rounds: int = 2000
    duplicate: bool = True


#: Keys a schedule stage may change: what the learner trains against and how, never the
#: network, the seed or where outputs go. (``opponents.pool_size`` fixes the pool's capacity.)
SCHEDULABLE_KEYS: tuple[str, ...] = (
    *(f"ppo.{f.name}" for f in dataclasses.fields(PPOConfig)),
    *(f"opponents.{f.name}" for f in dataclasses.fields(OpponentConfig) if f.name != "pool_size"),
    "env.num_players",
    "env.num_games",
)


@dataclass
class StageConfig:
    """One stage of a run's schedule.

    Attributes:
        at_step: the turn count (``global_step``) from which the stage applies.
        set: dotted keys and their values from then on, e.g. ``{"ppo.learning_rate": 4e-4,
            "opponents.bots": 0.5, "env.num_players": [2, 4]}``; only :data:`SCHEDULABLE_KEYS`.
            Stages add up: a key keeps the value the last stage before it gave.
    """

    at_step: int = 0
    set: dict[str, Any] = field(default_factory=dict)


@dataclass
class TrainConfig:
    """A whole self-play run.

    Attributes:
        run_name: outputs go to ``<out_dir>/<run_name>/``.
        out_dir: parent folder of runs.
        seed: seeds the environment, the network and every sampling generator.
        total_steps: environment turns to play (every seat's turns count).
        device: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
        save_every: write ``latest.pt`` and a numbered snapshot every this many updates.
        torch_threads: CPU threads torch may use (0: torch's default; 1 suits a small shared CPU).
        schedule: stages that change some keys at given turn counts (:class:`StageConfig`);
            the sections above are the run's first stage. With ``ppo.anneal_lr`` the learning
            rate decays linearly to 0 within each stage, so a staged run trains as the same
            stages run one after another with ``model.init_from`` would.
    """

    run_name: str = "default"
    out_dir: str = "checkpoints"
    seed: int = 0
    total_steps: int = 4_000_000
    device: str = "auto"
    save_every: int = 25
    torch_threads: int = 1
    env: EnvConfig = field(default_factory=EnvConfig)
    model: ModelConfig = field(default_factory=ModelConfig)
    ppo: PPOConfig = field(default_factory=PPOConfig)
    opponents: OpponentConfig = field(default_factory=OpponentConfig)
    eval: EvalConfig = field(default_factory=EvalConfig)
    schedule: list[StageConfig] = field(default_factory=list)

    # -- stages -----------------------------------------------------------------------
    def stage_index(self, step: int) -> int:
        """The stage in force after ``step`` turns: 0 for the base sections, ``i`` for ``schedule[i - 1]``."""
        return sum(1 for stage in self.schedule if stage.at_step <= step)

    def stage_span(self, step: int) -> tuple[int, int]:
        """First and last turn count of the stage in force at ``step`` (the last is the next stage's
        ``at_step``, or ``total_steps``): the stretch over which its learning rate anneals."""
        index = self.stage_index(step)
        begin = self.schedule[index - 1].at_step if index else 0
        end = self.schedule[index].at_step if index < len(self.schedule) else self.total_steps
        return begin, max(end, begin + 1)

    def at_step(self, step: int) -> TrainConfig:
        """The config in force after ``step`` turns: these sections with every stage up to then
        applied (its own ``schedule`` left empty)."""
        data = to_dict(self)
        data["schedule"] = []
        for stage in self.schedule[: self.stage_index(step)]:
            for key, value in stage.set.items():
                set_dotted(data, key.split("."), value, f"schedule stage at_step={stage.at_step}: {key}")
        return from_dict(TrainConfig, data)

    # -- derived sizes ----------------------------------------------------------------
    @property
    def steps_per_update(self) -> int:
        """Environment turns played per rollout."""
        return self.env.num_games * self.env.rollout_steps

    @property
    def num_updates(self) -> int:
        """Rollout + update iterations the run makes (at least one)."""
        return max(1, self.total_steps // self.steps_per_update)

    def validate(self) -> TrainConfig:
        """Raise :class:`ConfigError` naming the first bad value; return ``self``."""

        def need(ok: bool, key: str, rule: str) -> None:
            if not ok:
                raise ConfigError(f"{key} {rule}, got {_get(self, key)!r}")

        need(
            bool(self.run_name) and "/" not in self.run_name and self.run_name not in (".", ".."),
            "run_name",
            "must be a plain folder name",
        )
        need(self.total_steps > 0, "total_steps", "must be > 0")
        need(0 <= self.seed <= MAX_SEED, "seed", "must be >= 0 and below 2**63")
        need(self.device in DEVICES, "device", f"must be one of {DEVICES}")
        need(self.save_every >= 1, "save_every", "must be >= 1")
        need(0 <= self.torch_threads <= MAX_TORCH_THREADS, "torch_threads", f"must be in 0..{MAX_TORCH_THREADS}")
        e = self.env
        need(
            len(e.num_players) > 0 and all(n in PLAYER_COUNTS for n in e.num_players),
            "env.num_players",
            "must be a non-empty list of table sizes 2, 3 or 4",
        )
        need(e.rules in PRESETS, "env.rules", f"must be one of {sorted(PRESETS)}")
        need(
            e.rules not in PRESETS or not PRESETS[e.rules].is_rung or set(e.num_players) == {2},
            "env.num_players",
            f"must be [2] on the ladder rung {e.rules!r} (2 players only)",
        )
        need(e.episode in EPISODE_KINDS, "env.episode", f"must be one of {EPISODE_KINDS}")
        need(1 <= e.num_games <= MAX_NUM_GAMES, "env.num_games", f"must be in 1..{MAX_NUM_GAMES}")
        need(2 <= e.rollout_steps <= MAX_ROLLOUT_STEPS, "env.rollout_steps", f"must be in 2..{MAX_ROLLOUT_STEPS}")
        need(
            self.steps_per_update <= MAX_ROLLOUT_TURNS,
            "env.num_games",
            f"times env.rollout_steps ({e.rollout_steps}) must be at most {MAX_ROLLOUT_TURNS:,} turns per rollout",
        )
        sizes = self.model.hidden_sizes
        need(
            0 < len(sizes) <= MAX_HIDDEN_LAYERS and all(1 <= h <= MAX_HIDDEN_SIZE for h in sizes),
            "model.hidden_sizes",
            f"must be a list of 1 to {MAX_HIDDEN_LAYERS} layer sizes in 1..{MAX_HIDDEN_SIZE}",
        )
        parameters = count_parameters(sizes)
        need(
            parameters <= MAX_PARAMETERS,
            "model.hidden_sizes",
            f"must give a network of at most {MAX_PARAMETERS:,} parameters (this one has {parameters:,})",
        )
        try:
            self.ppo.validate()
        except ValueError as err:
            raise ConfigError(str(err)) from None
        o = self.opponents
        for kind in ("current", "past", "bots"):
            need(getattr(o, kind) >= 0, f"opponents.{kind}", "must be >= 0")
        need(o.current + o.past + o.bots > 0, "opponents.current", "and opponents.past/bots must not all be 0")
        need(o.bots == 0 or len(o.bot_names) > 0, "opponents.bot_names", "must name a bot when opponents.bots > 0")
        need(_all_bot_names(o.bot_names), "opponents.bot_names", f"must be names from {AGENT_NAMES}")
        _check_buildable(o.bot_names, "opponents.bot_names")
        need(o.snapshot_every >= 1, "opponents.snapshot_every", "must be >= 1")
        need(o.pool_size >= 1, "opponents.pool_size", "must be >= 1")
        v = self.eval
        need(v.every >= 0, "eval.every", "must be >= 0")
        need(v.rounds >= 1, "eval.rounds", "must be >= 1")
        need(v.num_players in PLAYER_COUNTS, "eval.num_players", "must be 2, 3 or 4")
        need(_all_bot_names(v.opponents), "eval.opponents", f"must be names from {AGENT_NAMES}")
        _check_buildable(v.opponents, "eval.opponents")
        need(v.every == 0 or v.best_by in v.opponents, "eval.best_by", f"must be one of eval.opponents {v.opponents}")
        need(v.final_rounds >= 0, "eval.final_rounds", "must be >= 0")
        for key, rounds in (("rounds", v.rounds), ("final_rounds", v.final_rounds)):
            need(
                not v.duplicate or rounds % v.num_players == 0,
                f"eval.{key}",
                f"must be a multiple of eval.num_players ({v.num_players}) with eval.duplicate, which plays "
                "every deal once in each seat rotation",
            )
        self._validate_schedule()
        return self

    def _validate_schedule(self) -> None:
        previous = 0
        for i, stage in enumerate(self.schedule):
            where = f"schedule[{i}]"
            if stage.at_step <= previous:
                raise ConfigError(
                    f"{where}.at_step must be > 0 and above the previous stage's ({previous}), got {stage.at_step}"
                )
            previous = stage.at_step
            if not stage.set:
                raise ConfigError(f"{where}.set names no key to change")
            for key in stage.set:
                if key not in SCHEDULABLE_KEYS:
                    hint = "" if key in _dotted_keys(TrainConfig) else " (no such key)"
                    raise ConfigError(
                        f"{where}.set: {key!r} cannot change during a run{hint}; "
                        f"a stage may set {list(SCHEDULABLE_KEYS)}"
                    )
            try:
                self.at_step(stage.at_step).validate()
            except ConfigError as err:
                raise ConfigError(f"{where} (from turn {stage.at_step:,}): {err}") from None


def count_parameters(hidden_sizes: list[int]) -> int:
    """Parameters of the :class:`~training.ppo.ActorCritic` with these layer sizes, counted on
    torch's meta device (shapes only, no memory)."""
    import torch

    from .ppo import ActorCritic

    with torch.device("meta"):
        return sum(p.numel() for p in ActorCritic(hidden_sizes).parameters())


# ---------------------------------------------------------------------------------
# dict <-> dataclass, with type checks
# ---------------------------------------------------------------------------------
def _all_bot_names(specs: Iterable[str]) -> bool:
    """Whether every spec is a bot name, with or without options (``"ismcts:iterations=50"``)."""
    return all(isinstance(spec, str) and spec.partition(":")[0] in AGENT_NAMES for spec in specs)


def _check_buildable(names: Iterable[str], key: str) -> None:
    """Refuse bots that cannot be built from their spec (``guided`` needs ``policy=PATH``; options
    must be the bot's own).

    Training builds its bots when a run first meets them, so a bad spec would otherwise fail
    only after training time was spent.
    """
    for name in names:
        try:
            resolve_agent(name, seed=0)
        except (ValueError, FileNotFoundError) as err:
            raise ConfigError(f"{key}: bot {name!r} cannot be built ({err})") from None


def _get(obj: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        obj = getattr(obj, part)
    return obj


def _coerce(value: Any, tp: Any, key: str) -> Any:
    """``value`` checked (and widened where harmless, e.g. int -> float) against ``tp``."""
    origin = typing.get_origin(tp)
    if origin in (Union, types.UnionType):
        args = typing.get_args(tp)
        if value is None and type(None) in args:
            return None
        errors = []
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(value, arg, key)
            except ConfigError as err:
                errors.append(str(err))
        raise ConfigError(errors[0] if errors else f"{key}: bad value {value!r}")
    if origin is list:
        (item_tp,) = typing.get_args(tp)
        if isinstance(value, tuple):
            value = list(value)
        elif not isinstance(value, (list, dict)):
            value = [value]  # a single value is a one-item list: `num_players: 2`
        if not isinstance(value, list):
            raise ConfigError(f"{key} must be a list, got {value!r}")
        return [_coerce(v, item_tp, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ConfigError(f"{key} must be a mapping of dotted keys to values, got {value!r}")
        return dict(value)
    if tp is Any:
        return value
    if isinstance(tp, type) and dataclasses.is_dataclass(tp):
        if isinstance(value, tp):
            return value
        if not isinstance(value, dict):
            raise ConfigError(f"{key} must be a mapping of its fields, got {value!r}")
        return from_dict(tp, value, prefix=f"{key}.")
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{key} must be true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, float) and value.is_integer():
            return int(value)  # 1e6 in YAML is a float
        return _config_check(check_int, key, value)
    if tp is float:
        return _config_check(check_number, key, value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(f"{key} must be a string, got {value!r}")
        return value
    raise TypeError(f"config field {key} has an unsupported type {tp!r}")  # a bug in this module


def _config_check(check: Callable[[str, Any], Any], key: str, value: Any) -> Any:
    """A :mod:`loveletter_env.validation` check whose error becomes a :class:`ConfigError`."""
    try:
        return check(key, value)
    except ValueError as err:
        raise ConfigError(str(err)) from None


def from_dict(cls: type, data: dict, prefix: str = "") -> Any:
    """Build dataclass ``cls`` from a (possibly partial) nested dict; missing keys keep
    their defaults, unknown keys raise :class:`ConfigError`."""
    if not isinstance(data, dict):
        raise ConfigError(f"{prefix.rstrip('.') or 'config'} must be a mapping, got {data!r}")
    for key in data:
        if not isinstance(key, str):
            # YAML reads `1:` or `true:` as a number or a boolean, never a field name.
            raise ConfigError(f"config key {prefix}{key!r} must be a name, got the {type(key).__name__} {key!r}")
    hints = typing.get_type_hints(cls)
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        hints_text = "".join(_suggestion(cls, key, prefix) for key in unknown)
        raise ConfigError(
            f"unknown config key(s) {[prefix + k for k in unknown]}{hints_text}; known keys: {sorted(names)}"
        )
    kwargs = {k: _coerce(v, hints[k], prefix + k) for k, v in data.items()}
    return cls(**kwargs)


def _dotted_keys(cls: type, prefix: str = "") -> list[str]:
    """Every key of dataclass ``cls``, nested sections as ``section.key``."""
    keys: list[str] = []
    for f in dataclasses.fields(cls):
        tp = typing.get_type_hints(cls)[f.name]
        nested = isinstance(tp, type) and dataclasses.is_dataclass(tp)
        keys += _dotted_keys(tp, f"{prefix}{f.name}.") if nested else [prefix + f.name]
    return keys


def _suggestion(cls: type, key: str, prefix: str) -> str:
    """`` (did you mean 'ppo.learning_rate'?)`` for a key that lives in another section or is misspelt."""
    keys = _dotted_keys(cls, prefix)
    moved = [k for k in keys if k.rsplit(".", 1)[-1] == key]
    close = moved or difflib.get_close_matches(prefix + key, keys, n=2)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def to_dict(config: Any) -> dict:
    """Plain nested dict (YAML- and ``torch.load(weights_only=True)``-safe)."""
    return dataclasses.asdict(config)


# ---------------------------------------------------------------------------------
# Files and overrides
# ---------------------------------------------------------------------------------
def parse_override(text: str) -> tuple[list[str], Any]:
    """``"ppo.learning_rate=3e-4"`` -> (``["ppo", "learning_rate"]``, ``3e-4``); the value is YAML."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"an override looks like section.key=value, got {text!r}")
    try:
        value = yaml.safe_load(raw) if raw.strip() else ""
    except yaml.YAMLError as err:
        raise ConfigError(f"override {text!r}: the value is not valid YAML ({err})") from None
    _refuse_cycles(value, key, f"override {text!r}")
    return key.split("."), _fix_yaml_floats(value)


def set_dotted(data: dict, path: list[str], value: Any, source: str) -> None:
    """``data[path[0]][path[1]]... = value`` in a nested dict, creating sections as needed."""
    node = data
    for part in path[:-1]:
        child = node.setdefault(part, {})
        if not isinstance(child, dict):
            raise ConfigError(f"{source}: {part!r} is not a section")
        node = child
    node[path[-1]] = value


def apply_overrides(data: dict, overrides: Iterable[str]) -> dict:
    """Set each dotted override into the nested dict ``data`` (in place; also returned)."""
    for text in overrides:
        path, value = parse_override(text)
        set_dotted(data, path, value, f"override {text!r}")
    return data


def read_yaml(path: str | Path) -> dict:
    """A YAML config file as a dict (empty file: empty dict)."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"config file {str(path)!r} does not exist")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"config file {str(path)!r} is not valid YAML: {err}") from None
    except OSError as err:
        raise ConfigError(f"config file {str(path)!r} cannot be read: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"config file {str(path)!r} must hold a mapping of sections, got {type(data).__name__}")
    _refuse_cycles(data, "", f"config file {str(path)!r}")
    return data


def _refuse_cycles(value: Any, key: str, source: str, open_nodes: tuple[int, ...] = ()) -> None:
    """Raise :class:`ConfigError` if ``value`` contains itself (a YAML alias used inside
    its own anchor, such as ``a: &x [*x]``), naming the key where the loop closes."""
    if not isinstance(value, (dict, list)):
        return
    if id(value) in open_nodes:
        raise ConfigError(f"{source}: {key or 'the top level'} refers to itself (a recursive YAML alias)")
    items = value.items() if isinstance(value, dict) else enumerate(value)
    for child_key, child in items:
        if isinstance(value, list):
            child_name = f"{key}[{child_key}]"
        else:
            child_name = f"{key}.{child_key}" if key else str(child_key)
        _refuse_cycles(child, child_name, source, (*open_nodes, id(value)))


def _fix_yaml_floats(data: Any) -> Any:
    """Turn strings such as ``3e-4`` (YAML 1.1 reads them as text) into floats."""
    if isinstance(data, dict):
        return {k: _fix_yaml_floats(v) for k, v in data.items()}
    if isinstance(data, list):
        return [_fix_yaml_floats(v) for v in data]
    if isinstance(data, str):
        try:
            return float(data) if any(c in data for c in "eE") and any(c.isdigit() for c in data) else data
        except ValueError:
            return data
    return data


def load_config(path: str | Path | None = None, overrides: Iterable[str] = ()) -> TrainConfig:
    """Defaults, then the YAML file at ``path`` (if any), then dotted ``overrides``; validated."""
    data = _fix_yaml_floats(read_yaml(path)) if path is not None else {}
    apply_overrides(data, overrides)
    return from_dict(TrainConfig, data).validate()


def save_config(config: TrainConfig, path: str | Path) -> None:
    """Write ``config`` as YAML (every key, so the file documents the whole run)."""
    Path(path).write_text(yaml.safe_dump(to_dict(config), sort_keys=False))

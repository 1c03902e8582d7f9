"""A hyperparameter search's file: the base config, the keys every trial shares, and the space.

``python -m training.sweep SPACE.yaml`` reads a file such as ``configs/sweeps/sweep_mini6.yaml``::

    config: configs/mini8_mmd.yaml        # the base config (default: the built-in defaults), from
                                          # the folder the command runs in, as --config reads it
    set:                                  # keys every trial shares, dotted as --set writes them
      env.rules: mini6
      total_steps: 1000000
    rules: mini6                          # the rung whose exact exploitability is the objective
    seeds: [0, 1, 2]                      # each trial trains once per seed; its value is their median
    trials: 30                            # trials the study runs to the end (completed or pruned)
    report_every: 125000                  # turns between the exact evaluations that pruning reads
    space:
      ppo.learning_rate: {type: float, low: 2.0e-4, high: 3.0e-3, log: true}
      ppo.update_epochs: {type: int, low: 1, high: 8}
      model.hidden_sizes: {type: categorical, choices: [[64, 64], [128, 128]]}
      env.rules_weights[1]: {type: float, low: 0.5, high: 4}   # one entry of a list
    enqueue:                              # known points, tried first (keys left out are drawn)
      - {ppo.learning_rate: 1.0e-3, model.hidden_sizes: [128, 128]}

Every key of ``space`` and ``set`` is a key of :class:`~training.learn.config.TrainConfig`, and
each value a trial may take (both ends of a range, every choice) is checked against the config's
own rules when the file is read, so a misspelt key or an impossible range is named before any
training starts (:class:`~training.learn.config.ConfigError`). The search itself, which needs
Optuna, is :mod:`training.exploitability.sweep_study`; this module imports nothing of it.
"""

from __future__ import annotations

import copy
import difflib
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from loveletter_env.rules import PRESETS
from loveletter_env.schema import StrictModel, WholeNumber, explain, shown
from loveletter_env.validation import MAX_SEED
from training.learn.config import (
    ConfigError,
    RulesName,
    TrainConfig,
    from_dict,
    read_config,
    read_yaml,
    set_dotted,
    to_dict,
)

#: Keys the sweep sets for each trial run itself: neither ``set`` nor ``space`` may hold them.
SWEEP_KEYS = ("seed", "run_name", "out_dir")
#: Keys that say how long or where a trial runs, not how it learns: ``set`` may fix them, the
#: space may not search them (every trial must report its exact evaluations at the same turns).
FIXED_KEYS = ("total_steps", "save_every", "device", "torch_threads", "tf32", "schedule")
#: A key naming one entry of a list: ``env.rules_weights[1]``.
INDEXED_KEY = re.compile(r"(?P<path>[A-Za-z_][\w.]*)\[(?P<index>\d+)\]")
#: How many exact evaluations a trial makes when the file gives no ``report_every``.
DEFAULT_REPORTS = 8


class ParameterSpec(StrictModel):
    """One searched key.

    Attributes:
        type: ``float`` or ``int`` (a range from ``low`` to ``high``, both included) or
            ``categorical`` (one of ``choices``, which may be lists, e.g. layer widths).
        low, high: the range's ends.
        log: draw the range on a log scale (``low`` must then be above 0).
        step: draw only ``low``, ``low + step``, ... up to ``high``, which it must reach in whole
            steps (not with ``log``).
        choices: the values of a categorical key.
    """

    type: Literal["float", "int", "categorical"]
    low: float | None = None
    high: float | None = None
    log: bool = False
    step: Annotated[float, Field(gt=0)] | None = None
    choices: Annotated[list[Any], Field(min_length=1)] | None = None

    @model_validator(mode="after")
    def _check_kind(self) -> ParameterSpec:
        if self.type == "categorical":
            if self.choices is None:
                raise ValueError("a categorical key needs choices: [...]")
            if self.low is not None or self.high is not None or self.log or self.step is not None:
                raise ValueError("a categorical key takes only choices (no low, high, log or step)")
            encoded = [encode_choice(choice) for choice in self.choices]
            if len(set(encoded)) != len(encoded):
                raise ValueError(f"choices must differ from each other, got {shown(self.choices)}")
            return self
        if self.choices is not None:
            raise ValueError(f"an {self.type} key takes low and high, not choices")
        if self.low is None or self.high is None:
            raise ValueError(f"an {self.type} key needs both low and high")
        if self.type == "int" and not all(float(v).is_integer() for v in (self.low, self.high, self.step or 1)):
            raise ValueError(f"an int key needs whole numbers for low, high and step, got {self.low}, {self.high}")
        if not self.low < self.high:
            raise ValueError(f"low must be below high, got low {self.low} and high {self.high}")
        if self.log and self.low <= 0:
            raise ValueError(f"log: true needs low above 0 (a log scale has no 0), got low {self.low}")
        if self.log and self.step is not None:
            raise ValueError("log and step do not go together: a step is even on a linear scale only")
        if self.step is not None:
            # Optuna would move high down to the last step below it, with a warning at the first
            # trial, and the trials would never draw the high this file names.
            steps = (self.high - self.low) / self.step
            if not math.isclose(steps, round(steps), abs_tol=1e-9):
                raise ValueError(
                    f"high must be low plus a whole number of steps, got low {self.low}, high {self.high} "
                    f"and step {self.step}"
                )
        return self

    def values_to_check(self) -> list[Any]:
        """The values to check against the config: every choice; both ends of a range, and for a
        float range a point inside it, off the whole numbers where its step allows (a float
        range on a whole-number key, 1 to 6 epochs say, passes at its ends and is refused at
        every value drawn between them)."""
        if self.type == "categorical":
            return list(self.choices or [])
        assert self.low is not None and self.high is not None  # the validator required both
        if self.type == "int":
            return [int(self.low), int(self.high)]
        low, high = float(self.low), float(self.high)
        golden = 0.381966  # a point of the golden section: no whole number for round ends
        inside = low * (high / low) ** golden if self.log else low + (high - low) * golden
        if self.step is not None:  # the grid point below it, as a drawn value lies on the grid
            inside = low + math.floor((inside - low) / self.step) * self.step
        return [low, high, float(f"{inside:.6g}")]  # short enough to read in a message

    def problem_with(self, value: Any) -> str | None:
        """Why ``value`` is no point of this key's space, or ``None`` if it is one."""
        if self.type == "categorical":
            choices = self.choices or []
            if encode_choice(value) not in [encode_choice(choice) for choice in choices]:
                return f"{shown(value)} is none of the choices {shown(choices)}"
            return None
        assert self.low is not None and self.high is not None  # the validator required both
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return f"{shown(value)} is not a number"
        if self.type == "int" and not float(value).is_integer():
            return f"{shown(value)} is not a whole number"
        if not self.low <= value <= self.high:
            return f"{shown(value)} is outside the range {shown(self.low)} to {shown(self.high)}"
        steps = (value - self.low) / self.step if self.step is not None else 0
        if not math.isclose(steps, round(steps), abs_tol=1e-9):
            return f"{shown(value)} is not low plus a whole number of steps of {shown(self.step)}"
        return None

    def stored(self, value: Any) -> Any:
        """``value`` as Optuna stores it for this key (:func:`encode_choice`; a float range's
        whole number as a float)."""
        if self.type == "categorical":
            return encode_choice(value)
        return int(value) if self.type == "int" else float(value)


class SweepFile(StrictModel):
    """The file's top-level keys (the module's docstring shows them)."""

    config: str | None = None
    set: dict[str, Any] = {}
    rules: RulesName | None = None
    seeds: Annotated[list[Annotated[WholeNumber, Field(ge=0, le=MAX_SEED)]], Field(min_length=3)] = [0, 1, 2]
    trials: Annotated[WholeNumber, Field(ge=1)] = 20
    report_every: Annotated[WholeNumber, Field(ge=1)] | None = None
    space: Annotated[dict[str, ParameterSpec], Field(min_length=1)]
    enqueue: list[Annotated[dict[str, Any], Field(min_length=1)]] = []

    @model_validator(mode="after")
    def _seeds_differ(self) -> SweepFile:
        if len(set(self.seeds)) != len(self.seeds):
            raise ValueError(f"seeds must differ from each other, got {self.seeds}")
        return self


def encode_choice(choice: Any) -> Any:
    """A categorical value as Optuna stores it: numbers, booleans, text and null as they are, a
    list or mapping as its JSON text (``[128, 128]`` -> ``"[128, 128]"``)."""
    return json.dumps(choice) if isinstance(choice, (list, dict)) else choice


@dataclass
class SearchSpace:
    """A read and checked search file: :func:`load_search_space` makes one.

    Attributes:
        source: where it came from (messages name it).
        base: the base config with ``set`` applied, as a complete nested dict.
        rules: the rung whose exact exploitability the trials are measured on.
        seeds: the seeds each trial trains with.
        trials: trials to finish.
        report_every: turns between a trial's exact evaluations.
        space: each searched key's :class:`ParameterSpec`, in the file's order.
        definition: what makes two runs of the sweep the same study (stored with the study).
        enqueue: known points the study tries before it draws its own, each a mapping of some or
            all of the space's keys to values in Optuna's stored form. They are not part of the
            definition: a study may be given more of them when it continues.
    """

    source: str
    base: dict[str, Any]
    rules: str
    seeds: list[int]
    trials: int
    report_every: int
    space: dict[str, ParameterSpec]
    definition: dict[str, Any] = field(default_factory=dict)
    enqueue: list[dict[str, Any]] = field(default_factory=list)

    @property
    def total_steps(self) -> int:
        """Turns each trial run plays."""
        return int(self.base["total_steps"])

    def report_points(self) -> list[int]:
        """The turn counts at which a trial run is evaluated exactly: every ``report_every`` turns
        and at its end."""
        points = list(range(self.report_every, self.total_steps, self.report_every))
        return [*points, self.total_steps]

    def decode(self, key: str, value: Any) -> Any:
        """The config value of ``key`` for the value Optuna stored (a JSON text back to its list)."""
        spec = self.space[key]
        if spec.type == "categorical":
            return {encode_choice(choice): choice for choice in spec.choices or []}[value]
        return int(value) if spec.type == "int" else float(value)

    def trial_config(self, params: dict[str, Any], seed: int, run_name: str, out_dir: str | Path) -> TrainConfig:
        """The config of one trial run: the base with ``params`` (Optuna's stored values) and the
        run's seed, name and folder. :class:`ConfigError` if the values do not go together."""
        values = {key: self.decode(key, value) for key, value in params.items()}
        data = _with_values(self.base, values, f"{self.source}: space key")
        data.update(seed=seed, run_name=run_name, out_dir=str(out_dir))
        return from_dict(TrainConfig, data)


def _with_values(base: dict[str, Any], values: dict[str, Any], source: str) -> dict[str, Any]:
    """A copy of the config dict ``base`` with each of ``values``' keys set (see :func:`_set_key`);
    an error names ``source`` and the key."""
    data = copy.deepcopy(base)
    for key, value in values.items():
        _set_key(data, key, value, f"{source} {key!r}")
    return data


def _set_key(data: dict[str, Any], key: str, value: Any, source: str) -> None:
    """``data[key] = value`` for a dotted key, or for one entry of a list (``env.rules_weights[1]``)."""
    indexed = INDEXED_KEY.fullmatch(key)
    if indexed is None:
        set_dotted(data, key.split("."), value, source)
        return
    path, index = indexed["path"], int(indexed["index"])
    node: Any = data
    for part in path.split("."):
        node = node.get(part) if isinstance(node, dict) else None
    if not isinstance(node, list):
        raise ConfigError(
            f"{source}: {path} must be a list in the base config to search one of its entries, got {shown(node)}"
            " (give the whole list under set:)"
        )
    if index >= len(node):
        raise ConfigError(f"{source}: {path} has {len(node)} entries in the base config, so no entry [{index}]")
    node[index] = value


def load_search_space(
    path: str | Path,
    config: str | None = None,
    overrides: dict[str, Any] | None = None,
    rules: str | None = None,
    seeds: list[int] | None = None,
    trials: int | None = None,
    report_every: int | None = None,
) -> SearchSpace:
    """Read and check a search file; the other arguments, when given, replace the file's keys of
    the same name (``overrides`` adds to its ``set``).

    Raises:
        ConfigError: the file is missing, not YAML, or holds an unknown key, a value of the wrong
            type, a range that cannot be (``low`` not below ``high``, ``log`` from 0), a key the
            config does not have or the sweep sets itself, a value the config refuses, or a
            ``rules`` that is no ladder rung or is played at a table size the trials never
            train at; the message names the file and the key.
    """
    source = f"search file {str(path)!r}"
    raw = read_yaml(path)
    given = {"config": config, "rules": rules, "seeds": seeds, "trials": trials, "report_every": report_every}
    raw.update({key: value for key, value in given.items() if value is not None})
    if overrides:
        raw["set"] = {**(raw.get("set") or {}), **overrides}
    try:
        spec = SweepFile.model_validate(raw)
    except ValidationError as err:
        raise ConfigError(f"{source}: {explain(err, _where, _hint)}") from None

    for key in spec.set:
        if key.split(".")[0].split("[")[0] in SWEEP_KEYS:
            raise ConfigError(f"{source}: set: {key!r} is set by the sweep for each trial run")
    for key in spec.space:
        top = key.split("[")[0]
        if top.split(".")[0] in SWEEP_KEYS:
            raise ConfigError(f"{source}: space: {key!r} cannot be searched: the sweep sets it for each trial run")
        if top.split(".")[0] in FIXED_KEYS:
            raise ConfigError(
                f"{source}: space: {key!r} cannot be searched: every trial runs as long and is evaluated at the "
                "same turns; fix it under set:"
            )
        if key in spec.set:
            # The space's value would replace the fixed one in every trial, without a word.
            raise ConfigError(
                f"{source}: {key!r} is both fixed (set: or --set) and searched (space:): every trial would take "
                "the searched value; fix it or search it, not both"
            )

    try:
        data = read_config(spec.config) if spec.config is not None else {}
    except ConfigError as err:
        raise ConfigError(f"{source}: config: {err}") from None
    for key, value in spec.set.items():
        _set_key(data, key, value, f"{source}: set: {key!r}")
    try:
        base = to_dict(from_dict(TrainConfig, data))
    except ConfigError as err:
        base_name = f"the base config {spec.config!r}" if spec.config else "the built-in defaults"
        raise ConfigError(f"{source}: {base_name} with set: {err}") from None

    for key, parameter in spec.space.items():
        for value in parameter.values_to_check():
            trial = _with_values(base, {key: value}, f"{source}: space:")
            try:
                from_dict(TrainConfig, trial)
            except ConfigError as err:
                inner = parameter.type != "categorical" and value not in (parameter.low, parameter.high)
                drawn = " (a value inside the range, as the sampler draws)" if inner else ""
                refused = f"{source}: space: {key!r} = {shown(value)}{drawn} is refused by the config"
                raise ConfigError(f"{refused}: {err}") from None

    rung = spec.rules
    if rung is None:
        trained = base["env"]["rules"]
        if len(trained) != 1:
            raise ConfigError(
                f"{source}: say which rung the objective is measured on (rules: mini6): the trials train on {trained}"
            )
        rung = trained[0]
    if not PRESETS[rung].is_rung:
        rungs = [name for name, preset in PRESETS.items() if preset.is_rung]
        raise ConfigError(f"{source}: rules must be a ladder rung, one of {rungs} (exact exploitability), got {rung!r}")
    players = PRESETS[rung].rung_players
    sizes = _table_sizes(base, spec.space)
    if players not in sizes:
        # A network measured at a table size it never trained at: every trial would train to
        # the end and be worth a figure that says nothing of its recipe.
        raise ConfigError(
            f"{source}: rules {rung!r} is played by {players} players, but the trials train at table sizes "
            f"{sorted(sizes)} (env.num_players): measure on a rung of a size they train at, or train at "
            f"{players} players"
        )

    enqueue = [_enqueued_point(source, index, point, spec.space, base) for index, point in enumerate(spec.enqueue)]
    total = int(base["total_steps"])
    every = spec.report_every or max(1, total // DEFAULT_REPORTS)
    definition = {
        "base": base,
        "rules": rung,
        "seeds": spec.seeds,
        "report_every": every,
        "space": {key: parameter.model_dump() for key, parameter in spec.space.items()},
    }
    return SearchSpace(str(path), base, rung, spec.seeds, spec.trials, every, dict(spec.space), definition, enqueue)


def _table_sizes(base: dict[str, Any], space: dict[str, ParameterSpec]) -> set[int]:
    """Every table size a trial may train at: ``env.num_players`` of the base config, of each
    of its schedule's stages, and of every value the space may give it."""
    sizes: set[int] = {size for stage in from_dict(TrainConfig, base).stages() for size in stage.env.num_players}
    for key, parameter in space.items():
        if key.split("[")[0] != "env.num_players":
            continue
        if parameter.type == "int":  # every size of the range, not only its ends
            assert parameter.low is not None and parameter.high is not None
            values: list[Any] = list(range(int(parameter.low), int(parameter.high) + 1, int(parameter.step or 1)))
        else:
            values = parameter.values_to_check()
        for value in values:
            sizes.update(int(v) for v in (value if isinstance(value, list) else [value]))
    return sizes


def _enqueued_point(
    source: str, index: int, point: dict[str, Any], space: dict[str, ParameterSpec], base: dict[str, Any]
) -> dict[str, Any]:
    """One ``enqueue`` entry, checked against the space and the config, in Optuna's stored form."""
    where = f"{source}: enqueue[{index}]"
    for key, value in point.items():
        if key not in space:
            raise ConfigError(f"{where}: {key!r} is not a key of the space (keys: {', '.join(space)})")
        problem = space[key].problem_with(value)
        if problem is not None:
            raise ConfigError(f"{where}: {key}: {problem}")
    trial = _with_values(base, point, f"{where}:")
    try:
        from_dict(TrainConfig, trial)
    except ConfigError as err:
        raise ConfigError(f"{where}: the config refuses these values together: {err}") from None
    return {key: space[key].stored(value) for key, value in point.items()}


def _hint(error: Any) -> str:
    """`` (did you mean 'high'?)`` after an unknown key of the file or of a searched key's spec."""
    loc = tuple(error["loc"])
    if error["type"] != "extra_forbidden":
        return ""
    if len(loc) == 1:
        fields = SweepFile.model_fields
    elif len(loc) == 3 and loc[0] == "space":
        fields = ParameterSpec.model_fields
    else:
        return ""
    close = difflib.get_close_matches(str(loc[-1]), list(fields), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def _where(loc: Any) -> str:
    """``("space", "ppo.learning_rate", "low")`` -> ``space['ppo.learning_rate'].low``."""
    parts = list(loc)
    if len(parts) >= 2 and parts[0] in ("space", "set"):
        head = f"{parts[0]}[{parts[1]!r}]"
        rest = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts[2:])
        return head + rest
    return "".join(f"[{p}]" if isinstance(p, int) else f"{'.' if i else ''}{p}" for i, p in enumerate(parts))

"""Training configuration: pydantic models, YAML files and ``--set`` dotted overrides.

A config is a :class:`TrainConfig` tree. It comes from the built-in defaults, a YAML
file that overrides some of them (``configs/default.yaml`` and friends; a file may name another
that it extends, ``base: OTHER.yaml``: :func:`read_config`), then dotted
overrides such as ``ppo.learning_rate=3e-4`` or ``env.num_players=[2,3,4]``, each value
read as YAML and checked by the models like a value from a file. Unknown keys, values of
the wrong type (strictly: ``"3"`` is no number, ``1`` no boolean) and values out of range
raise :class:`ConfigError` naming the key.
"""

from __future__ import annotations

import argparse
import copy
import difflib
import json
import re
import typing
from collections.abc import Iterable
from pathlib import Path
from typing import Annotated, Any, Literal, TypeVar

import yaml
from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, ValidationError, model_validator

from loveletter_env.agents import AGENT_NAMES
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.atomic_files import replacing
from loveletter_env.rules import PRESETS
from loveletter_env.schema import StrictModel, WholeNumber, dotted, explain, shown
from loveletter_env.validation import MAX_SEED
from training.learn.ppo import PPOConfig
from training.measure.matches import MAX_EPISODES

Device = Literal["auto", "cpu", "cuda"]
DEVICES: tuple[str, ...] = typing.get_args(Device)
TableSize = Literal[2, 3, 4]


def _preset_name(name: str) -> str:
    if name not in PRESETS:
        raise ValueError(f"must be one of {', '.join(map(repr, PRESETS))}, got {shown(name)}")
    return name


#: A rules preset's name (loveletter_env.rules.PRESETS: a new preset needs no change here).
RulesName = Annotated[str, AfterValidator(_preset_name)]
# Upper bounds, checked before a run allocates anything: far beyond any useful setting,
# low enough that a typo is named here instead of failing in an allocator or a seeder.
#: Largest env.num_games, env.rollout_steps, and turns in one rollout (their product:
#: the rollout stores one observation of 1,382 bytes per turn, 1.4 GB at this bound).
MAX_NUM_GAMES, MAX_ROLLOUT_STEPS, MAX_ROLLOUT_TURNS = 2**16, 2**12, 2**20
#: Largest network: layers, width of a layer, and parameters in all (100 M: 1.2 GB with Adam's state).
MAX_HIDDEN_LAYERS, MAX_HIDDEN_SIZE, MAX_PARAMETERS = 16, 2**16, 100_000_000
#: Largest torch_threads.
MAX_TORCH_THREADS = 1024
#: Largest env.rules_weights entry. Weights are relative: a million to one already leaves a
#: rule set one game of any batch (at most MAX_NUM_GAMES), and the bound keeps a typo such
#: as 1e308, whose sum overflows to inf, from reaching the split of the games.
MAX_RULES_WEIGHT = 1e6
#: Largest config file, deepest nesting and most lists and mappings in one (a config has
#: fewer than a hundred; YAML aliases can multiply a small file into billions).
MAX_CONFIG_BYTES, MAX_NESTING, MAX_NODES = 1_000_000, 32, 100_000


#: The top-level key of a config file that names the file it extends (:func:`read_config`).
BASE_KEY = "base"


class ConfigError(ValueError):
    """A config file, key or value that cannot be used; the message names it."""


# ---------------------------------------------------------------------------------
# Field types
# ---------------------------------------------------------------------------------
T = TypeVar("T")


def _as_list(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value if isinstance(value, (list, dict)) else [value]


#: A list, where a single value is a one-item list (``num_players: 2``).
OneOrMore = Annotated[list[T], BeforeValidator(_as_list)]


def _folder_name(name: str) -> str:
    if not name or name in (".", "..") or any(c in name for c in "/\\\0"):
        raise ValueError(f"must be a plain folder name (no '/', '\\' or NUL, not '.' or '..'), got {shown(name)}")
    return name


def _path_text(path: str) -> str:
    if "\0" in path:
        raise ValueError(f"must be a path without NUL characters, got {shown(path)}")
    if not path.strip():
        # An empty value (``--set out_dir=$DIR`` with DIR unset) would otherwise mean the working
        # folder, or for model.init_from no checkpoint at all, and the run would go on without a word.
        raise ValueError(f"must name a file or folder, got {shown(path)}")
    return path


def _bot_specs(specs: list[str]) -> list[str]:
    """Refuse names that are no bot, and bots that cannot be built from their spec (``guided``
    needs ``policy=PATH``; options must be the bot's own): training builds its bots when a run
    first meets them, so a bad spec would otherwise fail only after training time was spent."""
    if not all(spec.partition(":")[0] in AGENT_NAMES for spec in specs):
        raise ValueError(f"must be names from {AGENT_NAMES}, got {shown(specs)}")
    for spec in specs:
        try:
            resolve_agent(spec, seed=0)
        except (ValueError, FileNotFoundError) as err:
            raise ValueError(f"bot {spec!r} cannot be built ({err})") from None
    return specs


BotSpecs = Annotated[OneOrMore[str], AfterValidator(_bot_specs)]
FolderName = Annotated[str, Field(max_length=255), AfterValidator(_folder_name)]
PathText = Annotated[str, AfterValidator(_path_text)]
Positive = Annotated[WholeNumber, Field(ge=1)]
NonNegative = Annotated[WholeNumber, Field(ge=0)]
RulesWeight = Annotated[float, Field(gt=0, le=MAX_RULES_WEIGHT, allow_inf_nan=False)]


# ---------------------------------------------------------------------------------
# The sections
# ---------------------------------------------------------------------------------
class EnvConfig(StrictModel):
    """The batched environment the rollouts run on.

    Attributes:
        num_players: table sizes; game ``i`` of the batch gets ``num_players[i % len]``,
            so ``[2, 3, 4]`` trains one network on a mix of table sizes.
        rules: rule preset name, or a list of them for a curriculum: the games are split
            between them by ``rules_weights`` (each game keeps its rules; see
            :class:`~loveletter_env.batched.mixed.MixedRulesBatched`), e.g. ``[classic,
            mini6, mini7, mini8, mini9]`` trains one network on the full game and every rung.
        rules_weights: one relative weight per entry of ``rules``, each above 0 and at most
            :data:`MAX_RULES_WEIGHT` (1e6). The default weights (half the games on the full
            game, an eighth on each rung) go with the default ``rules``; rules given without
            weights get equal shares.
        episode: ``"round"`` (reward after every round) or ``"game"``.
        num_games: games played side by side.
        rollout_steps: turns each game advances per rollout (the rollout has
            ``num_games * rollout_steps`` turns, of which the learner's are trained on).
    """

    num_players: Annotated[OneOrMore[TableSize], Field(min_length=1)] = [2]
    rules: Annotated[OneOrMore[RulesName], Field(min_length=1)] = ["classic", "mini6", "mini7", "mini8", "mini9"]
    rules_weights: list[RulesWeight] | None = [4, 1, 1, 1, 1]
    episode: Literal["round", "game"] = "round"
    num_games: Annotated[WholeNumber, Field(ge=1, le=MAX_NUM_GAMES)] = 256
    rollout_steps: Annotated[WholeNumber, Field(ge=2, le=MAX_ROLLOUT_STEPS)] = 32

    @model_validator(mode="before")
    @classmethod
    def _weights_follow_the_rules(cls, data: Any) -> Any:
        """The default weights belong to the default rules: ``--set env.rules=mini8`` alone
        trains on mini8, rather than failing on five weights for one preset."""
        if isinstance(data, dict) and "rules" in data and "rules_weights" not in data:
            return {**data, "rules_weights": None}
        return data


class ModelConfig(StrictModel):
    """The :class:`~training.learn.ppo.ActorCritic` network.

    Attributes:
        hidden_sizes: widths of the shared trunk's layers.
        init_from: a checkpoint (file or run folder) whose weights start the run, e.g. a
            2-player agent to fine-tune on mixed table sizes; its ``hidden_sizes`` must match.
            ``None`` (not an empty path): the run starts from fresh weights.
        average_from: from this fraction of ``total_steps`` on, the trainer also keeps the
            running mean of the network's weights after every update, and that mean, not the
            last weights, is the run's final network (``result.pt``). Self-play's last
            weights wander around an equilibrium from update to update; their mean over the
            run's tail sits nearer to it. ``None``: the last weights are the final network.
            The default, 0.5, averages the second half of the run.
    """

    hidden_sizes: Annotated[
        OneOrMore[Annotated[WholeNumber, Field(ge=1, le=MAX_HIDDEN_SIZE)]],
        Field(min_length=1, max_length=MAX_HIDDEN_LAYERS),
    ] = [256, 256]
    init_from: PathText | None = None
    average_from: Annotated[float, Field(ge=0, lt=1)] | None = 0.5


class OpponentConfig(StrictModel):
    """Who sits in the seats the learner does not control.

    Each episode of each game draws its kind with these relative weights:
    ``current`` (every seat is the learning network: self-play, every seat is trained on),
    ``past`` (one learner seat, the others a snapshot from the pool) or ``bots`` (one
    learner seat, the others heuristic bots: ``rule`` and ``random`` compiled, on the
    CPU or as CUDA kernels with the env, the others in Python, which is slow).

    Attributes:
        current, past, bots: relative weights (>= 0, not all 0). The default is pure
            self-play, which with ``ppo.magnet_coef`` heads for an equilibrium; past
            snapshots and bots pull towards beating them instead.
        bot_names: bots to draw from: bot names, with options where the bot takes them
            (``"ismcts:iterations=50"``), as everywhere an agent spec is read.
        snapshot_every: add the current weights to the pool every this many updates.
        pool_size: snapshots kept (the oldest leave first).
        past_greedy: snapshots play their most likely action instead of sampling (the
            exploitability tool uses it to train against an agent exactly as it plays).
    """

    current: Annotated[float, Field(ge=0)] = 1.0
    past: Annotated[float, Field(ge=0)] = 0.0
    bots: Annotated[float, Field(ge=0)] = 0.0
    bot_names: BotSpecs = ["rule", "belief"]
    snapshot_every: Positive = 5
    pool_size: Positive = 20
    past_greedy: bool = False


class EvalConfig(StrictModel):
    """Periodic evaluation through ``training.measure.evaluation.evaluate``.

    Attributes:
        every: evaluate every this many updates (and at the end); 0 disables.
        rounds: rounds per opponent, seats rotated (at most
            :data:`~training.measure.matches.MAX_EPISODES`, as every evaluation).
        opponents: one evaluation per name; the learner plays against ``num_players - 1`` copies.
        num_players: table size of the evaluation.
        rules: rule preset of the evaluation (default: the first of ``env.rules``).
        best_by: opponent whose win rate picks the ``best`` checkpoint.
        greedy: evaluate the most likely action instead of sampling; it is also how the
            run's checkpoints play by default (``load_agent``, agent specs). The default
            samples: the magnet trains a mixed strategy, which a best response exploits
            less when it is played as one.
        final_rounds: at the end of a run, ``best.pt`` and the final weights play this many
            more rounds each against ``best_by`` (new deals, the same for both) and the
            better becomes ``result.pt``; 0 makes the final weights the result unmeasured.
        duplicate: play every deal once in each seat rotation (``python -m
            training.evaluate --duplicate``), which cancels much of the deals' luck and so
            picks ``best.pt`` and ``result.pt`` on steadier figures; ``rounds`` and
            ``final_rounds`` must then be multiples of ``num_players``.
    """

    every: NonNegative = 20
    # At most what one evaluation plays (MAX_EPISODES): a larger count would be refused only
    # when the run first evaluates, or for final_rounds at its end, after the training time.
    rounds: Annotated[Positive, Field(le=MAX_EPISODES)] = 300
    opponents: BotSpecs = ["random", "rule"]
    num_players: TableSize = 2
    rules: RulesName | None = None
    best_by: str = "rule"
    greedy: bool = False
    final_rounds: Annotated[NonNegative, Field(le=MAX_EPISODES)] = 2000
    duplicate: bool = True


#: Keys a schedule stage may change: what the learner trains against and how, never the
#: network, the seed or where outputs go. (``opponents.pool_size`` fixes the pool's capacity.)
SCHEDULABLE_KEYS: tuple[str, ...] = (
    *(f"ppo.{name}" for name in PPOConfig.model_fields),
    *(f"opponents.{name}" for name in OpponentConfig.model_fields if name != "pool_size"),
    "env.num_players",
    "env.num_games",
    "env.rules",
    "env.rules_weights",
)


class StageConfig(StrictModel):
    """One stage of a run's schedule.

    Attributes:
        at_step: the turn count (``global_step``) from which the stage applies.
        set: dotted keys and their values from then on, e.g. ``{"ppo.learning_rate": 4e-4,
            "opponents.bots": 0.5, "env.num_players": [2, 4]}``; only :data:`SCHEDULABLE_KEYS`.
            Stages add up: a key keeps the value the last stage before it gave.
    """

    at_step: Annotated[WholeNumber, Field(gt=0)]
    set: Annotated[dict[str, Any], Field(min_length=1)]


class TrainConfig(StrictModel):
    """A whole self-play run, checked when it is built (:func:`from_dict`, :func:`load_config`).

    Attributes:
        run_name: outputs go to ``<out_dir>/<run_name>/``.
        out_dir: parent folder of runs.
        seed: seeds the environment, the network and every sampling generator.
        total_steps: environment turns to play (every seat's turns count).
        device: ``"auto"`` (CUDA when available), ``"cpu"`` or ``"cuda"``.
        save_every: write ``latest.pt`` and a numbered snapshot every this many updates.
        torch_threads: CPU threads torch may use (0: torch's default, which depends on the
            machine). A fixed number keeps a seeded run's weights the same everywhere, so the
            count never follows the machine's load. The default, 1, suits this small network
            on any CPU: beside another job, two threads wait on each other and the update
            runs several times slower (docs/training.md has the figures).
        tf32: on CUDA, let float32 matrix products run on TensorFloat-32 tensor cores
            (about 10 bits of mantissa in the products, float32 sums; several times faster on
            an A100, H100 or H200). No effect on the CPU.
        schedule: stages that change some keys at given turn counts (:class:`StageConfig`);
            the sections above are the run's first stage. With ``ppo.anneal_lr`` the learning
            rate decays linearly to 0 within each stage, so a staged run trains as the same
            stages run one after another with ``model.init_from`` would.
    """

    run_name: FolderName = "default"
    out_dir: PathText = "checkpoints"
    seed: Annotated[WholeNumber, Field(ge=0, lt=MAX_SEED + 1)] = 0
    total_steps: Positive = 5_500_000
    device: Device = "auto"
    save_every: Positive = 25
    torch_threads: Annotated[WholeNumber, Field(ge=0, le=MAX_TORCH_THREADS)] = 1
    tf32: bool = True
    env: EnvConfig = Field(default_factory=EnvConfig)
    model: ModelConfig = Field(default_factory=ModelConfig)
    ppo: PPOConfig = Field(default_factory=PPOConfig)
    opponents: OpponentConfig = Field(default_factory=OpponentConfig)
    eval: EvalConfig = Field(default_factory=EvalConfig)
    schedule: list[StageConfig] = []

    @model_validator(mode="after")
    def _check_keys_together(self) -> TrainConfig:
        """The rules that tie keys together (each key's own rules are in its type)."""
        e, o, v = self.env, self.opponents, self.eval
        rungs = [PRESETS[name] for name in e.rules if PRESETS[name].is_rung]
        for rung in rungs:
            if set(e.num_players) == {rung.rung_players}:
                continue
            raise ValueError(
                f"env.num_players must be [{rung.rung_players}] on the ladder rung {rung.name!r} "
                f"({rung.rung_players} players only), got {e.num_players}; "
                f"env.rules is {e.rules}: for other table sizes set env.rules to presets without a rung, "
                "e.g. env.rules=classic"
            )
        if len(set(e.rules)) != len(e.rules):
            raise ValueError(f"env.rules must name each preset once, got {e.rules}")
        if e.rules_weights is not None and len(e.rules_weights) != len(e.rules):
            raise ValueError(
                f"env.rules_weights must give one weight per entry of env.rules ({len(e.rules)}), got {e.rules_weights}"
            )
        if e.num_games < len(e.rules):
            raise ValueError(f"env.num_games must be at least one game per entry of env.rules, got {e.num_games}")
        eval_rules = PRESETS[self.eval_rules]
        if eval_rules.is_rung and v.num_players != eval_rules.rung_players:
            raise ValueError(
                f"eval.num_players must be {eval_rules.rung_players} on the ladder rung {self.eval_rules!r} "
                f"({eval_rules.rung_players} players only), got {v.num_players}"
            )
        if self.steps_per_update > MAX_ROLLOUT_TURNS:
            raise ValueError(
                f"env.num_games times env.rollout_steps ({e.rollout_steps}) must be at most "
                f"{MAX_ROLLOUT_TURNS:,} turns per rollout, got {e.num_games}"
            )
        parameters = count_parameters(self.model.hidden_sizes)
        if parameters > MAX_PARAMETERS:
            raise ValueError(
                f"model.hidden_sizes must give a network of at most {MAX_PARAMETERS:,} parameters "
                f"(this one has {parameters:,}), got {self.model.hidden_sizes}"
            )
        if o.current + o.past + o.bots == 0:
            raise ValueError("opponents.current, opponents.past and opponents.bots are all 0")
        if o.bots > 0 and not o.bot_names:
            raise ValueError("opponents.bot_names must name a bot when opponents.bots > 0, got []")
        if len(set(v.opponents)) != len(v.opponents):
            # Evaluations are keyed by the bot's spec: a second one would play again and replace the first.
            raise ValueError(f"eval.opponents must name each bot once, got {v.opponents}")
        if v.every > 0 and v.best_by not in v.opponents:
            raise ValueError(f"eval.best_by must be one of eval.opponents {v.opponents}, got {v.best_by!r}")
        for key, rounds in (("rounds", v.rounds), ("final_rounds", v.final_rounds)):
            if v.duplicate and rounds % v.num_players:
                raise ValueError(
                    f"eval.{key} must be a multiple of eval.num_players ({v.num_players}) with eval.duplicate, "
                    f"which plays every deal once in each seat rotation, got {rounds}"
                )
        self._check_schedule()
        return self

    def _check_schedule(self) -> None:
        previous = 0
        for i, stage in enumerate(self.schedule):
            where = f"schedule[{i}]"
            if stage.at_step <= previous:
                raise ValueError(
                    f"{where}.at_step must be above the previous stage's ({previous}), got {stage.at_step}"
                )
            previous = stage.at_step
            for key in stage.set:
                if key not in SCHEDULABLE_KEYS:
                    close = difflib.get_close_matches(key, SCHEDULABLE_KEYS, n=2)
                    guess = f"; did you mean {' or '.join(map(repr, close))}?" if close else ""
                    hint = "" if key in _dotted_keys(TrainConfig) else f" (no such key{guess})"
                    raise ValueError(
                        f"{where}.set: {key!r} cannot change during a run{hint}; "
                        f"a stage may set {list(SCHEDULABLE_KEYS)}"
                    )
            try:
                self.at_step(stage.at_step)
            except ConfigError as err:
                raise ValueError(f"{where} (from turn {stage.at_step:,}): {err}") from None

    def validate(self) -> TrainConfig:  # type: ignore[override]  # BaseModel.validate is pydantic 1's
        """Check the config again (fields assigned by hand are not checked when assigned): raise
        :class:`ConfigError` naming the first bad value; return ``self``."""
        from_dict(type(self), to_dict(self))
        return self

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

    def stages(self) -> list[TrainConfig]:
        """This config, then the one in force from each stage of its ``schedule`` on
        (:meth:`at_step`): every setting the run may train with."""
        return [self, *(self.at_step(stage.at_step) for stage in self.schedule)]

    # -- derived values ---------------------------------------------------------------
    @property
    def eval_rules(self) -> str:
        """The rules evaluations play: ``eval.rules``, or the first of ``env.rules``."""
        return self.eval.rules or self.env.rules[0]

    @property
    def steps_per_update(self) -> int:
        """Environment turns played per rollout."""
        return self.env.num_games * self.env.rollout_steps


def count_parameters(hidden_sizes: list[int]) -> int:
    """Parameters of the :class:`~training.learn.ppo.ActorCritic` with these layer sizes, counted on
    torch's meta device (shapes only, no memory)."""
    import torch

    from training.learn.ppo import ActorCritic

    with torch.device("meta"):
        return sum(p.numel() for p in ActorCritic(hidden_sizes).parameters())


# ---------------------------------------------------------------------------------
# dict <-> model
# ---------------------------------------------------------------------------------
Model = TypeVar("Model", bound=BaseModel)


def from_dict(cls: type[Model], data: Any) -> Model:
    """Build and check model ``cls`` from a (possibly partial) nested dict; missing keys keep
    their defaults; unknown keys and bad values raise :class:`ConfigError` naming them."""
    try:
        return cls.model_validate(data)
    except ValidationError as err:
        error = err
    unknown = [item["loc"] for item in error.errors() if item["type"] == "extra_forbidden"]
    if unknown:
        hints = "".join(_suggestion(cls, loc) for loc in unknown)
        raise ConfigError(
            f"unknown config key(s) {[dotted(loc) for loc in unknown]}{hints}; "
            f"known keys: {sorted(_section(cls, unknown[0][:-1]).model_fields)}"
        )
    raise ConfigError(explain(error, lambda loc: dotted(loc) or "config"))


def _section(cls: type[BaseModel], loc: tuple[Any, ...]) -> type[BaseModel]:
    """The model that holds the keys at ``loc`` (``("schedule", 0)`` -> :class:`StageConfig`)."""
    section: Any = cls
    for part in loc:
        section = section.model_fields[part].annotation if isinstance(part, str) else typing.get_args(section)[0]
    return typing.cast(type[BaseModel], section)


def _dotted_keys(cls: type[BaseModel], prefix: str = "") -> list[str]:
    """Every key of model ``cls``, nested sections as ``section.key``."""
    keys: list[str] = []
    for name, info in cls.model_fields.items():
        nested = isinstance(info.annotation, type) and issubclass(info.annotation, BaseModel)
        keys += _dotted_keys(info.annotation, f"{prefix}{name}.") if nested else [prefix + name]  # type: ignore[arg-type]
    return keys


def _suggestion(cls: type[BaseModel], loc: tuple[Any, ...]) -> str:
    """`` (did you mean 'ppo.learning_rate'?)`` for a key that lives in another section or is misspelt."""
    prefix = dotted(loc[:-1]) + "." if len(loc) > 1 else ""
    keys = _dotted_keys(_section(cls, loc[:-1]), prefix)
    moved = [k for k in keys if k.rsplit(".", 1)[-1] == loc[-1]]
    close = moved or difflib.get_close_matches(dotted(loc), keys, n=2)
    return f" (did you mean {' or '.join(map(repr, close))}?)" if close else ""


def to_dict(config: BaseModel) -> dict:
    """Plain nested dict (YAML- and ``torch.load(weights_only=True)``-safe)."""
    return config.model_dump()


def dotted_keys(data: dict, prefix: str = "") -> dict[str, Any]:
    """A nested config dict as one level of dotted keys (``{"ppo.learning_rate": 8e-4, ...}``)."""
    flat: dict[str, Any] = {}
    for key, value in data.items():
        flat.update(dotted_keys(value, f"{prefix}{key}.") if isinstance(value, dict) else {f"{prefix}{key}": value})
    return flat


# ---------------------------------------------------------------------------------
# Files and overrides
# ---------------------------------------------------------------------------------
class _YamlLoader(yaml.SafeLoader):
    """PyYAML's safe loader that also reads ``3e-4`` and ``1.0e5`` as numbers, as YAML 1.2 does
    (PyYAML's YAML 1.1 reads them as text). Quoted text (``"1e5"``) stays text.

    Integers are read as YAML 1.2 reads them too: ``010`` is ten, not YAML 1.1's octal 8 (a
    zero-padded ``--set seed=010`` would run seed 8, and ``08`` be refused as text), octal is
    written ``0o17``, and ``1:30`` is text, not YAML 1.1's base-60 90. ``0x10`` and ``1_000``
    still read as numbers.

    It refuses a key given twice in one mapping, naming both lines: PyYAML would keep the
    second and drop the first without a word, a whole section when a section is given twice.
    """

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == "tag:yaml.org,2002:merge":  # `<<: *base`, whose keys the mapping may override
                continue
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            try:
                given_before = key in first_line
            except TypeError:  # a key that cannot be one (a list): the base class says so
                continue
            if given_before:
                problem = f"the key {key!r} is given twice, on line {first_line[key]} and on line {line}"
                raise yaml.constructor.ConstructorError(None, None, problem, key_node.start_mark)
            first_line[key] = line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_int(self, node: yaml.ScalarNode) -> int:
        """An integer as :data:`_YAML_1_2_INT` matches it: decimal, even with leading zeros,
        unless it starts ``0x`` or ``0o``."""
        text = str(self.construct_scalar(node)).replace("_", "")
        return int(text, 0) if text.lstrip("+-")[:2].lower() in ("0x", "0o") else int(text, 10)


_INT_TAG, _FLOAT_TAG = "tag:yaml.org,2002:int", "tag:yaml.org,2002:float"
#: Plain scalars read as integers: YAML 1.2's (with ``_`` between digits, as before).
_YAML_1_2_INT = re.compile(r"^(?:[-+]?[0-9][0-9_]*|[-+]?0x[0-9a-fA-F_]+|[-+]?0o[0-7_]+)$")
#: Plain scalars read as floats: YAML 1.2's, exponents without a dot included (``3e-4``).
_YAML_1_2_FLOAT = re.compile(
    r"^(?:[-+]?(?:[0-9][0-9_]*(?:\.[0-9_]*)?|\.[0-9][0-9_]*)(?:[eE][-+]?[0-9]+)?|[-+]?\.(?:inf|Inf|INF)|\.(?:nan|NaN|NAN))$"
)
# PyYAML's YAML 1.1 number patterns (octal 010, base-60 1:30 and 1:30.5, binary 0b1; no 3e-4)
# are replaced by YAML 1.2's. The float pattern comes second: it also matches every integer.
_YamlLoader.yaml_implicit_resolvers = {
    first: [(tag, pattern) for tag, pattern in resolvers if tag not in (_INT_TAG, _FLOAT_TAG)]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}
_YamlLoader.add_implicit_resolver(_INT_TAG, _YAML_1_2_INT, list("-+0123456789"))
_YamlLoader.add_implicit_resolver(_FLOAT_TAG, _YAML_1_2_FLOAT, list("-+0123456789."))
_YamlLoader.add_constructor(_INT_TAG, _YamlLoader.construct_yaml_int)


class _YamlDumper(yaml.SafeDumper):
    """PyYAML's safe dumper, quoting the text that :class:`_YamlLoader` would read as something
    else: it decides by its resolvers, and YAML 1.1's write ``1e5`` and ``08`` unquoted, which
    read back as numbers (a run named so could not be resumed from its config.yaml)."""

    yaml_implicit_resolvers = _YamlLoader.yaml_implicit_resolvers


def _load_yaml(text: str, source: str, key: str = "") -> Any:
    """``text`` read as YAML (the value of ``key``); :class:`ConfigError` naming ``source`` if it is
    not YAML, refers to itself, or is nested too deeply."""
    try:
        value = yaml.load(text, Loader=_YamlLoader)  # a SafeLoader
    except RecursionError:
        raise ConfigError(f"{source} is nested too deeply (the limit is {MAX_NESTING} levels)") from None
    except (yaml.YAMLError, ValueError) as err:  # ValueError: an integer of more than 4,300 digits
        raise ConfigError(f"{source} is not valid YAML: {err}") from None
    _check_tree(value, source, key)
    return value


def _check_tree(root: Any, source: str, key: str) -> None:
    """Refuse a value that contains itself (a YAML alias used inside its own anchor, such as
    ``a: &x [*x]``), naming the key where the loop closes; keys that are not text (``1:``,
    ``true:``); values nested too deeply or too large (aliases of aliases)."""
    budget = [MAX_NODES]

    def walk(value: Any, key: str, open_nodes: tuple[int, ...]) -> None:
        if not isinstance(value, (dict, list)):
            return
        if id(value) in open_nodes:
            raise ConfigError(f"{source}: {key or 'the top level'} refers to itself (a recursive YAML alias)")
        if len(open_nodes) >= MAX_NESTING:
            raise ConfigError(f"{source} is nested too deeply: {key} is more than {MAX_NESTING} levels down")
        budget[0] -= 1
        if budget[0] < 0:
            raise ConfigError(f"{source} holds more than {MAX_NODES:,} lists and mappings (aliases of aliases?)")
        for child_key, child in value.items() if isinstance(value, dict) else enumerate(value):
            child_name = (
                f"{key}[{child_key}]" if isinstance(value, list) else f"{key}.{child_key}" if key else str(child_key)
            )
            if isinstance(value, dict) and not isinstance(child_key, str):  # YAML reads `1:` as a number
                kind = type(child_key).__name__
                raise ConfigError(f"{source}: config key {child_name} must be a name, got the {kind} {child_key!r}")
            walk(child, child_name, (*open_nodes, id(value)))

    walk(root, key, ())


def parse_override(text: str) -> tuple[list[str], Any]:
    """``"ppo.learning_rate=3e-4"`` -> (``["ppo", "learning_rate"]``, ``3e-4``); the value is YAML."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"an override looks like section.key=value, got {text!r}")
    if not all(part.strip() for part in key.split(".")):  # `ppo..gamma`, `.seed`: a key named ''
        raise ConfigError(f"an override's key is names joined by single dots (section.key=value), got {text!r}")
    return key.split("."), _load_yaml(raw, f"override {shown(text)}", key) if raw.strip() else ""


def text_override(key: str, text: str) -> str:
    """The override that sets ``key`` to ``text`` as given (a ``--run-name``): quoted, so that
    YAML reads no number, date, ``null`` or comment into a name such as ``2024-01-01``, ``42``
    or ``trial #2``."""
    return f"{key}={json.dumps(text)}"  # a JSON string is a YAML double-quoted one


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
    """Set each dotted override into the nested dict ``data`` (in place; also returned).

    Overrides that set ``env.rules`` but not ``env.rules_weights`` drop the weights ``data``
    gives: those were for the rules replaced (as :class:`EnvConfig` drops the defaults' weights),
    so ``--config configs/default.yaml --set env.rules=mini8`` trains on mini8, as the defaults do.
    """
    parsed = [(text, *parse_override(text)) for text in overrides]
    keys = {".".join(path) for _, path, _ in parsed}
    if "env.rules" in keys and "env.rules_weights" not in keys and isinstance(data.get("env"), dict):
        data["env"].pop("rules_weights", None)
    for text, path, value in parsed:
        set_dotted(data, path, value, f"override {shown(text)}")
    return data


def _not_a_file(path: Path) -> str:
    """Why ``path``, which is not a readable file, cannot be read: for an error message."""
    return "is not a file" if path.exists() else "does not exist"


def read_yaml(path: str | Path) -> dict:
    """A YAML config file as a dict (empty file: empty dict)."""
    path = Path(path)
    source = f"config file {str(path)!r}"
    if not path.is_file():
        raise ConfigError(f"{source} {_not_a_file(path)}")
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_CONFIG_BYTES + 1)  # at most: the size a file reports can be wrong
    except OSError as err:
        raise ConfigError(f"{source} cannot be read: {err}") from None
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError(f"{source} is too large: the limit is {MAX_CONFIG_BYTES:,} bytes")
    try:
        data = _load_yaml(raw.decode("utf-8"), source) or {}
    except UnicodeDecodeError as err:
        raise ConfigError(f"{source} is not valid YAML: {err}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{source} must hold a mapping of sections, got {type(data).__name__}")
    return data


def _merged(base: dict, changes: dict) -> dict:
    """``base`` with ``changes`` laid over it: sections merge key by key, and any other value
    (a list, a number, ``null``) replaces the base's whole."""
    merged = dict(base)
    for key, value in changes.items():
        below = merged.get(key)
        merged[key] = _merged(below, value) if isinstance(value, dict) and isinstance(below, dict) else value
    return merged


def read_config(path: str | Path) -> dict:
    """A config file as a dict, laid over the file it extends, if it names one.

    A top-level ``base: OTHER.yaml`` (a path relative to the file that names it) makes the file
    a list of changes to ``OTHER.yaml``: sections merge key by key, any other value replaces the
    base's. A base may name its own base; files that extend each other in a loop are refused.

    Raises:
        ConfigError: a file in the chain is missing or not a config, ``base`` is not a file
            name, or the chain loops; the message names the file that names the bad base.
    """
    chain: list[Path] = []

    def layered(path: Path) -> dict:
        chain.append(path.resolve())
        data = read_yaml(path)
        if BASE_KEY not in data:
            return data
        source = f"config file {str(path)!r}"
        name = data.pop(BASE_KEY)
        if not isinstance(name, str) or not name.strip() or "\0" in name:
            raise ConfigError(f"{source}: {BASE_KEY} must name the config file it extends, got {shown(name)}")
        base = path.parent / name
        if not base.is_file():
            raise ConfigError(f"{source}: {BASE_KEY} {name!r} ({base}) {_not_a_file(base)}")
        if base.resolve() in chain:
            loop = " -> ".join(str(file) for file in [*chain, base.resolve()])
            raise ConfigError(f"{source}: {BASE_KEY} {name!r} closes a loop of files that extend each other: {loop}")
        return _merged(layered(base), data)

    return layered(Path(path))


def load_config(path: str | Path | None = None, overrides: Iterable[str] = ()) -> TrainConfig:
    """Defaults, then the YAML file at ``path`` (if any, with the file it extends: :func:`read_config`),
    then dotted ``overrides``; validated.

    A bad key or value that the file holds is a :class:`ConfigError` naming the file as well as
    the key (a run's ``config.yaml`` edited by hand reads as that file's mistake, not a ``--set``'s);
    one that only the overrides bring in names the key alone, as the override does.
    """
    data = read_config(path) if path is not None else {}
    overrides = list(overrides)
    merged = apply_overrides(copy.deepcopy(data), overrides)
    try:
        return from_dict(TrainConfig, merged)
    except ConfigError as err:
        if path is None:
            raise
        problem = str(err)
    try:
        from_dict(TrainConfig, data)
    except ConfigError as own:
        # The file is wrong on its own: name it, and say when the overrides changed the problem.
        where = f"config file {str(path)!r}" + ("" if str(own) == problem else " with its overrides")
        raise ConfigError(f"{where}: {problem}") from None
    raise ConfigError(problem)  # the file is fine: an override is at fault, and names its key


#: An example of ``--set`` for the options' help.
SET_EXAMPLE = "--set ppo.learning_rate=3e-4 --set env.rules=classic --set env.num_players=[2,3,4]"


def add_config_options(parser: argparse.ArgumentParser, config_help: str, set_example: str = SET_EXAMPLE) -> None:
    """Give ``parser`` the options of every command that trains: ``--config FILE``
    (``args.config``) and repeatable ``--set KEY=VALUE`` overrides (``args.overrides``), the two
    arguments of :func:`load_config`; ``config_help`` says what the file configures, and
    ``set_example`` shows overrides the command takes (a command that sets the rules itself
    refuses the default example's)."""
    parser.add_argument("--config", help=config_help)
    parser.add_argument(
        "--set",
        dest="overrides",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help=f"dotted config override, repeatable, e.g. {set_example}",
    )


def save_config(config: TrainConfig, path: str | Path) -> None:
    """Write ``config`` as YAML (every key, so the file documents the whole run), atomically:
    ``--resume`` rewrites a run's ``config.yaml``, and a write cut short (Ctrl-C, a full disk)
    must leave the one that was there, without which the run cannot be resumed."""
    text = yaml.dump(to_dict(config), Dumper=_YamlDumper, sort_keys=False)
    with replacing(path) as temporary:
        temporary.write_text(text)

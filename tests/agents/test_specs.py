"""Agent specs (loveletter_env.agents.specs): one resolver for evaluation, play and the Gymnasium env's
opponents; the environment package never imports the training package."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import types
from pathlib import Path

import gymnasium
import numpy as np
import pytest
from conftest import ROOT

import loveletter_env  # noqa: F401  (registers the Gymnasium id)
from loveletter_env.agents import ISMCTSAgent, RandomAgent, RuleAgent, checkpoint_loading, specs
from loveletter_env.agents.specs import AgentSpecError, AgentTypeError, agent_label, resolve_agent
from loveletter_env.wrappers.opponents import make_opponents


def test_bot_names_with_options_work_everywhere():
    agent = resolve_agent("ismcts:iterations=7,width=2", seed=3)
    assert isinstance(agent, ISMCTSAgent) and (agent.iterations, agent.width) == (7, 2)
    env = gymnasium.make("loveletter/LoveLetter-v0", num_players=3, opponents="ismcts:iterations=5")
    assert [o.iterations for o in env.unwrapped.opponents] == [5, 5]


def test_unknown_options_list_the_valid_ones():
    with pytest.raises(ValueError, match="no option 'iteration'; its options are iterations, exploration, width"):
        resolve_agent("ismcts:iteration=10")
    with pytest.raises(ValueError, match="no option 'depth'; it takes no options"):
        resolve_agent("rule:depth=2")
    with pytest.raises(ValueError, match="key=value"):
        resolve_agent("ismcts:iterations")
    with pytest.raises(AgentSpecError, match="the option 'iterations' is given twice"):
        resolve_agent("ismcts:iterations=10,iterations=20")


def test_unknown_names_and_non_agents_are_named():
    with pytest.raises(AgentSpecError, match="unknown agent 'wizard'"):
        resolve_agent("wizard")
    # Both a ValueError (evaluate's callers) and a TypeError (the env's callers).
    for error in (ValueError, TypeError):
        with pytest.raises(error, match="an opponent must be"):
            resolve_agent(42, role="opponent")
    with pytest.raises(FileNotFoundError, match="does not exist"):
        resolve_agent("missing/model.pt")


def test_checkpoints_go_through_the_registered_loader(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    calls: list[tuple[Path, int, bool | None]] = []

    def loader(path: Path, seed: int, greedy: bool | None) -> RuleAgent:
        calls.append((path, seed, greedy))
        return RuleAgent(seed=seed)

    monkeypatch.setattr(checkpoint_loading, "_loaders", {})
    specs.register_checkpoint_loader(loader, network=lambda path: ("network", path))
    file = tmp_path / "agent.pt"
    file.write_bytes(b"")
    run_folder = tmp_path / "rule"  # a folder named like a bot: given as a Path it is a path
    run_folder.mkdir()
    assert isinstance(resolve_agent(str(file), seed=5), RuleAgent)
    assert isinstance(resolve_agent(run_folder), RuleAgent)
    assert isinstance(resolve_agent("rule"), RuleAgent) and len(calls) == 2  # the name stays a bot
    # A bare path leaves the way of playing to the checkpoint; a checkpoint: spec can set it.
    assert isinstance(resolve_agent(f"checkpoint:path={file},greedy=False", seed=2), RuleAgent)
    assert isinstance(resolve_agent(f"checkpoint:path={file},greedy=True"), RuleAgent)
    assert isinstance(resolve_agent(f"checkpoint:path={run_folder}"), RuleAgent)
    assert calls == [(file, 5, None), (run_folder, 0, None), (file, 2, False), (file, 0, True), (run_folder, 0, None)]
    assert specs.load_checkpoint_network(file) == ("network", file)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("checkpoint:", r"a checkpoint is given as checkpoint:path=FILE\[,greedy=True\|False\]$"),
        ("checkpoint:greedy=False", r"a checkpoint is given as checkpoint:path=FILE"),
        ("checkpoint:path=a.pt,sample=True", r"\(no option 'sample'; its options are path, greedy\)$"),
        ("checkpoint:path=a.pt,greedy=maybe", r"greedy must be True or False, got 'maybe'$"),
        ("checkpoint:path=a.pt,greedy=1", r"greedy must be True or False, got 1$"),
        ("checkpoint:path", r"expected name:key=value"),
    ],
)
def test_checkpoint_specs_refuse_missing_paths_unknown_options_and_bad_modes(spec, message, monkeypatch):
    def loader(path: Path, seed: int, greedy: bool | None) -> RuleAgent:
        raise AssertionError("nothing is loaded for a bad spec")

    monkeypatch.setattr(checkpoint_loading, "_loaders", {"agent": loader})
    with pytest.raises(AgentSpecError, match=rf"^agent spec '{re.escape(spec)}': (.* )?{message}"):
        resolve_agent(spec)


def test_checkpoint_specs_play_as_told_and_bare_paths_as_the_checkpoint_says():
    pytest.importorskip("torch")
    shipped = ROOT / "checkpoints/shipped/ppo_2p.pt"  # its run evaluated it greedily
    assert resolve_agent(str(shipped)).greedy is True
    assert resolve_agent(f"checkpoint:path={shipped}").greedy is True
    assert resolve_agent(f"checkpoint:path={shipped},greedy=False").greedy is False
    assert agent_label(f"checkpoint:path={shipped},greedy=False") == f"{shipped} (sampling)"
    assert agent_label(f"checkpoint:path={shipped},greedy=True") == f"{shipped} (greedy)"
    assert agent_label(f"checkpoint:path={shipped}") == f"checkpoint:path={shipped}"
    assert agent_label("checkpoint:path=a.pt,oops=1") == "checkpoint:path=a.pt,oops=1"  # labels never raise


@pytest.mark.parametrize("name", ["ppo_2p_eq.pt", "ppo_2to4p_eq.pt"])
def test_the_equilibrium_networks_shipped_sample_their_policy_by_default(name):
    # An equilibrium of this game is mixed: these files are measured sampling, so they must play so.
    pytest.importorskip("torch")
    shipped = ROOT / "checkpoints/shipped" / name
    assert resolve_agent(str(shipped)).greedy is False
    assert resolve_agent(f"checkpoint:path={shipped},greedy=True").greedy is True


def test_checkpoints_load_through_training_without_importing_it(tmp_path: Path):
    pytest.importorskip("torch")
    code = (
        "import sys, torch\n"
        "from loveletter_env.agents.specs import load_checkpoint_agent, load_checkpoint_network\n"
        "assert 'training' not in sys.modules\n"
        f"agent = load_checkpoint_agent({str(ROOT / 'checkpoints/shipped/ppo_2p.pt')!r}, seed=1)\n"
        f"net = load_checkpoint_network({str(ROOT / 'checkpoints/shipped/ppo_2p.pt')!r})\n"
        "print(type(agent).__name__, type(net).__name__, net.training)\n"
    )
    run = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert run.returncode == 0, run.stderr
    assert run.stdout.split() == ["PolicyAgent", "ActorCritic", "False"]


def test_factories_objects_and_labels():
    agent = RandomAgent(seed=1)
    assert resolve_agent(agent) is agent
    assert isinstance(resolve_agent("loveletter_env.agents.random_agent:RandomAgent", seed=1), RandomAgent)
    with pytest.raises(ValueError, match="has no callable 'Nothing'"):
        resolve_agent("loveletter_env.agents.random_agent:Nothing")
    assert agent_label("ismcts:iterations=5") == "ismcts:iterations=5"
    assert agent_label(agent) == "random" and agent_label(object()) == "object"
    mixed = make_opponents(["rule", "ismcts:iterations=3"], 2, seed=0)
    assert isinstance(mixed[0], RuleAgent) and mixed[1].iterations == 3


@pytest.mark.parametrize("role", ["agent", "opponent"])
def test_an_agent_class_is_refused_where_an_agent_object_is_expected(role):
    # A class has act() too; resolved as is, it would fail only at its first move with a
    # "missing positional argument" error. Every caller (evaluate, the env) resolves here.
    message = rf"^an {role} must be an agent object, not the class RuleAgent: pass RuleAgent\(\)$"
    with pytest.raises(AgentTypeError, match=message):
        resolve_agent(RuleAgent, role=role)


def test_a_factory_that_returns_an_agent_class_is_named(monkeypatch):
    module = types.ModuleType("agent_factories")
    module.rule_class = lambda: RuleAgent  # forgot to call it
    monkeypatch.setitem(sys.modules, "agent_factories", module)
    with pytest.raises(AgentSpecError, match=r"the factory returned the class RuleAgent, not an agent object$"):
        resolve_agent("agent_factories:rule_class")


def test_the_environment_package_never_imports_training():
    for path in (ROOT / "loveletter_env").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0:
                names = [node.module or ""]
            else:
                continue
            assert not any(n == "training" or n.startswith("training.") for n in names), f"{path} imports {names}"
    code = "import loveletter_env, loveletter_env.agents.specs, gymnasium, sys; print('training' in sys.modules)"
    run = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert run.stdout.strip() == "False"


# Seeds ------------------------------------------------------------------------------


def test_checkpoint_specs_refuse_bad_seeds_before_torch_sees_them():
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got 1.5$"):
        resolve_agent(str(ROOT / "checkpoints/shipped/ppo_2p.pt"), seed=1.5)
    assert resolve_agent(str(ROOT / "checkpoints/shipped/ppo_2p.pt"), seed=np.int64(3)) is not None


@pytest.mark.parametrize("spec", ["random:seed=5", "ismcts:iterations=10,seed=5"])
def test_a_seed_in_an_agent_spec_is_refused_with_a_reason(spec):
    with pytest.raises(AgentSpecError, match=rf"agent spec '{spec}': seed is not an option of the spec; .*set by"):
        resolve_agent(spec, seed=1)
    with pytest.raises(AgentSpecError, match="seed is not an option"):
        resolve_agent(spec)


def test_spec_files_are_the_files_an_agent_plays_from(tmp_path: Path):
    from loveletter_env.agents.specs import spec_files

    network = ROOT / "checkpoints" / "v1" / "ppo_2p.pt"
    run = tmp_path / "run"
    run.mkdir()
    (run / "latest.pt").write_bytes(b"weights")
    assert spec_files("rule") == [] and spec_files("ismcts:iterations=5") == [] and spec_files(RandomAgent()) == []
    assert spec_files(str(network)) == [network]
    assert spec_files(f"checkpoint:path={network},greedy=False") == [network]
    assert spec_files(str(run)) == [run / "latest.pt"]  # a run folder: the file it stands for
    assert spec_files(f"guided:policy={run},iterations=5") == [run / "latest.pt"]
    assert spec_files(f"solved:path={network}") == [network]
    with pytest.raises(FileNotFoundError, match="does not exist"):
        spec_files(str(tmp_path / "gone.pt"))


def test_spec_files_read_only_the_options_that_name_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``guided:opponents=greedy`` names a way of playing, not a file: a folder ``greedy`` or a
    file ``belief`` where the tool runs is none of the agent's files. Were taken: the folder
    made the spec fail with "run folder 'greedy' holds none of ...", and the file was hashed as
    one the agent plays from (so editing it would void a league's results)."""
    from loveletter_env.agents.specs import spec_files

    network = ROOT / "checkpoints" / "v1" / "ppo_2p.pt"
    monkeypatch.chdir(tmp_path)
    Path("greedy").mkdir()
    Path("belief").write_bytes(b"notes")
    assert spec_files(f"guided:policy={network},opponents=greedy,reading=belief") == [network]


def test_options_that_name_files_keep_the_text_as_written(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A file option is a path, never a literal: ``2024`` stays the file ``2024`` and ``0x10``
    is not read as the file ``16``."""
    from loveletter_env.agents.specs import spec_files

    calls: list[Path] = []

    def loader(path: Path, seed: int, greedy: bool | None) -> RuleAgent:
        calls.append(path)
        return RuleAgent(seed=seed)

    monkeypatch.setattr(checkpoint_loading, "_loaders", {"agent": loader})
    monkeypatch.chdir(tmp_path)
    for name in ("2024", "0x10", "1e3", "True"):
        Path(name).write_bytes(b"weights")
        assert isinstance(resolve_agent(f"checkpoint:path={name}"), RuleAgent)
        assert spec_files(f"guided:policy={name},iterations=5") == [Path(name)]
        assert spec_files(f"solved:path={name}") == [Path(name)]
    assert calls == [Path("2024"), Path("0x10"), Path("1e3"), Path("True")]
    assert specs.parse_options("path=0x10,iterations=0x10", "x") == {"path": "0x10", "iterations": 16}


def test_a_run_folder_plays_its_answer_once_it_has_one(tmp_path: Path):
    """A finished run's answer is ``result.pt`` (the web app offers it too); while the run
    trains, its ``best.pt``, and before any evaluation its ``latest.pt``."""
    from loveletter_env.agents.specs import spec_files

    run = tmp_path / "run"
    run.mkdir()
    for name in ("latest.pt", "best.pt", "result.pt"):
        (run / name).write_bytes(b"weights")
        assert checkpoint_loading.checkpoint_file(run) == run / name
        assert spec_files(str(run)) == [run / name]

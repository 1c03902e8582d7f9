"""ONNX export: the exported policy picks the same actions as the torch network."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
import torch

pytest.importorskip("onnxruntime", reason='ONNX export needs the onnx extra: pip install "loveletter-env[onnx]"')
pytest.importorskip("onnxscript", reason='ONNX export needs the onnx extra: pip install "loveletter-env[onnx]"')

from conftest import ROOT

from loveletter_env import env as make_env  # noqa: E402
from loveletter_env.cards import FULL_DECK  # noqa: E402
from training.apps import onnx as export  # noqa: E402
from training.learn.checkpoint import model_payload, save_checkpoint  # noqa: E402
from training.learn.ppo import ActorCritic  # noqa: E402


def _decisive_network(seed: int) -> ActorCritic:
    """A fresh network whose policy head is scaled up: the default init makes logits
    nearly equal, and near-ties would test float noise rather than the export."""
    model = ActorCritic(hidden_sizes=(64, 64), generator=torch.Generator().manual_seed(seed))
    with torch.no_grad():
        torch.nn.init.orthogonal_(model.policy_head.weight, gain=1.0, generator=torch.Generator().manual_seed(seed))
    return model


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    folder = tmp_path_factory.mktemp("export")
    model = _decisive_network(seed=3)
    checkpoint = save_checkpoint(folder / "policy.pt", {"model": model_payload(model), "global_step": 0})
    onnx_path = export.main(["--checkpoint", str(checkpoint), "--onnx", str(folder / "policy.onnx")])
    return checkpoint, onnx_path, model


def test_cli_writes_an_onnx_file_with_the_documented_interface(exported):
    _, onnx_path, _ = exported
    agent = export.OnnxAgent(onnx_path)
    assert tuple(i.name for i in agent.session.get_inputs()) == export.INPUT_NAMES
    assert tuple(o.name for o in agent.session.get_outputs()) == export.OUTPUT_NAMES
    for batch in (1, 7):  # the batch axis is dynamic
        obs, masks = export.sample_observations(batch, seed=batch)
        out = agent.run(obs, masks)
        assert out["action"].shape == (batch,) and out["logits"].shape == (batch, 41) and out["value"].shape == (batch,)
        assert masks[np.arange(batch), out["action"]].all(), "the exported policy chose an illegal action"


def test_onnxruntime_picks_the_same_actions_as_torch_on_many_observations(exported):
    _, onnx_path, model = exported
    report = export.verify_onnx(model, onnx_path, count=400, seed=11)
    assert report["action_agreement"] == 1.0
    assert report["max_logit_gap"] < export.VERIFY_TOLERANCE
    assert report["max_value_gap"] < export.VERIFY_TOLERANCE


@pytest.mark.parametrize("num_players", [2, 4])
def test_onnx_agent_and_torch_agent_play_the_same_game(exported, num_players):
    checkpoint, onnx_path, _ = exported
    from training.learn.checkpoint import load_agent

    torch_agent, onnx_agent = load_agent(checkpoint, greedy=True), export.OnnxAgent(onnx_path)
    game = make_env(num_players=num_players, episode="round")
    game.reset(seed=5)
    decisions = 0
    while not any(game.terminations.values()):
        obs = game.observe(game.agent_selection)
        action = torch_agent.act(obs)
        assert onnx_agent.act(obs) == action
        game.step(action)
        decisions += 1
    assert decisions > 0


# How the exported network plays --------------------------------------------------------


def _with_eval_greedy(folder, model, greedy):
    config = {"eval": {"greedy": greedy}}
    return save_checkpoint(folder / f"greedy_{greedy}.pt", {"model": model_payload(model), "config": config})


def _play_mode(path):
    import onnxruntime

    return onnxruntime.InferenceSession(str(path)).get_modelmeta().custom_metadata_map[export.PLAY_KEY]


@pytest.mark.parametrize("recorded", [False, True])
def test_the_export_plays_as_the_checkpoint_records_and_says_so(tmp_path, capsys, recorded):
    checkpoint = _with_eval_greedy(tmp_path, _decisive_network(seed=5), recorded)
    onnx_path = export.main(["--checkpoint", str(checkpoint), "--onnx", str(tmp_path / "p.onnx"), "--no-verify"])
    mode = "greedy" if recorded else "sampling"
    assert _play_mode(onnx_path) == mode
    plays = "plays greedily" if recorded else "samples its policy"
    assert f"it {plays} (as the checkpoint records)" in capsys.readouterr().out
    assert export.OnnxAgent(onnx_path).greedy is recorded


@pytest.mark.parametrize("flag, mode", [("--greedy", "greedy"), ("--sampled", "sampling")])
def test_greedy_and_sampled_override_the_recorded_way(tmp_path, capsys, flag, mode):
    recorded = flag == "--sampled"  # the other way from the flag's
    checkpoint = _with_eval_greedy(tmp_path, _decisive_network(seed=5), recorded)
    onnx_path = export.main(["--checkpoint", str(checkpoint), "--onnx", str(tmp_path / "p.onnx"), "--no-verify", flag])
    assert _play_mode(onnx_path) == mode
    plays = "plays greedily" if flag == "--greedy" else "samples its policy"
    assert f"it {plays} ({flag})" in capsys.readouterr().out
    with pytest.raises(SystemExit):
        export.main(["--checkpoint", str(checkpoint), "--onnx", str(tmp_path / "q.onnx"), "--greedy", "--sampled"])
    assert "not allowed with argument" in capsys.readouterr().err


def test_a_sampling_export_samples_the_policy_seeded_and_greedy_is_an_explicit_choice(tmp_path):
    """The sampling agent draws legal actions by the network's masked softmax, the same ones
    for the same seed; ``greedy=True`` plays the graph's ``action``, as the torch agent does."""
    from training.learn.checkpoint import load_agent

    model = ActorCritic(hidden_sizes=(16,), generator=torch.Generator().manual_seed(1))  # flat: many actions drawn
    checkpoint = _with_eval_greedy(tmp_path, model, False)
    onnx_path = export.main(["--checkpoint", str(checkpoint), "--onnx", str(tmp_path / "p.onnx"), "--no-verify"])
    observations, masks = export.sample_observations(60, seed=3)
    pairs = [{"observation": o, "action_mask": m} for o, m in zip(observations, masks)]

    def played(agent):
        return [agent.act(obs) for obs in pairs for _ in range(5)]

    first, second = played(export.OnnxAgent(onnx_path, seed=8)), played(export.OnnxAgent(onnx_path, seed=8))
    assert first == second
    assert all(masks[i // 5, a] for i, a in enumerate(first))
    greedy_agent, torch_greedy = export.OnnxAgent(onnx_path, greedy=True), load_agent(checkpoint, greedy=True)
    greedy_moves = played(greedy_agent)
    assert greedy_moves == played(torch_greedy)
    assert first != greedy_moves, "the sampling agent played the greedy moves only"
    with pytest.raises(ValueError, match=r"greedy must be True, False or None .*got 'yes'"):
        export.OnnxAgent(onnx_path, greedy="yes")


def test_a_file_from_before_the_play_key_plays_greedily(exported, tmp_path):
    import onnx

    _, onnx_path, _ = exported
    model = onnx.load(str(onnx_path))
    kept = [entry for entry in model.metadata_props if entry.key != export.PLAY_KEY]
    del model.metadata_props[:]
    model.metadata_props.extend(kept)
    old = tmp_path / "old.onnx"
    onnx.save(model, str(old))
    assert export.OnnxAgent(old).greedy is True
    model.metadata_props.add(key=export.PLAY_KEY, value="argmax")
    onnx.save(model, str(old))
    with pytest.raises(ValueError, match=r"old.onnx' has loveletter.play='argmax', not one of \['greedy', 'samp"):
        export.OnnxAgent(old)


def test_cli_names_a_missing_checkpoint(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        export.main(["--checkpoint", str(tmp_path / "missing.pt"), "--onnx", str(tmp_path / "out.onnx")])
    assert exit_info.value.code == 2
    assert "missing.pt" in capsys.readouterr().err
    assert not (tmp_path / "out.onnx").exists()


def test_cli_keeps_an_existing_file_unless_forced(tmp_path, capsys):
    checkpoint = ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"
    copy = tmp_path / "copy.pt"
    copy.write_bytes(checkpoint.read_bytes())
    existing = tmp_path / "policy.onnx"
    existing.write_bytes(b"kept")
    for onnx, force, message in [
        (existing, [], "already exists: pass --force to replace it"),
        (copy, ["--force"], "is the checkpoint being exported"),
        (tmp_path, ["--force"], "cannot be written: it is a folder"),
        (copy / "x.onnx", ["--force"], "is a file, not a folder"),
    ]:
        with pytest.raises(SystemExit) as stop:
            export.main(["--checkpoint", str(copy), "--onnx", str(onnx), "--no-verify", *force])
        assert stop.value.code == 2 and message in capsys.readouterr().err
    assert existing.read_bytes() == b"kept" and copy.read_bytes() == checkpoint.read_bytes()
    export.main(["--checkpoint", str(copy), "--onnx", str(existing), "--no-verify", "--force"])
    assert existing.read_bytes() != b"kept" and not list(tmp_path.glob(".*.tmp"))


def test_cli_says_which_file_of_a_run_folder_it_exported(tmp_path, capsys):
    run = tmp_path / "run"
    run.mkdir()
    (run / "latest.pt").write_bytes((ROOT / "checkpoints" / "shipped" / "ppo_2p.pt").read_bytes())
    export.main(["--checkpoint", str(run), "--onnx", str(tmp_path / "p.onnx"), "--no-verify"])
    assert f"KiB) from {run / 'latest.pt'}; it" in capsys.readouterr().out


def test_onnx_agent_refuses_a_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nothing.onnx"):
        export.OnnxAgent(tmp_path / "nothing.onnx")


def test_cli_names_the_extra_when_onnxscript_is_missing(exported, tmp_path, monkeypatch, capsys):
    checkpoint, _, _ = exported
    monkeypatch.setitem(sys.modules, "onnxscript", None)  # makes `import onnxscript` fail
    with pytest.raises(SystemExit):
        export.main(["--checkpoint", str(checkpoint), "--onnx", str(tmp_path / "out.onnx")])
    assert 'pip install "loveletter-env[onnx]"' in capsys.readouterr().err


def test_a_version_1_network_exports_a_graph_that_takes_the_current_observation(tmp_path):
    """A version 1 network reads 646 entries; its graph takes the full current vector and
    slices inside, so a server feeds it what the env hands out."""
    from loveletter_env import engine
    from loveletter_env.observation import OBSERVATION_SIZE, V1_OBSERVATION_SIZE, encode_observation
    from training.learn.checkpoint import build_model, load_checkpoint

    v1_network = ROOT / "checkpoints" / "v1" / "ppo_2to4p.pt"
    onnx_path = export.main(["--checkpoint", str(v1_network), "--onnx", str(tmp_path / "v1.onnx"), "--no-verify"])
    agent = export.OnnxAgent(onnx_path)
    assert agent.session.get_inputs()[0].shape[1] == OBSERVATION_SIZE
    # Reference encoder on seeded positions: the entries past version 1 are not all zero, and must not count.
    rng = np.random.default_rng(4)
    states = []
    for seed in range(40):
        state = engine.new_game(2 + seed % 3, rng.permutation(FULL_DECK).tolist())
        for _ in range(int(rng.integers(6))):
            if state.round_over:
                break
            legal = engine.legal_actions(state)
            engine.step(state, legal[int(rng.integers(len(legal)))])
        if not state.round_over:
            states.append(state)
    observations = np.stack([encode_observation(s, s.current) for s in states])
    masks = np.stack([np.asarray(engine.legal_mask(s), np.int8) for s in states])
    out = agent.run(observations, masks)
    with torch.no_grad():
        model = build_model(load_checkpoint(v1_network))
        logits = model.policy_head(model.trunk(torch.from_numpy(observations[:, :V1_OBSERVATION_SIZE].copy())))
    legal = masks.astype(bool)
    assert np.abs(out["logits"] - logits.numpy())[legal].max() < export.VERIFY_TOLERANCE
    assert np.array_equal(out["action"], np.where(legal, logits.numpy(), -np.inf).argmax(1))
    report = export.verify_onnx(model, onnx_path, count=60, seed=2)
    assert report["clear_mismatches"] == 0 and report["max_logit_gap"] < export.VERIFY_TOLERANCE
    with pytest.raises(
        ValueError, match=r"expected observation version 2 .* got observation version 1 \(646 entries\)"
    ):
        agent.run(observations[:, :V1_OBSERVATION_SIZE], masks)


# Notices ----------------------------------------------------------------------------


def test_export_keeps_torchvision_notices_out_of_the_users_way(tmp_path):
    pytest.importorskip("onnxscript")
    # A fresh interpreter: the exporter reports only on its first use in a process.
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "training.export",
            "--checkpoint",
            str(ROOT / "checkpoints/shipped/ppo_2p.pt"),
            "--onnx",
            str(tmp_path / "policy.onnx"),
            "--no-verify",
        ],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stderr
    assert "torchvision is not installed" not in result.stderr + result.stdout
    assert result.stderr == ""
    assert "wrote" in result.stdout


@pytest.mark.parametrize(
    "mask, fault",
    [
        (np.ones(50, dtype=np.int8), "41 entries"),  # a longer mask would let the network play action 45
        (np.full(41, 2, dtype=np.int8), "other values"),
        (np.zeros(41, dtype=np.int8), "no legal action"),
    ],
)
def test_onnx_agent_refuses_what_is_no_action_mask_as_every_agent_does(exported, mask, fault):
    _, onnx_path, _ = exported
    obs, _ = export.sample_observations(1, seed=0)
    with pytest.raises(ValueError, match=fault):
        export.OnnxAgent(onnx_path).act({"observation": obs[0], "action_mask": mask})


# Files that are not an exported policy --------------------------------------------------


def _graph_file(path, observation_width=None, output_names=export.OUTPUT_NAMES):
    """A small ONNX graph with an exported policy's input names: observations of
    ``observation_width`` entries (the current size by default), outputs named ``output_names``."""
    import onnx
    from onnx import TensorProto, helper

    from loveletter_env.observation import OBSERVATION_SIZE

    width = observation_width or OBSERVATION_SIZE
    inputs = [
        helper.make_tensor_value_info("observation", TensorProto.FLOAT, ["B", width]),
        helper.make_tensor_value_info("action_mask", TensorProto.INT8, ["B", 41]),
    ]
    action, logits, value = output_names
    nodes = [
        helper.make_node("Cast", ["action_mask"], [logits], to=TensorProto.FLOAT),
        helper.make_node("ArgMax", [logits], [action], axis=1, keepdims=0),
        helper.make_node("ReduceSum", ["observation"], [value], keepdims=0, axes=[1]),
    ]
    outputs = [
        helper.make_tensor_value_info(action, TensorProto.INT64, ["B"]),
        helper.make_tensor_value_info(logits, TensorProto.FLOAT, ["B", 41]),
        helper.make_tensor_value_info(value, TensorProto.FLOAT, ["B"]),
    ]
    model = helper.make_model(
        helper.make_graph(nodes, "g", inputs, outputs), opset_imports=[helper.make_opsetid("", 12)]
    )
    model.ir_version = 7
    onnx.save(model, str(path))
    return path


def test_onnx_agent_refuses_files_that_are_not_an_exported_policy_naming_them(exported, tmp_path):
    """Such files were taken (an ONNX graph with the input names) or failed in onnxruntime's own
    exception types; a graph of another observation width failed only at its first move."""
    _, onnx_path, _ = exported
    good = onnx_path.read_bytes()
    cases = {
        "garbage.onnx": b"not an onnx file",
        "truncated.onnx": good[: len(good) // 2],
        "empty.onnx": b"",
        "checkpoint.onnx": (ROOT / "checkpoints" / "shipped" / "ppo_2p.pt").read_bytes(),
    }
    for name, content in cases.items():
        (tmp_path / name).write_bytes(content)
        with pytest.raises(ValueError, match=rf"{name}' is not an ONNX policy: onnxruntime cannot read it"):
            export.OnnxAgent(tmp_path / name)
    narrow = _graph_file(tmp_path / "narrow.onnx", observation_width=646)
    with pytest.raises(
        ValueError,
        match=r"narrow.onnx' is not an exported .*its observation is a tensor\(float\) of shape \['B', 646\]",
    ):
        export.OnnxAgent(narrow)
    renamed = _graph_file(tmp_path / "renamed.onnx", output_names=("a", "l", "v"))
    with pytest.raises(ValueError, match=r"renamed.onnx' is not an exported .*its outputs are \('a', 'l', 'v'\)"):
        export.OnnxAgent(renamed)
    assert export.OnnxAgent(_graph_file(tmp_path / "same.onnx")).greedy is True  # the interface is all it checks
    with pytest.raises(ValueError, match="is a folder, not an ONNX file"):
        export.OnnxAgent(tmp_path)


def test_an_export_that_fails_its_check_leaves_the_earlier_file(exported, tmp_path, monkeypatch, capsys):
    """The file was written, then checked: one that disagreed with torch replaced the earlier
    export (with --force) and stayed at --onnx."""
    checkpoint, onnx_path, _ = exported
    earlier = tmp_path / "policy.onnx"
    earlier.write_bytes(onnx_path.read_bytes())
    report = {"action_agreement": 0.5, "clear_mismatches": 3, "max_logit_gap": 1.0, "max_value_gap": 0.0}
    monkeypatch.setattr(export, "verify_onnx", lambda *args, **kwargs: report)
    for target, force, kept in [(earlier, ["--force"], "left as it was"), (tmp_path / "new.onnx", [], "not written")]:
        with pytest.raises(SystemExit, match=f"disagrees with torch, so '{target}' is {kept}"):
            export.main(["--checkpoint", str(checkpoint), "--onnx", str(target), "--greedy", *force])
    assert earlier.read_bytes() == onnx_path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.onnx"]  # no new file, no temporary one
    assert "wrote" not in capsys.readouterr().out


def test_an_export_that_fails_mid_write_leaves_the_earlier_file(exported, tmp_path, monkeypatch):
    checkpoint, onnx_path, _ = exported
    earlier = tmp_path / "policy.onnx"
    earlier.write_bytes(onnx_path.read_bytes())

    def half_written(self, destination, *args, **kwargs):
        with open(destination, "wb") as f:
            f.write(b"half")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch.onnx.ONNXProgram, "save", half_written)
    with pytest.raises(OSError, match="No space left"):
        export.main(["--checkpoint", str(checkpoint), "--onnx", str(earlier), "--force", "--no-verify"])
    assert earlier.read_bytes() == onnx_path.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.onnx"]


def test_cli_refuses_to_write_over_the_checkpoint_a_run_folder_resolves_to(tmp_path, capsys):
    """``--checkpoint RUN`` exports ``RUN/best.pt``: ``--onnx RUN/best.pt --force`` replaced that
    checkpoint with the ONNX file, where the same file named directly was refused."""
    shipped = (ROOT / "checkpoints" / "shipped" / "ppo_2p.pt").read_bytes()
    run = tmp_path / "run"
    run.mkdir()
    (run / "best.pt").write_bytes(shipped)
    with pytest.raises(SystemExit) as stop:
        export.main(["--checkpoint", str(run), "--onnx", str(run / "best.pt"), "--force", "--no-verify"])
    assert stop.value.code == 2 and "is the checkpoint being exported" in capsys.readouterr().err
    assert (run / "best.pt").read_bytes() == shipped


@pytest.mark.parametrize("greedy", [True, False])
def test_onnx_agent_refuses_an_observation_that_is_not_finite_as_the_torch_agent_does(exported, greedy):
    """A NaN entry made every logit NaN: greedily the graph's argmax answered action 0, illegal
    here, and sampling failed in numpy's words."""
    _, onnx_path, _ = exported
    observations, masks = export.sample_observations(40, seed=0)
    row = next(i for i in range(len(masks)) if not masks[i, 0])  # action 0 is illegal here
    observation = observations[row].copy()
    observation[5] = np.nan
    agent = export.OnnxAgent(onnx_path, greedy=greedy)
    with pytest.raises(ValueError, match="not a finite number"):
        agent.act({"observation": observation, "action_mask": masks[row]})
    with pytest.raises(ValueError, match="not a finite number"):
        agent.run(observation[None], masks[row][None])


def test_onnx_agent_run_refuses_masks_that_are_no_action_masks_as_the_torch_agent_does(exported):
    """A row whose mask has no legal action got action 0, illegal, as its "most likely legal
    action", and masks of another shape failed in onnxruntime's words; the torch agent's batch
    refuses both by name."""
    _, onnx_path, _ = exported
    agent = export.OnnxAgent(onnx_path)
    observations, masks = export.sample_observations(4, seed=0)
    empty = masks.copy()
    empty[2] = 0
    with pytest.raises(ValueError, match="row 2 of the action masks has no legal action"):
        agent.run(observations, empty)
    with pytest.raises(ValueError, match=r"action masks \[B, 41\]"):
        agent.run(observations, masks[:3])
    with pytest.raises(ValueError, match=r"action masks \[B, 41\]"):
        agent.run(observations, masks[:, :40])
    with pytest.raises(ValueError, match="entries of 0 or 1"):
        agent.run(observations, masks * 2)
    out = agent.run(observations, masks)  # the env's own masks still play
    assert masks[np.arange(4), out["action"]].all()

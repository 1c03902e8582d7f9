"""Reading a solved policy file (loveletter_env.agents.solved): the checks that keep a file
from being offered and then failing at play, and the bounds that keep a hostile one from
costing time or memory. The format's own checks (ranges, sums, versions) are tested with
the solver, in tests/training/exploitability/test_solver.py."""

from __future__ import annotations

import errno
import io
import json
import os
import re
import shutil
import tracemalloc
import zipfile

import numpy as np
import pytest

from loveletter_env import raw_env
from loveletter_env.agents.solved import (
    DIGEST_KEY,
    MANIFEST_KEY,
    MAX_META_CHARS,
    RUNG_INFOSETS,
    PolicyFileError,
    SolvedAgent,
    SolvedPolicy,
    file_sha256,
    infoset_digest,
)
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.tree import build_tree
from training.exploitability import solver as solve_cli
from training.exploitability.solver import solve

# Fixtures -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tree():
    return build_tree("mini6")


@pytest.fixture(scope="module")
def solved(tree):
    return solve("mini6", tree=tree)


@pytest.fixture(scope="module")
def another_solve(tree):
    """A second, shorter solve of the rung: other iterations, exploitability and files."""
    return solve("mini6", iterations=3, target=0.0, tree=tree)


@pytest.fixture(scope="module")
def policy_path(solved, tmp_path_factory):
    return solved.save_policy(tmp_path_factory.mktemp("solved") / "mini6.npz")


@pytest.fixture
def folder(solved, tmp_path):
    """A solve's folder as python -m training.solve leaves it."""
    out = tmp_path / "solve"
    solve_cli.save_outputs(solved, out)
    return out


def _entries(path):
    with np.load(path, allow_pickle=False) as data:
        return {name: data[name] for name in data.files}


def _meta(path):
    return json.loads(str(_entries(path)["meta"]))


def _rewritten(path, target, **changes):
    """``path``'s entries with ``changes`` (``None`` drops one), written to ``target``."""
    entries = {**_entries(path), **changes}
    np.savez_compressed(target, **{name: value for name, value in entries.items() if value is not None})
    return target


def _with_meta(path, target, **changes):
    meta = {**_meta(path), **changes}
    return _rewritten(path, target, meta=np.str_(json.dumps({k: v for k, v in meta.items() if v is not None})))


def _header(shape, descr):
    out = io.BytesIO()
    np.lib.format.write_array_header_1_0(out, {"descr": descr, "fortran_order": False, "shape": shape})
    return out.getvalue()


def _archive(path, target, members, drop=(), method=zipfile.ZIP_DEFLATED):
    """``path``'s archive with its members ``drop`` left out and ``members`` (name -> the bytes
    of a ``.npy`` member) put in, written to ``target``."""
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(target, "w", method) as out:
        for info in source.infolist():
            name = info.filename[: -len(".npy")]
            if name not in members and name not in drop:
                out.writestr(info.filename, source.read(info), compress_type=zipfile.ZIP_DEFLATED)
        for name, raw in members.items():
            out.writestr(f"{name}.npy", raw, compress_type=method)
    return target


def _refusal(path):
    with pytest.raises(PolicyFileError) as refused:
        SolvedPolicy.load(path)
    message = str(refused.value)
    assert message.startswith(f"solved policy {str(path)!r} ") and "\n" not in message
    return message


def _plays_a_round(path):
    env = raw_env(num_players=2, rules="mini6", episode="round")
    agents = [SolvedAgent(path, seed=0), SolvedAgent(path, seed=1)]
    env.reset(seed=0)
    while not all(env.terminations.values()):
        env.step(agents[env.agent_name_mapping[env.agent_selection]].act(env.observe(env.agent_selection)))


# A solve's folder: its files belong together ----------------------------------------


def test_a_solve_records_the_digest_of_each_of_its_files(folder):
    record = json.loads((folder / "result.json").read_text())
    assert record[MANIFEST_KEY] == {
        "policy.npz": file_sha256(folder / "policy.npz"),
        "convergence.png": file_sha256(folder / "convergence.png"),
    }
    assert SolvedPolicy.load(folder / "policy.npz").meta["iterations"] == record["iterations"]


def test_a_folder_whose_policy_is_another_solve_s_is_refused_naming_it(folder, another_solve):
    # A solve stopped between its renames: the new policy, the old plot and record.
    another_solve.save_policy(folder / "policy.npz")
    message = _refusal(folder / "policy.npz")
    assert f"is in a folder that mixes two solves: policy.npz changed since {folder / 'result.json'}" in message
    assert "convergence.png" not in message
    assert f"`python -m training.solve mini6 --out {folder} --force`" in message
    with pytest.raises(PolicyFileError, match="mixes two solves: policy.npz changed"):
        resolve_agent(f"solved:path={folder / 'policy.npz'}")


def test_the_refusal_names_every_file_that_changed(folder, another_solve, tmp_path):
    other = tmp_path / "other"
    solve_cli.save_outputs(another_solve, other)
    for name in ("policy.npz", "convergence.png"):
        shutil.copyfile(other / name, folder / name)
    assert "mixes two solves: policy.npz and convergence.png changed since" in _refusal(folder / "policy.npz")
    shutil.copyfile(other / "result.json", folder / "result.json")
    SolvedPolicy.load(folder / "policy.npz")  # the three files of the other solve belong together
    (folder / "convergence.png").unlink()
    assert "mixes two solves: convergence.png (missing) changed since" in _refusal(folder / "policy.npz")


def _renames_failing_at(monkeypatch, name: str) -> None:
    """Make the rename of the solve's file ``name`` into place fail, as a dying disk would; the
    renames before it go through."""
    real_replace = solve_cli.os.replace

    def replace(source, target):
        if os.path.basename(target) == name:
            raise OSError(errno.EIO, "Input/output error")
        real_replace(source, target)

    monkeypatch.setattr(solve_cli.os, "replace", replace)


def test_a_solve_killed_between_its_renames_leaves_a_folder_that_is_refused(folder, another_solve, monkeypatch):
    from training.learn.checkpoint import CheckpointWriteError

    _renames_failing_at(monkeypatch, "convergence.png")  # the second rename: the policy's went through
    with pytest.raises(CheckpointWriteError, match="policy.npz replaced, the rest not: solve again with --force"):
        solve_cli.save_outputs(another_solve, folder)
    assert sorted(p.name for p in folder.iterdir()) == ["convergence.png", "policy.npz", "result.json"]
    assert "mixes two solves: policy.npz changed" in _refusal(folder / "policy.npz")


def test_a_full_disk_while_writing_a_solve_leaves_the_previous_one_whole(folder, another_solve, monkeypatch):
    from training.learn.checkpoint import CheckpointWriteError

    before = {p.name: p.read_bytes() for p in folder.iterdir()}

    def disk_full(result, f):
        f.write(b"part of a plot")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(solve_cli, "plot_curve", disk_full)
    with pytest.raises(CheckpointWriteError) as failed:
        solve_cli.save_outputs(another_solve, folder)
    assert str(failed.value) == f"cannot write in {folder}: the disk is full; nothing in it was replaced"
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    SolvedPolicy.load(folder / "policy.npz")


def test_a_failed_rename_of_the_record_names_the_files_already_replaced(folder, another_solve, monkeypatch):
    from training.learn.checkpoint import CheckpointWriteError

    _renames_failing_at(monkeypatch, "result.json")
    with pytest.raises(CheckpointWriteError, match="policy.npz and convergence.png replaced, the rest not"):
        solve_cli.save_outputs(another_solve, folder)
    assert sorted(p.name for p in folder.iterdir()) == ["convergence.png", "policy.npz", "result.json"]
    assert "mixes two solves: policy.npz and convergence.png changed" in _refusal(folder / "policy.npz")


def test_saving_a_policy_over_a_file_is_whole_or_nothing(solved, another_solve, tmp_path, monkeypatch):
    path = solved.save_policy(tmp_path / "policy_of_mine.npz")
    before = path.read_bytes()

    def killed_mid_write(self, f):
        f.write(b"half a file")
        raise KeyboardInterrupt

    monkeypatch.setattr(SolvedPolicy, "_write", killed_mid_write)
    with pytest.raises(KeyboardInterrupt):
        another_solve.save_policy(path)
    assert path.read_bytes() == before and [p.name for p in tmp_path.iterdir()] == [path.name]
    SolvedPolicy.load(path)


def test_a_record_of_an_earlier_version_is_checked_by_its_figures(folder, another_solve):
    record = json.loads((folder / "result.json").read_text())
    del record[MANIFEST_KEY]
    (folder / "result.json").write_text(json.dumps(record))
    SolvedPolicy.load(folder / "policy.npz")
    another_solve.save_policy(folder / "policy.npz")
    message = _refusal(folder / "policy.npz")
    assert f"is not the solve that {folder / 'result.json'} records" in message
    assert f"['mini6', 3, {another_solve.exploitability!r}] in the policy" in message
    assert f"['mini6', {record['iterations']}, {record['exploitability']!r}] in the record" in message


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ("{", "Expecting property name enclosed in double quotes"),
        ("[" * 5000 + "]" * 5000, "nested 5000 levels deep"),
        (json.dumps({MANIFEST_KEY: {"../../etc/passwd": "0" * 64}}), "whose sha256 entry is not a digest"),
        (json.dumps({MANIFEST_KEY: {"policy.npz": "not a digest"}}), "whose sha256 entry is not a digest"),
        (" " * (2 << 20), "larger than 1,048,576 bytes"),
    ],
)
def test_a_record_that_is_not_a_solve_s_is_refused(folder, record, problem):
    (folder / "result.json").write_text(record)
    assert problem in _refusal(folder / "policy.npz")


def test_a_record_that_is_no_regular_file_is_refused_without_reading_it(folder):
    (folder / "result.json").unlink()
    os.mkfifo(folder / "result.json")  # reading it would wait for a writer forever
    assert "beside a result.json that is not the record of a solve (it is not a regular file)" in _refusal(
        folder / "policy.npz"
    )


def test_only_a_solve_s_policy_file_is_checked_against_its_folder(folder, another_solve):
    another_solve.save_policy(folder / "other.npz")
    assert SolvedPolicy.load(folder / "other.npz").meta["iterations"] == 3


# Reading only what the format holds, within bounds ----------------------------------


def test_an_entry_the_format_does_not_hold_is_never_read(policy_path, tmp_path):
    zeros = tmp_path / "zeros.npz"
    with zipfile.ZipFile(policy_path) as source, zipfile.ZipFile(zeros, "w", zipfile.ZIP_DEFLATED) as out:
        for info in source.infolist():
            out.writestr(info.filename, source.read(info))
        with out.open("unused.npy", "w", force_zip64=True) as member:
            member.write(_header((200 << 17,), "<f8"))  # 200 MB of zeros: 0.2 MB in the file
            chunk = bytes(1 << 20)
            for _ in range(200):
                member.write(chunk)
    assert zeros.stat().st_size < 2 * policy_path.stat().st_size + (1 << 20)
    tracemalloc.start()
    try:
        SolvedPolicy.load(zeros)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 20 << 20, f"loading took {peak / 2**20:.0f} MiB"
    # An entry whose header claims 80 TB would be a MemoryError if it were read.
    claims = _archive(policy_path, tmp_path / "claims.npz", {"unused": _header((10**13,), "<f8")})
    SolvedPolicy.load(claims)


@pytest.mark.parametrize(
    ("name", "member", "problem"),
    [
        (
            "probabilities",
            _header((10**13,), "<f8"),
            "is damaged: its probabilities entry holds 0 bytes of data where its header says 80,000,000,000,000",
        ),
        (
            "probabilities",
            _header((5,), "<f8") + bytes(40),
            "has 5 entries in probabilities where a mini6 policy has 7,157",
        ),
        ("probabilities", _header((7_157,), "<f8") + bytes(8), "its probabilities entry holds 8 bytes of data"),
        ("actions", _header((7_157,), "|O"), "has a actions entry of dtype object"),
        ("actions", _header((7_157,), [("a", "<i8")]), "which no policy holds"),
        ("meta", _header((), f"<U{10**8}"), "is damaged: its meta entry holds 0 bytes of data"),
        ("format", _header((), f"<U{10**8}"), "is damaged: its format entry holds 0 bytes of data"),
        ("format", _header((), "<U100") + bytes(400), "is not a solved policy file (its format is None"),
        ("version", _header((10**13,), "<i8"), "is damaged: its version entry holds 0 bytes"),
    ],
)
def test_an_entry_is_checked_from_its_header_before_it_is_allocated(policy_path, tmp_path, name, member, problem):
    hostile = _archive(policy_path, tmp_path / "hostile.npz", {name: member})
    assert hostile.stat().st_size < 2 * policy_path.stat().st_size
    assert problem in _refusal(hostile)


def test_an_entry_whose_header_text_is_cut_short_is_refused(policy_path, tmp_path):
    # numpy reads an unclosed header with Python's tokenizer, whose TokenError got through as itself.
    text = b"{'descr': '<f8', 'fortran_order': False, 'shape': (7157,\n"
    member = b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text
    cut = _archive(policy_path, tmp_path / "cut.npz", {"probabilities": member})
    assert "is damaged or not a solved policy file (" in _refusal(cut)


def test_an_entry_claiming_more_than_its_compressed_bytes_hold_is_refused(policy_path, tmp_path):
    data = bytearray(_archive(policy_path, tmp_path / "a.npz", {}).read_bytes())
    # The uncompressed size that the central directory gives the member, made 4 GB.
    header = data.rfind(b"PK\x01\x02", 0, data.find(b"probabilities.npy", data.find(b"PK\x01\x02")))
    data[header + 24 : header + 28] = (0xFFFFFFFE).to_bytes(4, "little")
    bad = tmp_path / "claims.npz"
    bad.write_bytes(bytes(data))
    assert "is damaged: its probabilities entry claims 4,294,967,294 bytes, more than its" in _refusal(bad)


def test_an_entry_compressed_by_a_method_numpy_never_writes_is_refused(policy_path, tmp_path):
    entries = _entries(policy_path)
    raw = io.BytesIO()
    np.lib.format.write_array(raw, entries["actions"])
    odd = _archive(policy_path, tmp_path / "odd.npz", {"actions": raw.getvalue()}, method=zipfile.ZIP_BZIP2)
    assert "has its actions entry compressed by a method numpy never writes" in _refusal(odd)


def test_meta_is_bounded_in_size_and_nesting(policy_path, tmp_path):
    long = _with_meta(policy_path, tmp_path / "long.npz", note="x" * MAX_META_CHARS)
    assert f"has a meta entry of {len(str(_entries(long)['meta'])):,} characters, and at most 65,536" in _refusal(long)
    for depth, problem in ((10_000, "nested 10000 levels deep; at most 32 are read"), (100_000, "characters")):
        deep = _rewritten(policy_path, tmp_path / f"deep{depth}.npz", meta=np.str_("[" * depth + "]" * depth))
        assert problem in _refusal(deep)
    twice = _rewritten(policy_path, tmp_path / "twice.npz", meta=np.str_('{"rules": "mini6", "rules": "mini7"}'))
    assert "a meta entry that is not a JSON object (the key 'rules' is given twice in one object)" in _refusal(twice)


@pytest.mark.parametrize("tool", ["exploit --exact", "serve --policies"])
def test_tools_refuse_a_deeply_nested_meta_in_one_sentence(policy_path, tmp_path, tool, capsys):
    deep = _rewritten(policy_path, tmp_path / "deep.npz", meta=np.str_("[" * 10_000 + "]" * 10_000))
    if tool == "exploit --exact":
        from training import exploit

        with pytest.raises(SystemExit) as stop:
            exploit.main([f"solved:path={deep}", "--exact", "--rules", "mini6", "--no-progress"])
        assert stop.value.code == 2
        err = capsys.readouterr().err
        assert "nested 10000 levels deep" in err and "Traceback" not in err
    else:
        pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
        from training.apps.server import load_policies

        with pytest.raises(ValueError, match=f"--policies: solved policy {re.escape(repr(str(deep)))} has a meta"):
            load_policies([deep])


# A policy belongs to its rung ----------------------------------------------------------


def test_the_table_holds_mini6_s_tree(tree, policy_path):
    arrays = (tree.infoset_player, tree.key_offsets, tree.key_entries, tree.action_offsets, tree.actions)
    known = RUNG_INFOSETS["mini6"]
    assert (known.infosets, known.key_entries, known.actions) == (
        tree.num_infosets,
        tree.key_entries.shape[0],
        tree.actions.shape[0],
    )
    assert infoset_digest(*arrays) == known.sha256 == _meta(policy_path)[DIGEST_KEY]


@pytest.mark.parametrize(
    "rung",
    [
        "mini6_3p",
        "mini7_4p",
        pytest.param("mini7", marks=pytest.mark.slow),
        pytest.param("mini8", marks=pytest.mark.slow),
        pytest.param("mini7_3p", marks=pytest.mark.slow),
        pytest.param("mini8_3p", marks=pytest.mark.slow),
        pytest.param("mini8_4p", marks=pytest.mark.slow),
    ],
)
def test_the_table_holds_the_trees_of_the_other_rungs(rung):
    # mini9's tree takes minutes and 3.3 GB to build: its row was computed the same way, once.
    tree = build_tree(rung)
    known = RUNG_INFOSETS[rung]
    assert (known.infosets, known.key_entries, known.actions) == (
        tree.num_infosets,
        tree.key_entries.shape[0],
        tree.actions.shape[0],
    )
    digest = infoset_digest(tree.infoset_player, tree.key_offsets, tree.key_entries, tree.action_offsets, tree.actions)
    assert digest == known.sha256


@pytest.mark.parametrize("rules", ["classic", "pegasus", "mini5", 6, None, ["mini6"]])
def test_a_policy_whose_meta_names_no_rung_is_refused(policy_path, tmp_path, rules):
    other = _with_meta(policy_path, tmp_path / "other.npz", rules=rules)
    message = _refusal(other)
    assert f"names the rules {rules!r} in its meta, which are no ladder rung" in message
    assert "mini6, mini7, mini8, mini9" in message


def test_the_web_app_offers_no_policy_under_rules_it_was_not_solved_for(policy_path, tmp_path):
    pytest.importorskip("starlette", reason="the web extra is not installed: pip install -e '.[web]'")
    from training.apps.server import is_solved_policy, load_policies

    classic = _with_meta(policy_path, tmp_path / "classic.npz", rules="classic")
    with pytest.raises(ValueError, match="names the rules 'classic' in its meta, which are no ladder rung"):
        load_policies([classic])
    assert not is_solved_policy(classic)
    assert load_policies([policy_path])["mini6"].rules == "mini6"


def test_a_policy_of_another_rung_is_refused_before_its_arrays_are_read(policy_path, tmp_path):
    mini7 = _with_meta(policy_path, tmp_path / "mini7.npz", rules="mini7")
    assert "has 1,800 entries in infoset_player where a mini7 policy has 23,834" in _refusal(mini7)


def _actions_changed(entries):
    """Another legal-looking action list for the last information set: ascending, in range."""
    actions = entries["actions"].copy()
    last = int(entries["action_offsets"][-2])
    assert actions[-1] < 40 and (len(actions) - last == 1 or actions[-1] > actions[-2])
    actions[-1] += 1
    return {"actions": actions}


def _key_changed(entries):
    keys = entries["key_entries"].copy()
    keys[-1] += 1  # still a key entry in range
    return {"key_entries": keys}


@pytest.mark.parametrize("change", [_actions_changed, _key_changed])
def test_a_policy_whose_information_sets_are_not_its_rung_s_is_refused(policy_path, tmp_path, change):
    entries = _entries(policy_path)
    edited = _rewritten(policy_path, tmp_path / "edited.npz", **change(entries))
    message = _refusal(edited)
    assert "has information sets or legal actions that are not those of mini6, the rung its meta names," in message
    assert "nor those it was solved with (the file was edited)" in message
    assert "`python -m training.solve mini6`" in message
    older = _with_meta(edited, tmp_path / "older.npz", **{DIGEST_KEY: None})
    assert "(another rung or another version of the tree, or an edited file)" in _refusal(older)


def test_a_policy_written_before_the_digest_loads_and_plays(policy_path, tmp_path):
    older = _with_meta(policy_path, tmp_path / "older.npz", **{DIGEST_KEY: None})
    assert DIGEST_KEY not in SolvedPolicy.load(older).meta
    _plays_a_round(older)


@pytest.mark.parametrize(
    ("digest", "problem"),
    [
        ("0" * 64, "has a meta infosets_sha256 that is not the digest of its information sets (an edited meta)"),
        ("not hex", "has a meta infosets_sha256 that is not a SHA-256 digest"),
        (12, "has a meta infosets_sha256 that is not a SHA-256 digest"),
    ],
)
def test_a_stored_digest_must_be_that_of_the_file_s_information_sets(policy_path, tmp_path, digest, problem):
    assert problem in _refusal(_with_meta(policy_path, tmp_path / "meta.npz", **{DIGEST_KEY: digest}))


# Seeds ----------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [1.9, "1", True, -1, 2**63], ids=repr)
def test_a_solved_agent_refuses_a_seed_that_is_no_seed_as_the_bots_do(policy_path, seed):
    # random.Random takes any of these, so each would sample a stream the caller never asked for.
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got"):
        SolvedAgent(policy_path, seed=seed)
    agent = SolvedAgent(policy_path, seed=1)
    with pytest.raises(ValueError, match=r"^seed must be a non-negative integer below 2\*\*63, got"):
        agent.reset(seed=seed)  # as evaluations reseed agents at every episode
    assert agent._seed == 1


# Playing ----------------------------------------------------------------------------------


def test_a_solved_agent_asked_to_act_out_of_turn_says_so_as_the_bots_do(policy_path):
    # The observation of a seat that is not to act is no information set of the rung either;
    # blaming the rung would send the caller looking for the wrong policy.
    agent = SolvedAgent(policy_path, seed=0)
    env = raw_env(num_players=2, rules="mini6", episode="round")
    env.reset(seed=0)
    waiting = env.observe(next(a for a in env.agents if a != env.agent_selection))
    for method in (agent.act, agent.action_probabilities):
        with pytest.raises(ValueError, match="^the action mask has no legal action: this agent is not the one to act"):
            method(waiting)


def test_an_evaluation_or_league_refuses_a_solved_policy_of_other_rules_before_playing(policy_path, tmp_path):
    """Refused at its first move, a league had already started its groups file by then."""
    from training.measure.evaluation import evaluate
    from training.measure.league import league

    spec = f"solved:path={policy_path}"
    with pytest.raises(ValueError, match=r"plays mini6, the rung it was solved for, not mini7: give --rules mini6"):
        evaluate([spec, "rule"], rounds=2, rules="mini7")
    groups = tmp_path / "league_groups.jsonl"
    with pytest.raises(ValueError, match="not mini7"):
        league([spec, "rule", "random"], rounds=2, rules="mini7", groups_file=groups)
    assert not groups.exists()
    assert evaluate([spec, "rule"], rounds=4, rules="mini6").episodes == 4


def test_a_solved_agent_refuses_a_mask_that_is_not_its_observation_s(policy_path):
    # A waiting seat's observation with the acting seat's mask was blamed on the rung; a mask of
    # other moves was ignored, and the agent played a move the mask forbids.
    agent = SolvedAgent(policy_path, seed=0)
    env = raw_env(num_players=2, rules="mini6", episode="round")
    env.reset(seed=0)
    acting = env.observe(env.agent_selection)
    waiting = env.observe(next(a for a in env.agents if a != env.agent_selection))
    foreign = np.zeros_like(acting["action_mask"])
    foreign[np.flatnonzero(acting["action_mask"] == 0)[:2]] = 1
    for method in (agent.act, agent.action_probabilities):
        with pytest.raises(ValueError, match="this observation is not of the seat to act"):
            method({"observation": waiting["observation"], "action_mask": acting["action_mask"]})
        with pytest.raises(ValueError, match=r"the action mask allows \[.*\], but this observation's legal actions"):
            method({"observation": acting["observation"], "action_mask": foreign})
    assert acting["action_mask"][agent.act(acting)]


def test_a_solved_agent_is_a_probabilistic_agent(policy_path):
    # The protocol's attributes all there: exact_probabilities was missing, so isinstance said no.
    from loveletter_env.agents.base import ProbabilisticAgent

    agent = SolvedAgent(policy_path, seed=0)
    assert isinstance(agent, ProbabilisticAgent) and agent.exact_probabilities and not agent.remembers_round

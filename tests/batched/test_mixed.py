"""A curriculum over rule sets: MixedRulesBatched and ``env.rules`` as a list."""

from __future__ import annotations

import pytest
import torch
from conftest import TINY_TRAINING

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.batched import BatchedIllegalActionError, BatchedLoveLetter
from loveletter_env.batched.mixed import MixedRulesBatched, block_seed, split_games
from training.learn.config import ConfigError, load_config
from training.learn.trainer import SelfPlayTrainer

RULES = ["classic", "mini6", "mini8"]


def test_split_games_is_proportional_sums_up_and_leaves_no_rule_set_out():
    assert split_games(256, [4, 1, 1, 1, 1]) == [127, 33, 32, 32, 32]
    assert split_games(3, [1000, 1, 1]) == [1, 1, 1]
    for n in range(5, 40):
        counts = split_games(n, [3, 1, 2, 0.5])
        assert sum(counts) == n and min(counts) >= 1


@pytest.mark.parametrize(
    ("num_games", "weights", "message"),
    [
        (8, [1, 0], "positive"),
        (8, [1, float("nan")], "finite"),
        (2, [1, 1, 1], "at least 3 games"),
        (8, [], "finite positive"),
        (8, [True, True], "finite positive"),  # booleans and text would read as numbers
        (8, "13", "finite positive"),
        (8, 3, "finite positive"),
    ],
)
def test_split_games_refuses_bad_weights(num_games, weights, message):
    with pytest.raises(ValueError, match=message):
        split_games(num_games, weights)


def test_split_games_counts_only_the_ratios_of_the_weights_however_large():
    # 1e308 twice once summed to inf and split the games into negative counts.
    assert split_games(256, [1e308, 1e308]) == [128, 128]
    assert split_games(256, [1e308, 1]) == [255, 1]
    assert split_games(256, [4e300, 1e300, 1e300, 1e300, 1e300]) == split_games(256, [4, 1, 1, 1, 1])
    mixed = MixedRulesBatched(8, rules=["mini6", "mini7"], weights=[1e308, 1e308], seed=0)
    assert mixed.game_rules == ["mini6"] * 4 + ["mini7"] * 4
    _, mask = mixed.reset()
    assert mask.shape == (8, 41) and bool(mask.any(dim=1).all())


def _random_actions(mask: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    return torch.multinomial(mask.float(), 1, generator=generator).squeeze(1)


def test_each_block_plays_exactly_the_games_of_a_plain_batched_env_with_its_rules():
    mixed = MixedRulesBatched(24, rules=RULES, weights=[2, 1, 1], seed=11)
    plain = [
        BatchedLoveLetter(len(range(*block.indices(24))), rules=rules, seed=block_seed(11, i))
        for i, (rules, block) in enumerate(zip(RULES, mixed.blocks))
    ]
    assert block_seed(11, 0) == 11  # one rule set deals as the plain env with the same seed
    obs, mask = mixed.reset()
    for env, block in zip(plain, mixed.blocks):
        o, m = env.reset()
        assert torch.equal(obs[block], o) and torch.equal(mask[block], m)
    generator = torch.Generator().manual_seed(0)
    for _ in range(60):
        actions = _random_actions(mixed.action_mask, generator)
        obs, mask, rewards, dones, info = mixed.step(actions)
        for env, block in zip(plain, mixed.blocks):
            o, m, r, d, i = env.step(actions[block])
            assert torch.equal(obs[block], o) and torch.equal(mask[block], m)
            assert torch.equal(rewards[block], r) and torch.equal(dones[block], d)
            assert torch.equal(info["tokens"][block], i["tokens"])
    assert mixed.game_rules == ["classic"] * 12 + ["mini6"] * 6 + ["mini8"] * 6


def test_each_block_writes_its_rows_of_the_callers_masks_and_a_step_can_skip_info():
    mixed, twin = (MixedRulesBatched(24, rules=RULES, weights=[2, 1, 1], seed=3) for _ in range(2))
    _, mask = mixed.reset()
    twin.reset()
    obs_out = torch.zeros(24, 1382, dtype=torch.uint8)
    mask_out = torch.zeros(24, NUM_ACTIONS, dtype=torch.bool)
    generator = torch.Generator().manual_seed(2)
    for _ in range(40):
        actions = _random_actions(mask, generator)
        obs, mask, rewards, dones, _ = mixed.step(actions)
        into, mask_b, rewards_b, dones_b, info = twin.step(actions, out=obs_out, mask_out=mask_out, info=False)
        assert info is None and into is obs_out and mask_b is mask_out
        for a, b in ((obs, into), (mask, mask_b), (rewards, rewards_b), (dones, dones_b)):
            assert torch.equal(a, b)
        assert torch.equal(twin.action_mask, mask_out)
    for bad in (torch.zeros(24, NUM_ACTIONS, dtype=torch.uint8), torch.zeros(23, NUM_ACTIONS, dtype=torch.bool)):
        with pytest.raises(ValueError, match="mask_out must be a bool tensor"):
            twin.step(_random_actions(mask, generator), mask_out=bad)
    assert torch.equal(twin.action_mask, mask)


def test_an_illegal_action_is_named_by_its_place_in_the_whole_batch_and_nothing_moves():
    mixed = MixedRulesBatched(6, rules=RULES, seed=1)
    obs, mask = mixed.reset()
    actions = _random_actions(mask, torch.Generator().manual_seed(0))
    bad = actions.clone()
    last = 5  # a game of the last block
    bad[last] = int((~mask[last]).nonzero()[0])
    with pytest.raises(BatchedIllegalActionError, match=r"1 of 6 games") as caught:
        mixed.step(bad)
    assert list(caught.value.games) == [last]
    assert torch.equal(mixed.action_mask, mask) and torch.equal(mixed.observe(mixed.current_player), obs)


@pytest.mark.parametrize("dtype", (torch.uint64, torch.uint32, torch.uint16))
def test_an_out_of_range_unsigned_action_is_named_as_given_and_nothing_moves(dtype):
    """Torch compares no uint16/32/64 tensors: the check must not fail with torch's own
    error, and must name the value given, not the one an int64 copy wraps it to."""
    mixed = MixedRulesBatched(6, rules=RULES, seed=1)
    obs, mask = mixed.reset()
    big = torch.iinfo(dtype).max
    bad = _random_actions(mask, torch.Generator().manual_seed(0)).numpy().astype(str(dtype).removeprefix("torch."))
    bad[5] = big
    with pytest.raises(
        BatchedIllegalActionError, match=rf"(?s)1 of 6 games.*game 5: action {big} \(out of range"
    ) as caught:
        mixed.step(torch.from_numpy(bad))
    assert caught.value.games == (5,) and caught.value.actions == (big,)
    assert torch.equal(mixed.action_mask, mask) and torch.equal(mixed.observe(mixed.current_player), obs)


def test_a_wrong_out_buffer_is_refused_before_anything_moves():
    mixed = MixedRulesBatched(6, rules=RULES, seed=1)
    _, mask = mixed.reset()
    actions = _random_actions(mask, torch.Generator().manual_seed(0))
    for out in (torch.zeros(6, 10, dtype=torch.uint8), torch.zeros(7, 1382, dtype=torch.uint8)):
        with pytest.raises(ValueError, match="out must be a uint8 tensor"):
            mixed.step(actions, out=out)
    with pytest.raises(ValueError, match="uint8"):
        mixed.step(actions, out=torch.zeros(6, 1382))
    assert torch.equal(mixed.action_mask, mask)


def test_bad_seats_and_decks_are_named_by_their_place_in_the_whole_batch_and_nothing_is_written():
    mixed = MixedRulesBatched(6, rules=RULES, seed=1)
    mixed.reset()
    seats = torch.zeros(6, dtype=torch.long)
    seats[5] = 7  # a game of the last block
    buffer = torch.zeros(6, 1382, dtype=torch.uint8)
    with pytest.raises(ValueError, match=r"bad in 1 game\(s\): game 5: 7 \(table of 2\)"):
        mixed.observe(seats, out=buffer)
    assert not buffer.any()  # no block wrote its rows before the last one was refused
    with pytest.raises(ValueError, match=r"first_player must be a seat of each game's table; .* game 5: 7"):
        mixed.reset(first_player=seats)
    with pytest.raises(ValueError, match=r"decks must be a tensor of shape \[6, 16\], one row per game, got \[6, 15\]"):
        mixed.reset(decks=torch.zeros(6, 15, dtype=torch.long))
    with pytest.raises(ValueError, match=r"out must be contiguous and on cpu, got .* shape \[6, 1382\]"):
        mixed.observe(torch.zeros(6, dtype=torch.long), out=torch.zeros(1382, 6, dtype=torch.uint8).t())


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        (["env.rules=[classic, classic]"], "each preset once"),
        (["env.rules=[classic, mini6]", "env.rules_weights=[1]"], "one weight per entry"),
        (["env.rules=[classic, mini6]", "env.rules_weights=[1, 0]"], "rules_weights"),
        (["env.rules=[classic, mini6]", "env.num_players=[2, 4]"], "ladder rung 'mini6'"),
        (["env.rules=[classic, chess]"], "env.rules"),
        (["eval.rules=mini7", "eval.num_players=4"], "eval.num_players must be 2"),
    ],
)
def test_bad_curricula_are_refused_naming_the_key(overrides, message):
    with pytest.raises(ConfigError, match=message):
        load_config(None, overrides)


def test_evaluations_play_the_first_rules_unless_told():
    assert load_config(None, ["env.rules=[mini7, classic]"]).eval_rules == "mini7"
    assert load_config(None, ["env.rules=[mini7, classic]", "eval.rules=classic"]).eval_rules == "classic"


def test_a_curriculum_run_trains_on_every_rule_set_and_a_stage_can_change_it(tmp_path):
    overrides = [
        *TINY_TRAINING,
        f"out_dir={tmp_path}",
        "run_name=curriculum",
        "total_steps=512",
        "eval.every=0",
        "env.rules=[classic, mini6]",
        "env.rules_weights=[3, 1]",
        "schedule=[{at_step: 256, set: {env.rules: [mini7], env.rules_weights: null}}]",
    ]
    config = load_config(None, overrides)
    trainer = SelfPlayTrainer(config, tmp_path / "curriculum", progress=False)
    assert isinstance(trainer.env, MixedRulesBatched)
    assert set(trainer.env.game_rules) == {"classic", "mini6"}
    summary = trainer.train()
    assert summary["global_step"] == 512
    assert isinstance(trainer.env, BatchedLoveLetter) and trainer.env.rules.name == "mini7"


def test_a_refused_step_moves_no_block_even_after_the_caller_wrote_into_its_masks():
    """The whole-batch check reads the games' own masks, not the tensor the last step handed
    out (the caller's to reuse): a refused step must change no block and name the game by
    its place in the whole batch, whatever the caller wrote there."""
    mixed = MixedRulesBatched(4, rules=["classic", "pegasus"], seed=0)
    _, mask = mixed.reset()
    _, mask, *_ = mixed.step(_random_actions(mask, torch.Generator().manual_seed(0)))
    bad = _random_actions(mask, torch.Generator().manual_seed(1))
    bad[3] = int((~mask[3]).nonzero()[0])  # a game of the second block
    before = [env.state for env in mixed.envs]
    mask.fill_(True)
    with pytest.raises(BatchedIllegalActionError) as caught:
        mixed.step(bad)
    assert list(caught.value.games) == [3]
    for env, state in zip(mixed.envs, before):
        for name, value in env.state.tensors().items():
            assert torch.equal(value, state.tensors()[name]), name


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"rules": 3}, "rules must be a non-empty list of rule sets, got 3"),
        ({"rules": (r for r in ["classic"])}, "rules must be a non-empty list of rule sets"),
        ({"rules": ["classic"], "weights": 1.0}, "weights must be a list of one weight per rule set, got 1.0"),
    ],
)
def test_rules_and_weights_that_are_not_lists_are_refused_by_name(kwargs, message):
    with pytest.raises(ValueError, match=message):
        MixedRulesBatched(4, **kwargs)


def test_the_table_sizes_handed_out_are_a_copy():
    mixed = MixedRulesBatched(4, num_players=[2, 3, 2, 2], rules=["classic", "mini6"], seed=0)
    mixed.num_players.fill_(4)
    assert mixed.num_players.tolist() == [2, 3, 2, 2]


def test_split_games_refuses_more_games_than_its_shares_count_exactly():
    """Past 2**52 games the float shares rounded: 2**60 + 1 games split into counts that
    summed to 3 more, and one weight took num_games + 1."""
    with pytest.raises(ValueError, match=rf"num_games must be at most {2**40}, got {2**60 + 1}"):
        split_games(2**60 + 1, [1, 1, 3])
    assert sum(split_games(2**40, [1, 1, 3])) == 2**40


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (lambda env: env.step([0] * 6), TypeError, "actions must be a torch.Tensor, got list"),
        (lambda env: env.advance(torch.zeros(6, 1, dtype=torch.long)), ValueError, r"actions must have shape \[6\]"),
        (lambda env: env.observe([0] * 6), TypeError, "seats must be a torch.Tensor, got list"),
        (lambda env: env.observe(torch.zeros(5, dtype=torch.int8)), ValueError, r"seats must have shape \[6\], got"),
    ],
)
def test_malformed_actions_and_seats_are_refused_as_a_plain_batched_env_refuses_them(call, error, message):
    """One check for both envs: a batch of several rule sets refused a list with a ValueError
    (the plain env's is a TypeError) and a seat tensor of the wrong shape without saying
    what it got."""
    mixed = MixedRulesBatched(6, rules=RULES, seed=1)
    mixed.reset()
    with pytest.raises(error, match=message):
        call(mixed)

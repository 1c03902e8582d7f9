"""The bots: legal play at every table size, no peeking at hidden cards, the rules of
thumb the rule bot promises, and ISMCTS determinizations consistent with the view."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest
from conftest import BAD_SEEDS, ROOT, act, deal_deck, make_env, start

import loveletter_env
from loveletter_env import engine
from loveletter_env.actions import ACTIONS
from loveletter_env.aec import raw_env
from loveletter_env.agents import AGENT_NAMES, ISMCTSAgent, determinize, make_agent
from loveletter_env.agents.belief import hand_posterior, play_likelihood
from loveletter_env.agents.ismcts import seat_view
from loveletter_env.agents.opponent_model import play_likelihoods
from loveletter_env.agents.rule import rule_action
from loveletter_env.agents.specs import resolve_agent
from loveletter_env.cards import (
    BARON,
    COUNTESS,
    FULL_DECK,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
)
from loveletter_env.observation import decode_observation, encode_observation

SHIPPED_2P = ROOT / "checkpoints" / "shipped" / "ppo_2p.pt"
FAST = {"ismcts": {"iterations": 24}, "guided": {"iterations": 24, "policy": SHIPPED_2P}}


def build(name: str, seed: int = 0):
    return make_agent(name, seed=seed, **FAST.get(name, {}))


def observation(state, seat: int) -> dict:
    mask = np.zeros(41, dtype=np.int8)
    if seat == state.current and not state.round_over:
        mask[list(engine.legal_actions(state))] = 1
    return {"observation": encode_observation(state, seat), "action_mask": mask}


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_the_registry_lists_every_option_of_each_bot_s_class(name: str):
    """``BOTS`` is what the web app offers: each bot's options there are exactly the keyword
    options its class takes (in its order), so an option added to a class alone fails here."""
    import inspect

    from loveletter_env.agents import BOTS
    from loveletter_env.validation import PLAYER_COUNTS

    bot = BOTS[name]
    named = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    parameters = inspect.signature(bot.factory).parameters.values()
    assert tuple(bot.options) == tuple(p.name for p in parameters if p.name != "seed" and p.kind in named)
    assert bot.description and set(bot.table_sizes) <= set(PLAYER_COUNTS)


@pytest.mark.parametrize("num_players", [2, 3, 4])
@pytest.mark.parametrize("name", AGENT_NAMES)
def test_bots_only_play_legal_actions(name: str, num_players: int):
    rounds = 15 if name in ("ismcts", "guided") else 80
    env = raw_env(num_players=num_players, episode="round")
    agents = [build(name, seed) for seed in range(num_players)]
    for episode in range(rounds):
        env.reset(seed=1000 * num_players + episode)
        for agent in agents:
            agent.reset()
        while not all(env.terminations.values()):
            obs = env.observe(env.agent_selection)
            action = agents[env.agent_name_mapping[env.agent_selection]].act(obs)
            assert isinstance(action, int)
            assert obs["action_mask"][action] == 1, f"{name} chose illegal action {action}"
            env.step(action)


def mismatched_observations() -> dict[str, dict]:
    """Observation dicts whose mask is not their observation's though it allows something: the
    waiting seat's observation with the acting seat's mask, and the acting seat's with a mask of
    moves its hand does not allow, or with two of its own legal moves only (as ``test_guided``
    builds the first two)."""
    env = raw_env(num_players=2, episode="round")
    env.reset(seed=0)
    acting = env.observe(env.agent_selection)
    waiting = env.observe(next(a for a in env.agents if a != env.agent_selection))
    foreign = np.zeros(41, dtype=np.int8)
    foreign[np.flatnonzero(acting["action_mask"] == 0)[:2]] = 1
    part = acting["action_mask"].copy()
    part[np.flatnonzero(part)[:-2]] = 0
    return {
        "out of turn": {"observation": waiting["observation"], "action_mask": acting["action_mask"]},
        "another mask": {"observation": acting["observation"], "action_mask": foreign},
        "part of the mask": {"observation": acting["observation"], "action_mask": part},
    }


@pytest.mark.parametrize("case", ["out of turn", "another mask", "part of the mask"])
@pytest.mark.parametrize("name", ["rule", "belief", "ismcts"])
def test_a_mask_that_is_not_the_observation_s_is_refused_by_name(name: str, case: str):
    """As the other searches do (``base.check_turn``). Were taken: for ``belief`` and
    ``ismcts`` the first two failed with a bare ``KeyError`` deep in the scoring, the last was
    played from silently; ``rule`` played from all three silently (its rules reading a hand of
    one card, or of cards the mask's moves are not for) and remembered the wrong kept card."""
    observation = mismatched_observations()[case]
    message = "not of the seat to act" if case == "out of turn" else "is not this observation's"
    agent = build(name)
    with pytest.raises(ValueError, match=message):
        agent.act(observation)
    with pytest.raises(ValueError, match=message):
        agent.action_probabilities(observation)


def _hidden_variants(state, seat: int, rng: random.Random, count: int):
    """States that differ from ``state`` only in cards ``seat`` cannot see: the deck
    order, the set-aside card and the hands of opponents whose card ``seat`` does not
    know and on whom no Guard missed."""
    n = state.num_players
    hidden_seats = [
        p for p in range(n) if p != seat and not state.out[p] and not state.known[seat][p] and not state.ruled_out[p]
    ]
    for _ in range(count):
        variant = state.clone()
        cards = [variant.deck[0], *variant.deck[variant.next_card :], *(variant.hands[p] for p in hidden_seats)]
        rng.shuffle(cards)
        pile = len(variant.deck) - variant.next_card
        deck = list(variant.deck)
        deck[0] = cards[0]
        deck[variant.next_card :] = cards[1 : 1 + pile]
        variant.deck = tuple(deck)
        for p, card in zip(hidden_seats, cards[1 + pile :]):
            variant.hands[p] = card
        variant.legal = None
        yield variant


@pytest.mark.parametrize("name", AGENT_NAMES)
def test_bots_do_not_read_hidden_cards(name: str):
    """Same observation and seed => same action, whatever the hidden cards are."""
    rng = random.Random(7)
    checked = 0
    for game in range(25):
        n = 2 + game % 3
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        state = engine.new_game(n, deck, 0)
        for _ in range(rng.randrange(4)):  # reach a random point of the round
            if state.round_over:
                break
            engine.step(state, rng.choice(engine.legal_actions(state)))
        if state.round_over or len(engine.legal_actions(state)) < 2:
            continue
        seat = state.current
        reference = observation(state, seat)
        expected = build(name, seed=game).act(reference)
        for variant in _hidden_variants(state, seat, rng, 3):
            obs = observation(variant, seat)
            np.testing.assert_array_equal(obs["observation"], reference["observation"])
            assert build(name, seed=game).act(obs) == expected
            checked += 1
    assert checked >= 20


def _what_seat_knows(state, seat: int) -> tuple:
    """Everything ``seat`` has been told this round, written from the rules (SPEC) rather
    than from the observation: the public part of every move, its own draws and dealt card,
    and what it was shown (its own Priest, either side of its Baron or King)."""
    moves = []
    for e in state.history:
        shown = 0
        if e.player == seat and e.card in (PRIEST, BARON, KING) and e.target not in (-1, seat):
            shown = e.target_card
        elif e.target == seat and e.player != seat and e.card in (BARON, KING):
            shown = e.actor_card
        public = (e.player, e.card, e.target, e.guess, tuple(sorted(e.eliminated)), e.discarded)
        moves.append((*public, e.drawn if e.player == seat else 0, e.replacement if e.target == seat else 0, shown))
    drawn = state.drawn if state.current == seat else 0
    return state.face_up, state.dealt[seat], tuple(sorted(state.hand_of(seat))), drawn, tuple(moves)


@pytest.mark.parametrize("num_players", [2, 4])
@pytest.mark.parametrize("name", ["random", "rule", "batched rule", "belief", "ismcts"])
def test_bots_play_alike_on_deals_their_seat_cannot_tell_apart(name: str, num_players: int):
    """Two deals that differ only by cards swapped in the deck (the set-aside card, the
    draw pile, others' hands): every bot at the table plays both through the AEC env, the
    other seats' moves are copied from the first deal to the second, and while one seat has
    been told the same things in both (another seat's Priest, a Baron or a King between
    others, are not told to it), it sees the same observation and, with the same seed and
    the same memory of its earlier turns, plays the same move."""
    from loveletter_env.agents.batched_bots import BatchedRuleBots

    rng = random.Random(num_players)
    compared = 0
    for trial in range(60 if name == "ismcts" else 200):
        first, seat = rng.randrange(num_players), rng.randrange(num_players)
        decks = [list(FULL_DECK)]
        rng.shuffle(decks[0])
        swapped = decks[0][:]
        i, j = rng.sample([0, *range(4 if num_players == 2 else 1, 16)], 2)  # face-up cards are public
        swapped[i], swapped[j] = swapped[j], swapped[i]
        decks.append(swapped)
        envs = [raw_env(num_players=num_players, episode="round") for _ in decks]
        states = [engine.new_game(num_players, deck, first) for deck in decks]
        for env, deck in zip(envs, decks):
            env.reset(seed=0, options={"deck": deck, "first_player": first})
        if name == "batched rule":
            tables = [BatchedRuleBots([100 * trial + p for p in range(num_players)]) for _ in decks]

            def move(table, p, obs):
                return int(table.act(np.array([p]), obs["observation"][None], obs["action_mask"][None])[0])
        else:
            tables = [[build(name, seed=100 * trial + p) for p in range(num_players)] for _ in decks]

            def move(table, p, obs):
                return table[p].act(obs)

        while not any(state.round_over for state in states) and states[0].current == states[1].current:
            current = states[0].current
            observations = [env.observe(env.possible_agents[current]) for env in envs]
            if current == seat and _what_seat_knows(states[0], seat) != _what_seat_knows(states[1], seat):
                break  # told apart: from here the seat may play otherwise
            moves = [move(table, current, obs) for table, obs in zip(tables, observations)]
            if current == seat:
                np.testing.assert_array_equal(observations[0]["observation"], observations[1]["observation"])
                assert moves[0] == moves[1], (decks, seat)
                compared += 1
            if moves[0] not in engine.legal_actions(states[1]):
                break
            for env, state in zip(envs, states):
                env.step(moves[0])
                engine.step(state, moves[0])
    assert compared >= (25 if name == "ismcts" else 100)


def test_make_agent_rejects_unknown_names_and_arguments():
    with pytest.raises(ValueError, match="unknown agent 'alphazero'"):
        make_agent("alphazero")
    with pytest.raises(ValueError, match="bad arguments for agent 'rule'"):
        make_agent("rule", iterations=5)
    for iterations in (0, 10_000_001, 2**64):  # past the bound, compiled code would wrap or never end
        with pytest.raises(ValueError, match=r"iterations must be an integer in 1\.\.10000000"):
            make_agent("ismcts", iterations=iterations)
    for noise in (-0.1, 1.5, float("nan"), "high", True):
        with pytest.raises(ValueError, match="model_noise must be a number between 0 and 1"):
            make_agent("ismcts", model_noise=noise)


def test_agents_are_reproducible_with_a_seed():
    state = start(2, hands={0: GUARD, 1: PRIEST}, draws=[GUARD])
    obs = observation(state, 0)
    for name in AGENT_NAMES:
        actions = {make_agent(name, seed=3, **FAST.get(name, {})).act(obs) for _ in range(3)}
        assert len(actions) == 1, name


# The rule bot's rules of thumb -------------------------------------------------------


def _rule(state) -> int:
    return rule_action(seat_view(state, state.current), list(engine.legal_actions(state)), random.Random(0))


def test_rule_bot_guards_a_known_card():
    state = start(2, hands={0: GUARD, 1: KING}, draws=[PRIEST])
    state.known[0][1] = KING
    assert _rule(state) == act(GUARD, 1, KING)


def test_rule_bot_never_discards_the_princess():
    for other in (GUARD, PRIEST, BARON, HANDMAID, KING):
        state = start(2, hands={0: PRINCESS, 1: GUARD}, draws=[other])
        assert _rule(state) != act(PRINCESS)


def test_rule_bot_princes_a_known_princess():
    state = start(2, hands={0: PRINCE, 1: PRINCESS}, draws=[HANDMAID])
    state.known[0][1] = PRINCESS
    assert _rule(state) == act(PRINCE, 1)


def test_rule_bot_barons_only_when_ahead():
    ahead = start(2, hands={0: BARON, 1: PRIEST}, draws=[KING])
    ahead.known[0][1] = PRIEST
    assert _rule(ahead) == act(BARON, 1)
    behind = start(2, hands={0: BARON, 1: PRINCESS}, draws=[GUARD])
    behind.known[0][1] = PRINCESS
    assert _rule(behind) == act(GUARD, 1, PRINCESS)  # Guard the known card, not a losing Baron


def test_rule_bot_plays_priest_before_guard():
    state = start(2, hands={0: GUARD, 1: HANDMAID}, draws=[PRIEST])
    assert _rule(state) == act(PRIEST, 1)


def test_rule_bot_guard_guess_skips_ruled_out_values():
    # We hold Baron + Guard with Handmaid, Handmaid, Prince face up: of the values a Guard
    # may name, the Priest is the one favourite by count (2 unseen, every other value 1).
    # A failed Guard has ruled it out, so whatever the tie-break among the rest, the bot
    # never names it (a bot that ignored the ruling would name it every time).
    state = start(2, hands={0: BARON, 1: KING}, draws=[GUARD], face_up=[HANDMAID, HANDMAID, PRINCE])
    view = seat_view(state, 0)
    assert view.unseen[PRIEST] == 2 and all(view.unseen[v] <= 1 for v in range(BARON, PRINCESS + 1))
    state.ruled_out[1] = 1 << PRIEST
    legal = list(engine.legal_actions(state))
    guesses = Counter()
    for seed in range(40):
        action = rule_action(seat_view(state, 0), legal, random.Random(seed))
        assert ACTIONS[action].card == GUARD
        guesses[ACTIONS[action].guess] += 1
    assert set(guesses) <= {BARON, PRINCE, KING, COUNTESS, PRINCESS}
    assert len(guesses) > 1  # the five-way tie is broken by the generator, not by a fixed order


def test_rule_action_does_not_depend_on_the_order_of_the_legal_moves():
    """Naming the Priest on the next seat is action 0, the favourite guess here. Was taken:
    ``best_guard_action(...) or plays[0]`` read that action as "no Guard action" and played
    the first Guard move listed instead, so legal moves listed highest first named the Princess
    (the bot itself lists them lowest first, where ``plays[0]`` was that same action 0)."""
    state = start(2, hands={0: BARON, 1: KING}, draws=[GUARD], face_up=[HANDMAID, HANDMAID, PRINCE])
    view, legal = seat_view(state, 0), list(engine.legal_actions(state))
    assert rule_action(view, legal, random.Random(0)) == act(GUARD, 1, PRIEST) == 0
    assert rule_action(view, legal[::-1], random.Random(0)) == act(GUARD, 1, PRIEST)


# Beliefs and determinization ---------------------------------------------------------


def test_play_likelihood_uses_the_countess_rule():
    assert play_likelihood(KING, COUNTESS) == 0.0
    assert play_likelihood(PRINCE, COUNTESS) == 0.0
    assert play_likelihood(COUNTESS, KING) > play_likelihood(COUNTESS, GUARD)


def test_hand_posterior_is_a_distribution_over_possible_cards():
    state = start(2, hands={0: GUARD, 1: COUNTESS}, draws=[KING, PRIEST])
    engine.step(state, act(GUARD, 1, PRIEST))  # misses: player_1 lacks a Priest (until they draw)
    engine.step(state, act(COUNTESS))  # player_1 had King + Countess: forced
    view = seat_view(state, 0)
    posterior = hand_posterior(view, 1)
    assert abs(sum(posterior.values()) - 1.0) < 1e-9
    assert all(view.unseen[v] > 0 for v in posterior)
    assert max(posterior, key=posterior.get) in (KING, PRINCE)


def test_seat_view_matches_decoded_observation():
    rng = random.Random(3)
    for game in range(60):
        n = 2 + game % 3
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        state = engine.new_game(n, deck, rng.randrange(n))
        while True:
            for seat in range(n):
                assert seat_view(state, seat) == decode_observation(encode_observation(state, seat))
            if state.round_over:
                break
            engine.step(state, rng.choice(engine.legal_actions(state)))


def test_determinizations_agree_with_the_view():
    """A sampled state shows the searching seat exactly its observation, holds the 16
    cards, keeps known cards and never gives a player a ruled-out value."""
    rng = random.Random(11)
    sampled = 0
    for game in range(60):
        n = 2 + game % 3
        deck = list(FULL_DECK)
        rng.shuffle(deck)
        state = engine.new_game(n, deck, 0)
        for _ in range(rng.randrange(6)):
            if state.round_over:
                break
            engine.step(state, rng.choice(engine.legal_actions(state)))
        if state.round_over:
            continue
        seat = state.current
        obs = encode_observation(state, seat)
        view = decode_observation(obs)
        for _ in range(4):
            det = determinize(view, rng)
            # Seat offsets become seats: the searcher is seat 0.
            np.testing.assert_array_equal(encode_observation(det, 0), obs)
            cards = [det.deck[0], *det.deck[det.next_card :], *det.hand_of(0), *det.face_up]
            cards += [c for p in range(n) for c in det.discards[p]]
            cards += [det.hands[p] for p in range(1, n) if not det.out[p]]
            assert Counter(cards) == Counter(FULL_DECK)
            for k in range(1, n):
                if view.known_cards[k]:
                    assert det.hands[k] == view.known_cards[k]
                assert det.hands[k] not in view.ruled_out[k]
            sampled += 1
    assert sampled > 100


def test_a_play_the_model_never_makes_leaves_the_search_counting_cards():
    """With model_noise=0, a Prince the card-counting bot would never have played (none left
    unseen to say it was the other copy) gives every card its player may hold likelihood 0.
    The deals are then drawn by counting alone, on the compiled loop and the Python one alike,
    instead of an "inconsistent view" error on a view that is consistent."""
    state = engine.new_game(2, [1, 5, 2, 6, 3, 1, 5, 1, 8, 2, 4, 1, 3, 4, 7, 1], 0)
    engine.step(state, act(PRINCE, 1))
    obs = observation(state, 1)
    assert set(play_likelihoods(seat_view(state, 1), 1, noise=0.0).values()) == {0.0}
    moves = []
    for use_core in (True, False):
        agent = ISMCTSAgent(seed=0, iterations=20, model_noise=0.0)
        agent.use_core = use_core
        moves.append(agent.act(obs))
    assert obs["action_mask"][moves[0]] and moves[0] == moves[1]


def test_ismcts_finds_the_winning_guard():
    # With a Guard and a known Princess opposite, the search must take the sure win.
    state = start(2, hands={0: GUARD, 1: PRINCESS}, draws=[HANDMAID])
    state.known[0][1] = PRINCESS
    agent = ISMCTSAgent(seed=0, iterations=60)
    assert agent.act(observation(state, 0)) == act(GUARD, 1, PRINCESS)


def test_determinize_follows_the_likelihoods():
    # Likelihood 0 for every value but the Baron: the sampled opponent always holds a Baron;
    # without likelihoods, plain counting gives other values too.
    state = start(2, hands={0: PRIEST, 1: BARON}, draws=[HANDMAID, GUARD, KING])
    engine.step(state, act(HANDMAID))
    engine.step(state, act(GUARD))  # we are sheltered: no one to choose
    view = seat_view(state, 0)
    rng = random.Random(0)
    only_baron = {1: {v: float(v == BARON) for v in range(1, 9)}}
    assert {determinize(view, rng, likelihoods=only_baron).hands[1] for _ in range(50)} == {BARON}
    assert len({determinize(view, rng).hands[1] for _ in range(50)}) > 3


# Failed Guard guesses the move record still proves ------------------------------------


def _after_missed_guess(guess: int, kept_by_us: int, our_next: int, face_up: list[int]):
    """Seat 0 Guards seat 1 (holding a Baron) naming ``guess`` and misses; seat 1 draws a
    Priest and plays it on seat 0; seat 0 then holds ``kept_by_us`` and ``our_next``.
    Returns seat 0's observation."""
    deck = deal_deck(2, hands={0: GUARD, 1: BARON}, draws=[kept_by_us, PRIEST, our_next], face_up=face_up)
    env = make_env(2, deck)
    env.step(act(GUARD, 1, guess))
    env.step(act(PRIEST, 1))
    return env.observe(env.agent_selection)


def test_rule_bot_does_not_name_a_value_its_missed_guard_still_rules_out():
    # The Priest that seat 1 played was the card it drew: the Baron it kept is the card the
    # Guard missed, so naming the Priest again cannot hit.
    naming_priest = act(GUARD, 1, PRIEST)
    after_priest = _after_missed_guess(PRIEST, HANDMAID, GUARD, [BARON, HANDMAID, PRINCE])
    assert make_agent("rule", seed=0).action_probabilities(after_priest)[naming_priest] == 0.0
    after_king = _after_missed_guess(KING, HANDMAID, GUARD, [BARON, HANDMAID, PRINCE])
    assert make_agent("rule", seed=0).action_probabilities(after_king)[naming_priest] > 0.0


def test_belief_bot_does_not_count_on_a_card_a_missed_guard_still_rules_out():
    # Holding Baron and Handmaid, a Baron comparison keeping the Handmaid looks good while
    # seat 1 may hold the last Priest; once the Guard has ruled the Priest out, it shelters.
    after_priest = _after_missed_guess(PRIEST, BARON, HANDMAID, [HANDMAID, PRINCE, KING])
    after_king = _after_missed_guess(KING, BARON, HANDMAID, [HANDMAID, PRINCE, KING])
    assert make_agent("belief", seed=0).act(after_king) == act(BARON, 1)
    assert make_agent("belief", seed=0).act(after_priest) == act(HANDMAID)


# Seeds ------------------------------------------------------------------------------


@pytest.mark.parametrize("seed", [s for s in BAD_SEEDS if s is not None], ids=repr)
@pytest.mark.parametrize("name", ["random", "rule", "belief", "ismcts"])
def test_bots_refuse_seeds_that_are_not_integers(name, seed):
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got"):
        make_agent(name, seed=seed)
    with pytest.raises(ValueError, match=r"^seed must be None or a non-negative integer below 2\*\*63, got"):
        resolve_agent(name, seed=seed)
    agent = make_agent(name, seed=1)
    with pytest.raises(ValueError, match=r"^seed must be a non-negative integer below 2\*\*63, got"):
        agent.reset(seed=seed)  # as evaluations reseed agents at every episode
    assert agent._seed == 1


def test_a_search_agent_with_no_seed_estimates_its_probabilities_from_fresh_draws():
    """Seeded, the estimates repeat; unseeded, they are drawn afresh as the agent's moves are
    (every unseeded agent used to seed them alike, from the text "None/0", "None/1", ...)."""
    env = loveletter_env.env(num_players=2)
    env.reset(seed=3)
    observations = []
    for _ in env.agent_iter():
        observation, _, terminated, truncated, _ = env.last()
        if terminated or truncated or len(observations) == 12:
            break
        observations.append(observation)
        env.step(int(np.flatnonzero(observation["action_mask"])[0]))
    estimates = {
        seed: [
            [make_agent("ismcts", seed=seed, iterations=8).action_probabilities(o) for o in observations] for _ in "ab"
        ]
        for seed in (1, None)
    }
    assert all(np.array_equal(x, y) for x, y in zip(*estimates[1]))
    assert not all(np.array_equal(x, y) for x, y in zip(*estimates[None]))

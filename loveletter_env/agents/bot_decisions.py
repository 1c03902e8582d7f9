"""The decisions of the compiled ``rule`` and ``random`` bots, one bot slot at a time,
compiled twice from this one source: for the CPU here (``@njit``, with the batch loops
:func:`rule_actions` and :func:`random_actions` that :mod:`.batched_bots` calls), and as
CUDA device functions by :mod:`.cuda_bots`.

A slot's decision (:func:`rule_action`, :func:`random_action`) allocates nothing, since
device code cannot: its caller owns the scratch (the CPU loops allocate it once a batch, a
kernel thread in local memory). ``tests/agents/test_batched_bots.py`` holds it to the
Python bots' moves, ``tests/agents/test_cuda_bots.py`` the kernels to the CPU's.
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..actions import NUM_ACTIONS
from ..core.layout import (
    CARD_OF_ACTION,
    OBS_DECK,
    OBS_DISCARD_COUNTS,
    OBS_HAND,
    OBS_KNOWN,
    OBS_M_ACTOR,
    OBS_M_CARD,
    OBS_M_GUESS,
    OBS_M_OUT,
    OBS_M_TARGET,
    OBS_MOVE_SIZE,
    OBS_MOVES,
    OBS_NUM_PLAYERS,
    OBS_OUT,
    OBS_RULED,
    OBS_SEEN,
    OBS_UNSEEN,
    OFFSET_OF_ACTION,
)
from ..core.mt19937 import randbelow
from ..observation import MAX_MOVES
from .rule import BARON_MARGIN, SHELTER_FROM

GUARD, PRIEST, BARON, HANDMAID, PRINCE, KING, COUNTESS, PRINCESS = range(1, 9)
PRINCE_BASE = 31
PRINCESS_ACTION = 40
# Kept-card memory per slot: the card kept, the deck size then, own discards after the play.
_KEPT, _DECK_SIZE, _DISCARDS = range(3)


# What the seat sees (ObservationView's fields, read from the vector) --------------------


@njit(cache=True)
def _one_hot(obs, start, size):
    """The index set in ``obs[start:start + size]`` (-1 if none)."""
    for i in range(size):
        if obs[start + i]:
            return i
    return -1


@njit(cache=True)
def move_rulings(obs, n, ruled):
    """``base.move_rulings`` into ``ruled`` (int64 [4], bit ``v`` for value ``v``), from
    the move record and the ``ruled_out`` field."""
    for k in range(4):
        ruled[k] = 0
    for slot in range(MAX_MOVES):
        base = OBS_MOVES + slot * OBS_MOVE_SIZE
        actor = _one_hot(obs, base + OBS_M_ACTOR, 4)
        if actor < 0:
            break
        card = _one_hot(obs, base + OBS_M_CARD, 8) + 1
        # knowledge.ruled_out_after_play: a ruled-out value played shows the old card kept.
        if not (ruled[actor] >> card) & 1:
            ruled[actor] = 0
        target = _one_hot(obs, base + OBS_M_TARGET, 4)
        if target >= 0:
            guess = _one_hot(obs, base + OBS_M_GUESS, 8) + 1
            if card == GUARD and guess and obs[base + OBS_M_OUT + target] == 0:
                ruled[target] |= 1 << guess
            elif card == PRINCE:
                ruled[target] = 0
            elif card == KING:
                ruled[actor], ruled[target] = ruled[target], ruled[actor]
        for k in range(4):
            if obs[base + OBS_M_OUT + k]:
                ruled[k] = 0
    for k in range(1, n):
        for v in range(1, 9):
            if obs[OBS_RULED + (k - 1) * 8 + v - 1]:
                ruled[k] |= 1 << v


@njit(cache=True)
def _weights(obs, offset, n, known, ruled, out):
    """Unnormalised hand distribution of seat ``offset`` into ``out[1..8]`` (as
    ``hand_distribution`` with the rulings ``ruled``); returns the total, 0 for a seat
    that is not in the round."""
    for v in range(9):
        out[v] = 0
    if offset == 0 or offset >= n or obs[OBS_OUT + offset] != 0:
        return 0
    if known[offset]:
        out[known[offset]] = 1
        return 1
    total = 0
    for v in range(1, 9):
        unseen = np.int64(obs[OBS_UNSEEN + v - 1])
        if unseen and not (ruled[offset] >> v) & 1:
            out[v] = unseen
            total += unseen
    if total == 0:  # only an inconsistent view rules out every unseen value
        for v in range(1, 9):
            out[v] = np.int64(obs[OBS_UNSEEN + v - 1])
            total += out[v]
    return total


@njit(cache=True)
def _baron_odds(obs, offset, n, known, ruled, kept, weights):
    total = _weights(obs, offset, n, known, ruled, weights)
    win = 0.0
    lose = 0.0
    for v in range(1, 9):
        if weights[v]:
            p = weights[v] / total
            if v < kept:
                win += p
            elif v > kept:
                lose += p
    return win, lose


@njit(cache=True)
def _expected_value(obs, offset, n, known, ruled, weights):
    total = _weights(obs, offset, n, known, ruled, weights)
    value = 0.0
    for v in range(1, 9):
        if weights[v]:
            value += v * (weights[v] / total)
    return value


@njit(cache=True)
def _other(a, b, card):
    return b if card == a else a


# The rules (loveletter_env.agents.rule, in the same order) --------------------------------


@njit(cache=True)
def _play(obs, n, known, ruled, a, b, card, options, count, mt, weights, picks, chosen):
    """``rule._play``: the best way to play ``card``, or -1 when playing it is unsafe
    (``picks`` and ``chosen`` are scratch: each entry is written before it is read)."""
    plays = np.int64(0)
    for i in range(count):
        if CARD_OF_ACTION[options[i]] == card:
            picks[plays] = options[i]
            plays += 1
    if plays == 0 or card == PRINCESS:
        return -1
    kept = _other(a, b, card)
    if card == GUARD:
        best = np.int64(0)
        best_p = -1.0
        for i in range(plays):
            action = picks[i]
            guess = action % 7 + 2 if action < 21 else 0
            if guess == 0:
                continue
            total = _weights(obs, OFFSET_OF_ACTION[action], n, known, ruled, weights)
            p = weights[guess] / total if total and weights[guess] else 0.0
            if p > best_p + 1e-12:
                chosen[0] = action
                best = 1
                best_p = p
            elif abs(p - best_p) <= 1e-12:
                chosen[best] = action
                best += 1
        if best == 0:
            return picks[0]
        pick = chosen[randbelow(mt, best)]
        return pick if pick != 0 else picks[0]  # picks lowest first: action 0 is picks[0], as rule._play plays it
    if card == PRIEST:
        unknown = np.int64(0)
        for i in range(plays):
            offset = OFFSET_OF_ACTION[picks[i]]
            if offset > 0 and not known[offset]:
                chosen[unknown] = picks[i]
                unknown += 1
        if unknown:
            return chosen[randbelow(mt, unknown)]
        return picks[randbelow(mt, plays)]
    if card == BARON:
        targeted = np.int64(0)
        safe = np.int64(0)
        for i in range(plays):
            offset = OFFSET_OF_ACTION[picks[i]]
            if offset > 0:
                targeted += 1
                win, lose = _baron_odds(obs, offset, n, known, ruled, kept, weights)
                if win >= lose:
                    chosen[safe] = picks[i]
                    safe += 1
        if targeted and not safe:
            return -1
        if safe:
            return chosen[randbelow(mt, safe)]
        return picks[randbelow(mt, plays)]
    if card == PRINCE:
        top = -1.0
        others = np.int64(0)
        for i in range(plays):
            offset = OFFSET_OF_ACTION[picks[i]]
            if offset > 0:
                others += 1
                top = max(top, _expected_value(obs, offset, n, known, ruled, weights))
        if others:
            best = np.int64(0)
            for i in range(plays):
                offset = OFFSET_OF_ACTION[picks[i]]
                if offset > 0 and _expected_value(obs, offset, n, known, ruled, weights) >= top - 1e-9:
                    chosen[best] = picks[i]
                    best += 1
            return chosen[randbelow(mt, best)]
        return -1 if kept == PRINCESS else PRINCE_BASE
    if card == KING:
        return -1 if kept == PRINCESS else picks[randbelow(mt, plays)]
    return picks[randbelow(mt, plays)]


@njit(cache=True)
def _rule_action(obs, mask, n, known, ruled, a, b, options, count, mt, seen_card, weights, picks, chosen):
    """``rule.rule_action`` for the hand ``a <= b`` and the ``count`` legal ``options``.

    ``legal`` is the full ``mask``: ``options`` may have dropped the Princess, whose action
    no rule below looks up in it."""
    legal = mask
    holds_guard = a == GUARD or b == GUARD
    # 2. Certain hits.
    for k in range(1, n):
        card = known[k]
        if card and card != GUARD and holds_guard and legal[(k - 1) * 7 + card - 2]:
            return (k - 1) * 7 + card - 2
        if card == PRINCESS and legal[PRINCE_BASE + k]:
            return PRINCE_BASE + k
    # 3. Baron when ahead.
    if a == BARON or b == BARON:
        kept = _other(a, b, np.int64(BARON))
        for i in range(count):
            action = options[i]
            offset = OFFSET_OF_ACTION[action]
            if CARD_OF_ACTION[action] == BARON and offset > 0 and known[offset] and known[offset] < kept:
                return action
        best, best_win, best_lose = -1, -1.0, -1.0
        for i in range(count):
            action = options[i]
            offset = OFFSET_OF_ACTION[action]
            if CARD_OF_ACTION[action] == BARON and offset > 0:
                win, lose = _baron_odds(obs, offset, n, known, ruled, kept, weights)
                # The largest (win, lose, action) tuple, as sorted(..., reverse=True)[0].
                if win > best_win or (win == best_win and (lose > best_lose or (lose == best_lose and action > best))):
                    best, best_win, best_lose = action, win, lose
        if best >= 0 and best_win >= best_lose + BARON_MARGIN:
            return best
    # 4. Priest before Guard.
    if (a == PRIEST or b == PRIEST) and holds_guard:
        choice = _play(obs, n, known, ruled, a, b, np.int64(PRIEST), options, count, mt, weights, picks, chosen)
        if choice >= 0:
            return choice
    # 5. Shelter a high card.
    if (a == HANDMAID or b == HANDMAID) and _other(a, b, np.int64(HANDMAID)) >= SHELTER_FROM:
        for i in range(count):
            if CARD_OF_ACTION[options[i]] == HANDMAID:
                return options[i]
    # 6. Get rid of the card an opponent has seen.
    if seen_card and seen_card != PRINCESS and a != b:
        choice = _play(obs, n, known, ruled, a, b, seen_card, options, count, mt, weights, picks, chosen)
        if choice >= 0:
            return choice
    # 7. The lowest safe card (each value once).
    for card in (a, b):
        choice = _play(obs, n, known, ruled, a, b, card, options, count, mt, weights, picks, chosen)
        if choice >= 0:
            return choice
        if a == b:
            break
    return options[randbelow(mt, count)]


@njit(cache=True)
def _legal_options(mask, options):
    """The legal actions of ``mask`` into ``options``, lowest first; returns their count."""
    count = np.int64(0)
    for action in range(NUM_ACTIONS):
        if mask[action]:
            options[count] = action
            count += 1
    return count


@njit(cache=True)
def rule_action(obs, mask, mt, memory, known, ruled, options, picks, chosen, weights):
    """The move of a rule-bot slot whose generator state is ``mt`` and kept-card memory
    ``memory`` (both advanced as ``RuleAgent.act`` advances them), seeing ``obs`` with the
    legal ``mask``; -1 when ``mask`` has no legal action (nothing is drawn or remembered).

    One slot's decision, compiled for the CPU (:func:`rule_actions`) and as a CUDA device
    function (:mod:`.cuda_bots`). It allocates nothing, since device code cannot: the rest
    is scratch the caller owns, int64 each, ``known`` and ``ruled`` [4], ``options``,
    ``picks`` and ``chosen`` [NUM_ACTIONS], ``weights`` [9]."""
    count = _legal_options(mask, options)
    if count <= 1:
        # A forced move: the Python bot neither draws nor remembers.
        return options[0] if count == 1 else np.int64(-1)
    n = np.int64(2)  # typed, not a literal: one compiled version of each callee
    for k in range(3):
        if obs[OBS_NUM_PLAYERS + k]:
            n = k + 2
    a = np.int64(0)
    b = np.int64(0)
    for v in range(1, 9):
        for _ in range(np.int64(obs[OBS_HAND + v - 1])):
            if a == 0:
                a = v
            else:
                b = v
    seen = False
    known[0] = 0
    for k in range(1, 4):
        known[k] = 0
        if k < n:
            for v in range(1, 9):
                if obs[OBS_KNOWN + (k - 1) * 8 + v - 1]:
                    known[k] = v
            seen = seen or obs[OBS_SEEN + k - 1] != 0
    move_rulings(obs, n, ruled)
    deck_size = np.int64(obs[OBS_DECK])
    discards = np.int64(0)
    for v in range(8):
        discards += np.int64(obs[OBS_DISCARD_COUNTS + v])
    # KeptCardMemory.old_card: the card kept last turn, if nothing has hit our hand since.
    last_kept = memory[_KEPT] if 0 <= deck_size < memory[_DECK_SIZE] else 0
    old_card = last_kept if discards == memory[_DISCARDS] and last_kept in (a, b) else 0
    # Drop the Princess unless she is all there is.
    kept_options = np.int64(0)
    for j in range(count):
        if options[j] != PRINCESS_ACTION:
            options[kept_options] = options[j]
            kept_options += 1
    if kept_options:
        count = kept_options
    seen_card = old_card if seen else np.int64(0)
    action = _rule_action(obs, mask, n, known, ruled, a, b, options, count, mt, seen_card, weights, picks, chosen)
    memory[_KEPT] = _other(a, b, CARD_OF_ACTION[action])
    memory[_DECK_SIZE] = deck_size
    memory[_DISCARDS] = discards + 1
    return action


# Inlined into the CPU loop: as a call it cost a tenth of the batch (97 against 106 ns a decision).
@njit(cache=True, inline="always")
def random_action(mask, mt, options):
    """The move of a random-bot slot whose generator state is ``mt`` (advanced in place),
    with the legal ``mask``: ``RandomAgent.act`` (a forced move draws nothing); -1 when
    ``mask`` has no legal action. ``options`` is scratch (int64 [NUM_ACTIONS]); compiled
    for the CPU (:func:`random_actions`) and as a CUDA device function (:mod:`.cuda_bots`)."""
    count = _legal_options(mask, options)
    if count <= 1:
        return options[0] if count == 1 else np.int64(-1)
    return options[randbelow(mt, count)]


@njit(cache=True)
def rule_actions(observations, masks, slots, mt_states, memories, actions):
    """``actions[i]`` = the move of bot slot ``slots[i]`` seeing ``observations[i]`` with
    legal ``masks[i]``; advances that slot's generator and memory as ``RuleAgent.act`` does."""
    known = np.zeros(4, np.int64)
    ruled = np.zeros(4, np.int64)
    options = np.zeros(NUM_ACTIONS, np.int64)
    picks = np.zeros(NUM_ACTIONS, np.int64)
    chosen = np.zeros(NUM_ACTIONS, np.int64)
    weights = np.zeros(9, np.int64)
    for i in range(observations.shape[0]):
        slot = slots[i]
        actions[i] = rule_action(
            observations[i], masks[i], mt_states[slot], memories[slot], known, ruled, options, picks, chosen, weights
        )


@njit(cache=True)
def random_actions(masks, slots, mt_states, actions):
    """``actions[i]`` = the move of random-bot slot ``slots[i]`` with legal ``masks[i]``:
    ``RandomAgent.act`` (a forced move draws nothing)."""
    options = np.zeros(NUM_ACTIONS, np.int64)
    for i in range(masks.shape[0]):
        actions[i] = random_action(masks[i], mt_states[slots[i]], options)

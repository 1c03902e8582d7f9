"""The rules as compiled per-game kernels over core records (see :mod:`.layout`).

Each kernel mirrors one function of the reference engine (:mod:`loveletter_env.engine`)
and the knowledge rules of :mod:`loveletter_env.knowledge`; ``tests/core/test_core.py`` drives
both with the same decks and actions and compares everything they produce. Kernels
assume valid input (a legal action, a seat of the table, a permutation of the 16
cards): the Python layers that call them check it first, so nothing out of range
reaches compiled code.

Batch drivers (``*_batch``) loop over games in compiled code, so one call from Python
steps thousands of games.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np
from numba import njit

from ..cards import BARON, DECK_SIZE, GUARD, HANDMAID, KING, PRIEST, PRINCE, PRINCESS
from .layout import (
    BYTE_BITS,
    CARD_OF_ACTION,
    COPIES,
    CURRENT,
    DECK,
    DECK_HALVES,
    DRAWN,
    FACE_UP,
    FACE_UP_FIXED,
    GAME_OVER,
    GAME_WINNERS,
    GUESS_OF_ACTION,
    HAND_ACTION_BITS,
    HANDS,
    KNOWN,
    M_ACTOR,
    M_ACTOR_CARD,
    M_CARD,
    M_DISCARDED,
    M_DRAWN,
    M_GUESS,
    M_OUT,
    M_REPLACEMENT,
    M_TARGET,
    M_TARGET_CARD,
    MAX_SEATS,
    NEXT_CARD,
    NUM_PLAYERS,
    OBS_DEALT,
    OBS_DECK,
    OBS_DISCARD_COUNTS,
    OBS_DISCARDS,
    OBS_DRAWN,
    OBS_FACE_UP,
    OBS_HAND,
    OBS_KNOWN,
    OBS_M_ACTOR,
    OBS_M_CARD,
    OBS_M_DISCARDED,
    OBS_M_DREW,
    OBS_M_GUESS,
    OBS_M_OUT,
    OBS_M_REPLACEMENT,
    OBS_M_SAW,
    OBS_M_TARGET,
    OBS_MOVE_SIZE,
    OBS_MOVES,
    OBS_NUM_PLAYERS,
    OBS_OUT,
    OBS_PRESENT,
    OBS_PROTECTED,
    OBS_RULED,
    OBS_RULES,
    OBS_SEEN,
    OBS_TARGET,
    OBS_TO_ACT,
    OBS_TOKENS,
    OBS_UNSEEN,
    OFFSET_OF_ACTION,
    ROUND,
    ROUND_OVER,
    RULE_DISCARD_SUM,
    RULE_KING_IGNORES_HANDMAID,
    SET_ASIDE_DRAWN,
    TARGET_ACTION_BITS,
    TOKENS_TO_WIN,
    TURN,
    dealt_at,
    deck_at,
    discarded_at,
    discards_at,
    game_winners_at,
    hands_at,
    known_at,
    move_log_at,
    num_discards_at,
    out_at,
    protected_at,
    round_winners_at,
    ruled_out_at,
    seen_at,
    tokens_at,
)
from .sampling import GOLDEN, nth_set_bit, pick, popcount

NUM_ACTIONS = CARD_OF_ACTION.shape[0]
_MAX_DISCARDS = DECK_SIZE
_DISCARD_BLOCK = _MAX_DISCARDS * 8  # observation entries per seat's discard sequence
#: Discard slots the observation writes without a loop bound (see observe_into).
_FIXED_SLOTS = 4
#: Cards whose play shows the mover the target's card, and those that show the target the
#: mover's (bit ``v`` for value ``v``).
_SHOWS_TARGET = (1 << PRIEST) | (1 << BARON) | (1 << KING)
_SHOWS_ACTOR = (1 << BARON) | (1 << KING)


class Deals(NamedTuple):
    """Where a CPU step's new rounds come from (:func:`step_batch`): the deck tables
    ``orders`` and ``placements`` (:func:`.decks.deck_tables`), then this step's draws, a
    uniform float32 per game ``uniforms`` [N] (the first seat of a new game) and three rows
    of table indices per game ``draws`` [3, N] (see :func:`deal_shuffled`)."""

    orders: np.ndarray
    placements: np.ndarray
    uniforms: np.ndarray
    draws: np.ndarray


class TurnOutputs(NamedTuple):
    """What a step writes per game (:func:`step_batch`, and the GPU's step): the turn just
    played, ``rewards`` [N, 4], ``dones`` [N], ``round_over`` [N], ``round_winners`` [N, 4]
    and ``tokens`` [N, 4]; then the turn to play, the seat ``current`` [N], the legal
    ``masks`` [N, 41] and the same as bit sets, ``legal`` uint64 [N]. Numpy arrays on
    the CPU; on CUDA, torch tensors or numba device arrays."""

    rewards: Any
    dones: Any
    round_over: Any
    round_winners: Any
    tokens: Any
    current: Any
    masks: Any
    legal: Any


@njit(cache=True)
def _wrap(seat, n):
    """``seat % n`` for 0 <= seat < 2n: a compare instead of a division on the hot path."""
    return seat - n if seat >= n else seat


# Knowledge (mirrors loveletter_env.knowledge) -------------------------------------------


@njit(cache=True)
def _reveal_card(r, observer, player, card):
    """``observer`` is shown ``player``'s ``card``, and ``player`` sees that it was
    (:func:`loveletter_env.knowledge.reveal_card`)."""
    r[known_at(observer, player)] = card
    r[seen_at(observer, player)] = 1


@njit(cache=True)
def _on_hand_replaced(r, player):
    for observer in range(MAX_SEATS):
        r[known_at(observer, player)] = 0
        r[seen_at(observer, player)] = 0
    r[ruled_out_at(player)] = 0


# Round set-up and turns -------------------------------------------------------------------


@njit(cache=True)
def _begin_turn(r, player):
    r[CURRENT] = player
    r[protected_at(player)] = 0  # Handmaid protection lasts until the owner's next turn
    nxt = np.int64(r[NEXT_CARD])
    r[DRAWN] = r[deck_at(nxt)]
    r[NEXT_CARD] = nxt + 1
    r[ruled_out_at(player)] = 0  # the card kept may be the new one


@njit(cache=True)
def start_round(r, deck, first_player):
    """Deal a new round from ``deck`` (16 cards, top first); ``first_player`` starts.
    Tokens carry over; everything else about the round starts afresh."""
    n = np.int64(r[NUM_PLAYERS])
    for i in range(DECK_SIZE):
        r[deck_at(i)] = deck[i]
    r[ROUND] += 1
    r[TURN] = 0
    r[SET_ASIDE_DRAWN] = 0
    r[ROUND_OVER] = 0
    # Contiguous blocks (see the layout): hands, out, protected, discard counts, ruled-out
    # masks and round winners; then knowledge and discards to the end of the record.
    r[HANDS:GAME_WINNERS] = 0
    r[KNOWN:FACE_UP] = 0
    for seat in range(n, MAX_SEATS):
        r[out_at(seat)] = 1
    # Set-aside card, then the face-up cards, then one card each in turn order.
    dealt = 1 + np.int64(r[FACE_UP])
    for i in range(n):
        seat = _wrap(first_player + i, n)
        r[hands_at(seat)] = r[deck_at(dealt + i)]
        r[dealt_at(seat)] = r[deck_at(dealt + i)]
    r[NEXT_CARD] = dealt + n
    _begin_turn(r, first_player)


@njit(cache=True)
def restart_game(r):
    """Zero the tokens and round count of ``r`` for a new game at the same table."""
    for seat in range(MAX_SEATS):
        r[tokens_at(seat)] = 0
        r[game_winners_at(seat)] = 0
    r[GAME_OVER] = 0
    r[ROUND] = 0


@njit(cache=True)
def lowest_round_winner(r):
    for seat in range(MAX_SEATS):
        if r[round_winners_at(seat)]:
            return seat
    return 0


# Legal actions --------------------------------------------------------------------------


@njit(cache=True)
def _target_code(r):
    """Bits of the other players that can be chosen: offsets 1..3 in bits 0..2, and for the
    King in bits 3..5 (see ``layout.TARGET_CODES``)."""
    n = np.int64(r[NUM_PLAYERS])
    player = np.int64(r[CURRENT])
    ignore = r[RULE_KING_IGNORES_HANDMAID] != 0
    code = 0
    king = 0
    for t in range(1, n):
        seat = _wrap(player + t, n)
        if r[out_at(seat)]:
            continue
        if not r[protected_at(seat)]:
            code |= 1 << (t - 1)
            king |= 1 << (t - 1)
        elif ignore:
            king |= 1 << (t - 1)
    return code | (king << 3)


@njit(cache=True)
def legal_bits(r):
    """The legal actions of the player to act as a bit set (bit ``a`` for action ``a``;
    0 once the round is over)."""
    if r[ROUND_OVER]:
        return np.uint64(0)
    hand = np.int64(r[hands_at(r[CURRENT])]) * 9 + np.int64(r[DRAWN])
    return HAND_ACTION_BITS[hand] & TARGET_ACTION_BITS[_target_code(r)]


@njit(cache=True)
def write_mask(bits, mask):
    """Write a bit set of actions into ``mask`` (41 entries, bool or any numeric dtype)."""
    for a in range(NUM_ACTIONS):
        mask[a] = (bits >> np.uint64(a)) & np.uint64(1)


@njit(cache=True)
def write_mask_bytes(bits, mask):
    """:func:`write_mask` into 41 bytes of 0/1 (a bool mask viewed as ``uint8``), a byte of
    bits at a time from ``BYTE_BITS``: each 8-byte row copy compiles to one load and one
    store, where the bit-by-bit loop cost 10 ns a mask (a sixth of a batched turn)."""
    for i in range(NUM_ACTIONS // 8):
        row = BYTE_BITS[np.int64((bits >> np.uint64(8 * i)) & np.uint64(0xFF))]
        for k in range(8):
            mask[8 * i + k] = row[k]
    for a in range(NUM_ACTIONS // 8 * 8, NUM_ACTIONS):
        mask[a] = np.uint8((bits >> np.uint64(a)) & np.uint64(1))


@njit(cache=True)
def legal_mask_into(r, mask):
    """Write the legal actions of the player to act into ``mask`` (41 entries, any
    numeric or bool dtype; all zero once the round is over)."""
    write_mask(legal_bits(r), mask)


@njit(cache=True)
def is_legal(r, action):
    """Whether ``action`` (any integer) is legal for the player to act."""
    if action < 0 or action >= NUM_ACTIONS:
        return False
    return (legal_bits(r) >> np.uint64(action)) & np.uint64(1) != 0


# Applying an action ---------------------------------------------------------------------


@njit(cache=True)
def _discard(r, seat, card):
    j = np.int64(r[num_discards_at(seat)])
    r[discards_at(seat, j)] = card
    r[num_discards_at(seat)] = j + 1
    r[discarded_at(seat, card - 1)] += 1


@njit(cache=True)
def _eliminate(r, player, move):
    """``player`` is out: their hand is discarded face up without effect (noted in the
    move log's entry ``move``)."""
    r[out_at(player)] = 1
    r[protected_at(player)] = 0
    r[move_log_at(move, M_OUT)] |= 1 << player
    card = np.int64(r[hands_at(player)])
    if card:
        _discard(r, player, card)
        r[move_log_at(move, M_DISCARDED)] = card
        r[hands_at(player)] = 0
    _on_hand_replaced(r, player)


@njit(cache=True)
def _draw_replacement(r):
    """The card a Prince's target draws: the top of the deck, or the set-aside card."""
    nxt = np.int64(r[NEXT_CARD])
    if nxt < DECK_SIZE:
        r[NEXT_CARD] = nxt + 1
        return np.int64(r[deck_at(nxt)])
    r[SET_ASIDE_DRAWN] = 1
    return np.int64(r[deck_at(0)])


@njit(cache=True)
def play(r, action):
    """The player to act plays ``action`` (assumed legal); the turn resolves, then the
    next one begins or the round ends (winners, tokens, game end)."""
    n = np.int64(r[NUM_PLAYERS])
    player = np.int64(r[CURRENT])
    card = CARD_OF_ACTION[action]
    offset = OFFSET_OF_ACTION[action]
    guess = GUESS_OF_ACTION[action]

    # The move log's entry for this move (zeroed when the round was dealt).
    move = np.int64(r[TURN])
    r[move_log_at(move, M_ACTOR)] = player
    r[move_log_at(move, M_CARD)] = card
    r[move_log_at(move, M_GUESS)] = guess  # 0 for actions that name no card

    # Play one card; keep the other.
    drawn = np.int64(r[DRAWN])
    r[move_log_at(move, M_DRAWN)] = drawn
    if drawn != card:
        r[hands_at(player)] = drawn
    r[DRAWN] = 0
    _discard(r, player, card)
    # Whoever knew the player held this value can no longer tell which copy was played.
    for observer in range(MAX_SEATS):
        if r[known_at(observer, player)] == card:
            r[known_at(observer, player)] = 0
            r[seen_at(observer, player)] = 0

    if offset >= 0:
        target = _wrap(player + offset, n)
        r[move_log_at(move, M_TARGET)] = target + 1
        if card == GUARD:
            if r[hands_at(target)] == guess:
                r[move_log_at(move, M_TARGET_CARD)] = guess
                _eliminate(r, target, move)
            else:
                r[ruled_out_at(target)] |= 1 << (guess - 1)
        elif card == PRIEST:
            target_card = np.int64(r[hands_at(target)])
            r[move_log_at(move, M_TARGET_CARD)] = target_card
            _reveal_card(r, player, target, target_card)
        elif card == BARON:
            actor_card = np.int64(r[hands_at(player)])
            target_card = np.int64(r[hands_at(target)])
            r[move_log_at(move, M_ACTOR_CARD)] = actor_card
            r[move_log_at(move, M_TARGET_CARD)] = target_card
            _reveal_card(r, player, target, target_card)
            _reveal_card(r, target, player, actor_card)
            if actor_card < target_card:
                _eliminate(r, player, move)
            elif target_card < actor_card:
                _eliminate(r, target, move)
        elif card == PRINCE:
            target_card = np.int64(r[hands_at(target)])
            r[move_log_at(move, M_TARGET_CARD)] = target_card
            r[move_log_at(move, M_DISCARDED)] = target_card
            _discard(r, target, target_card)
            r[hands_at(target)] = 0
            _on_hand_replaced(r, target)
            if target_card == PRINCESS:
                _eliminate(r, target, move)
            else:
                replacement = _draw_replacement(r)
                r[hands_at(target)] = replacement
                r[move_log_at(move, M_REPLACEMENT)] = replacement
        elif card == KING:
            actor_card = np.int64(r[hands_at(player)])
            target_card = np.int64(r[hands_at(target)])
            r[move_log_at(move, M_ACTOR_CARD)] = actor_card
            r[move_log_at(move, M_TARGET_CARD)] = target_card
            r[hands_at(player)] = target_card
            r[hands_at(target)] = actor_card
            # What anyone knew moves with the card; the new holder cannot tell whether it held.
            for observer in range(MAX_SEATS):
                known_player = r[known_at(observer, player)]
                r[known_at(observer, player)] = r[known_at(observer, target)]
                r[known_at(observer, target)] = known_player
                r[seen_at(observer, player)] = 0
                r[seen_at(observer, target)] = 0
            ruled = r[ruled_out_at(player)]
            r[ruled_out_at(player)] = r[ruled_out_at(target)]
            r[ruled_out_at(target)] = ruled
            _reveal_card(r, player, target, actor_card)
            _reveal_card(r, target, player, target_card)
    elif card == HANDMAID:
        r[protected_at(player)] = 1
    elif card == PRINCESS:
        _eliminate(r, player, move)

    r[TURN] += 1
    _end_turn(r)


@njit(cache=True)
def _end_turn(r):
    """Check for the end of the round; otherwise the next player in the round begins."""
    n = np.int64(r[NUM_PLAYERS])
    alive = 0
    last = 0
    for seat in range(n):
        if not r[out_at(seat)]:
            alive += 1
            last = seat
    if alive == 1:
        r[round_winners_at(last)] = 1
        _finish_round(r)
    elif r[NEXT_CARD] >= DECK_SIZE:
        _showdown(r)
        _finish_round(r)
    else:
        nxt = _wrap(np.int64(r[CURRENT]) + 1, n)
        while r[out_at(nxt)]:
            nxt = _wrap(nxt + 1, n)
        _begin_turn(r, nxt)


@njit(cache=True)
def _discard_sum(r, seat):
    total = 0
    for v in range(1, 9):
        total += v * np.int64(r[discarded_at(seat, v - 1)])
    return total


@njit(cache=True)
def _showdown(r):
    """Mark the showdown winners: highest card; then (``classic``) highest sum of
    discards; whoever is still tied shares the round."""
    n = np.int64(r[NUM_PLAYERS])
    best = -1
    for seat in range(n):
        if not r[out_at(seat)] and r[hands_at(seat)] > best:
            best = np.int64(r[hands_at(seat)])
    tied = 0
    best_sum = -1
    for seat in range(n):
        if not r[out_at(seat)] and r[hands_at(seat)] == best:
            tied += 1
            best_sum = max(best_sum, _discard_sum(r, seat))
    tiebreak = tied > 1 and r[RULE_DISCARD_SUM] != 0
    for seat in range(n):
        contender = not r[out_at(seat)] and r[hands_at(seat)] == best
        if contender and (not tiebreak or _discard_sum(r, seat) == best_sum):
            r[round_winners_at(seat)] = 1


@njit(cache=True)
def _finish_round(r):
    r[ROUND_OVER] = 1
    r[DRAWN] = 0
    n = np.int64(r[NUM_PLAYERS])
    for seat in range(n):
        if r[round_winners_at(seat)]:
            r[tokens_at(seat)] += 1
    for seat in range(n):
        if r[tokens_at(seat)] >= r[TOKENS_TO_WIN]:
            r[GAME_OVER] = 1
            r[game_winners_at(seat)] = 1


# Observation ----------------------------------------------------------------------------


@njit(cache=True)
def _one_copy(card):
    """One copy of ``card`` (1..8) in a packed count of copies per value: 8 bits per value,
    value ``v`` at bits ``8 (v - 1)`` (no value has more than 5 copies, so fields never carry)."""
    return np.uint64(1) << np.uint64(8 * (card - 1))


@njit(cache=True)
def _packed_counts(r, at):
    """The 8 counts ``r[at : at + 8]`` packed as :func:`_one_copy` packs them (LLVM merges the
    byte loads into one 8-byte load)."""
    packed = np.uint64(0)
    for v in range(8):
        packed |= np.uint64(r[at + v]) << np.uint64(8 * v)
    return packed


@njit(cache=True, inline="always")
def _put(out, at, value):
    """``out[at] = value`` with an unsigned index: a signed one makes numba add a check
    for negative indices (Python's from-the-end) to every store."""
    out[np.uint64(at)] = value


@njit(cache=True, inline="always")
def _add(out, at):
    """``out[at] += 1`` with an unsigned index (see :func:`_put`)."""
    out[np.uint64(at)] += 1


@njit(cache=True, inline="always")
def observe_into(r, observer, out):
    """Write seat ``observer``'s observation vector (as
    :func:`loveletter_env.observation.encode_observation`) into ``out`` (``OBSERVATION_SIZE``
    entries, float32 or uint8).

    Inlined into the batch loops: called there, it took 88 ns an observation instead of 76
    (2 players, in cache), the row and the record passed as arrays of several words each."""
    out[:] = 0.0
    write_observation_entries(r, observer, out)


@njit(cache=True, inline="always")
def write_observation_entries(r, observer, out):
    """The entries of :func:`observe_into` that may be nonzero, written into ``out``, whose
    entries must all be zero already.

    The CUDA step leaves the zeroing to one memset of every game's row before its launch:
    a thread zeroing its own row stores 1,382 bytes, each warp store touching 32 rows that
    lie 1,382 bytes apart, while about 40 entries are written at all."""
    n = np.int64(r[NUM_PLAYERS])
    # Copies the observer can place (in a hand, face up, by knowledge or discarded), counted
    # as they are written (packed, see _one_copy): counting them from ``out`` afterwards
    # re-reads 72 floats.
    located = np.uint64(0)

    card = np.int64(r[hands_at(observer)])
    if card:
        _add(out, OBS_HAND + card - 1)
        located += _one_copy(card)
    if observer == r[CURRENT] and r[DRAWN]:
        card = np.int64(r[DRAWN])
        _add(out, OBS_HAND + card - 1)
        _put(out, OBS_DRAWN + card - 1, 1)  # version 2 tells the card just drawn from the one kept
        located += _one_copy(card)
    for i in range(1, 1 + np.int64(r[FACE_UP])):
        card = np.int64(r[deck_at(i)])
        _add(out, OBS_FACE_UP + card - 1)
        located += _one_copy(card)

    for k in range(n):
        seat = _wrap(observer + k, n)
        sequence = OBS_DISCARDS + k * _DISCARD_BLOCK - 1
        count = np.int64(r[num_discards_at(seat)])
        # The first slots with a fixed trip count, an empty one writing its 1 to the deck
        # size (overwritten below): a loop bounded by the count mispredicted its exit once
        # per seat (2 players: 81 -> 75 ns a write in cache).
        for j in range(_FIXED_SLOTS):
            at = sequence + j * 8 + np.int64(r[discards_at(seat, j)])
            _put(out, at if j < count else OBS_DECK, 1.0)
        for j in range(_FIXED_SLOTS, count):
            _put(out, sequence + j * 8 + np.int64(r[discards_at(seat, j)]), 1.0)
        # Each value's discards, from one 8-byte word (also counted as located: every
        # discard's place is known).
        counts = _packed_counts(r, discarded_at(seat, 0))
        located += counts
        for v in range(8):
            _put(out, OBS_DISCARD_COUNTS + k * 8 + v, np.float32((counts >> np.uint64(8 * v)) & np.uint64(0xFF)))
        if k:
            card = np.int64(r[known_at(observer, seat)])
            if card:
                _put(out, OBS_KNOWN + (k - 1) * 8 + card - 1, 1.0)
                located += _one_copy(card)
            # Flags are copied, not tested: whether they are set is a coin toss to the branch
            # predictor (0/1 bytes give 0.0/1.0 floats).
            ruled = np.int64(r[ruled_out_at(seat)])
            if ruled:
                for v in range(8):
                    _put(out, OBS_RULED + (k - 1) * 8 + v, (ruled >> v) & 1)
            _put(out, OBS_SEEN + k - 1, r[seen_at(seat, observer)])
        _put(out, OBS_PRESENT + k, 1.0)
        _put(out, OBS_OUT + k, r[out_at(seat)])
        _put(out, OBS_PROTECTED + k, r[protected_at(seat)])
        _put(out, OBS_TOKENS + k, r[tokens_at(seat)])
    if not r[ROUND_OVER]:
        _put(out, OBS_TO_ACT + _wrap(np.int64(r[CURRENT]) - observer + n, n), 1.0)
    _put(out, OBS_NUM_PLAYERS + n - 2, 1.0)
    _put(out, OBS_RULES, r[RULE_DISCARD_SUM])
    _put(out, OBS_RULES + 1, r[RULE_KING_IGNORES_HANDMAID])
    _put(out, OBS_DECK, DECK_SIZE - np.int64(r[NEXT_CARD]))
    _put(out, OBS_TARGET, r[TOKENS_TO_WIN])
    # Copies whose place the observer cannot name: all, less those located above (packed
    # counts added 8 values at a time, where a loop over values and seats cost 14 ns of a
    # 90 ns write).
    for v in range(8):
        _put(out, OBS_UNSEEN + v, COPIES[v + 1] - np.int64((located >> np.uint64(8 * v)) & np.uint64(0xFF)))
    # Version 2: the card dealt (the one drawn is written with the hand) and the move record.
    card = np.int64(r[dealt_at(observer)])
    if card:
        _put(out, OBS_DEALT + card - 1, 1)
    for m in range(np.int64(r[TURN])):
        _write_move(r, m, observer, n, out, OBS_MOVES + m * OBS_MOVE_SIZE)


@njit(cache=True, inline="always")
def _write_move(r, move, observer, n, out, at):
    """One slot of the move record: move ``move`` of the log as ``observer`` knows it
    (as :func:`loveletter_env.observation.move_entries`).

    Without a branch on the move: each field that may be empty stores its flag, 1 or 0, at
    the entry of its value (an empty field's at an entry of its own no other field writes,
    the slot being zero already). Moves differ at random, so branches on them mispredict;
    without them, and inlined (no arrays passed per move), an observation at 2.3 moves
    took 128 ns instead of 151 (2 players, in cache)."""
    actor = np.int64(r[move_log_at(move, M_ACTOR)])
    card = np.int64(r[move_log_at(move, M_CARD)])
    target = np.int64(r[move_log_at(move, M_TARGET)]) - 1  # -1: no one, whose relative seat below is still 0..n-1
    chose = target >= 0
    _put(out, at + OBS_M_ACTOR + _wrap(actor - observer + n, n), 1)
    _put(out, at + OBS_M_CARD + card - 1, 1)
    _put(out, at + OBS_M_TARGET + _wrap(target - observer + n, n), chose)
    _put(out, at + OBS_M_GUESS + _card_entry(r[move_log_at(move, M_GUESS)]), r[move_log_at(move, M_GUESS)] != 0)
    # Seats gone, rotated to the observer's view (bit k: k seats after the observer): all
    # four entries written, those past the table zero, without a loop over the table size.
    gone = np.int64(r[move_log_at(move, M_OUT)])
    view = ((gone | (gone << n)) >> observer) & ((1 << n) - 1)
    for k in range(MAX_SEATS):
        _put(out, at + OBS_M_OUT + k, (view >> k) & 1)
    discarded = r[move_log_at(move, M_DISCARDED)]
    _put(out, at + OBS_M_DISCARDED + _card_entry(discarded), discarded != 0)
    # What the observer saw: the target's card (Priest, Baron, King) when it chose another
    # player, the mover's (Baron, King) when it was chosen.
    other = chose & (target != actor)
    sees_target = other & (observer == actor) & ((_SHOWS_TARGET >> card) & 1 != 0)
    sees_actor = other & (observer == target) & ((_SHOWS_ACTOR >> card) & 1 != 0)
    seen = np.int64(r[move_log_at(move, M_TARGET_CARD if sees_target else M_ACTOR_CARD)])
    _put(out, at + OBS_M_SAW + _card_entry(seen), sees_target | sees_actor)
    _put(out, at + OBS_M_DREW + _card_entry(r[move_log_at(move, M_DRAWN)]), observer == actor)
    replacement = r[move_log_at(move, M_REPLACEMENT)]
    _put(out, at + OBS_M_REPLACEMENT + _card_entry(replacement), (observer == target) & (replacement != 0))


@njit(cache=True, inline="always")
def _card_entry(card):
    """The entry of ``card`` (1..8) in a field of 8 entries; 0 (no card) shares value 8's,
    which the same field never holds at the same time."""
    return (np.int64(card) - 1) & 7


@njit(cache=True)
def observe_seat(r, observer, out, mask):
    """``observer``'s observation into ``out`` and their legal actions into ``mask``
    (all zeros unless they are to act): what one AEC ``observe`` returns, in one call."""
    observe_into(r, observer, out)
    write_mask(legal_bits(r) if observer == r[CURRENT] else np.uint64(0), mask)


@njit(cache=True)
def play_if_legal(r, action):
    """Play ``action`` (an index 0..40) if it is legal and return True; else change
    nothing and return False."""
    if not is_legal(r, action):
        return False
    play(r, action)
    return True


# Batch drivers ----------------------------------------------------------------------------


@njit(cache=True)
def deal_shuffled(r, orders, placements, first_order, second_order, placement, first_player):
    """Deal ``r`` a new round from the deck three row indices pick: the sorted deck's
    first 8 cards in the order ``orders[first_order]``, its last 8 in the order
    ``orders[second_order]``, placed at the positions ``placements[placement]`` (the
    construction of :func:`loveletter_env.batched.shuffle.shuffled_decks`). On a ladder
    rung only the cards in play move (see :func:`shuffle_in_play`)."""
    deck = r[DECK : DECK + DECK_SIZE]  # dealt in place: start_round copies a deck onto itself
    half = DECK_SIZE // 2
    first = orders[first_order]
    second = orders[second_order]
    positions = placements[placement]
    if r[FACE_UP_FIXED]:
        shuffle_in_play(deck, np.int64(r[FACE_UP]), first, second, positions)
    else:
        for j in range(half):
            deck[positions[j]] = DECK_HALVES[0, first[j]]
            deck[positions[half + j]] = DECK_HALVES[1, second[j]]
    start_round(r, deck, first_player)


@njit(cache=True)
def deal_from_key(r, orders, placements, key, first_player):
    """Deal ``r`` a new round from the deck that a key of the counter-based generator picks
    (:func:`.sampling.stream_key`: its draws ``key + GOLDEN`` to ``key + 3 * GOLDEN`` give the
    three row indices of :func:`deal_shuffled`); ``first_player`` starts. The GPU's deals."""
    num_orders = np.int64(orders.shape[0])
    first_order = pick(num_orders, key + GOLDEN)
    second_order = pick(num_orders, key + np.uint64(2) * GOLDEN)
    placement = pick(np.int64(placements.shape[0]), key + np.uint64(3) * GOLDEN)
    deal_shuffled(r, orders, placements, first_order, second_order, placement, first_player)


@njit(cache=True)
def shuffle_in_play(deck, face_up, first, second, positions):
    """Reorder a ladder rung's cards in play (deck position 0 and those after the
    ``face_up`` face-up cards) uniformly at random, in place, from the same draws as
    :func:`deal_shuffled`; the face-up cards stay where they are.

    The draws place the labels 0..15 uniformly at random over the 16 positions (the
    first 8 at ``positions[:8]`` in the order ``first``, the others at ``positions[8:]``
    in the order ``second``). Label ``l`` stands for the card at position ``l`` before
    the shuffle; the labels of the cards in play, read in the order of the positions
    they land on, are a uniformly random order of them, and the cards in play are
    dealt back in that order. Labels and cards are packed 4 bits a position in two
    words, so the shuffle needs no scratch array."""
    half = DECK_SIZE // 2
    labels = np.uint64(0)
    before = np.uint64(0)
    for j in range(half):
        labels |= np.uint64(first[j]) << np.uint64(4 * positions[j])
        labels |= np.uint64(half + second[j]) << np.uint64(4 * positions[half + j])
    for p in range(DECK_SIZE):
        before |= np.uint64(deck[p]) << np.uint64(4 * p)
    slot = 0
    for p in range(DECK_SIZE):
        label = np.int64((labels >> np.uint64(4 * p)) & np.uint64(15))
        if label == 0 or label > face_up:
            deck[0 if slot == 0 else face_up + slot] = (before >> np.uint64(4 * label)) & np.uint64(15)
            slot += 1


@njit(cache=True)
def shuffle_in_play_batch(decks, face_up, orders, placements, draws):
    """:func:`shuffle_in_play` on every row of ``decks`` [N, 16], game ``g`` from the
    draws ``draws[:, g]`` (as :func:`deal_shuffled` takes them)."""
    for g in range(decks.shape[0]):
        shuffle_in_play(decks[g], face_up, orders[draws[0, g]], orders[draws[1, g]], placements[draws[2, g]])


@njit(cache=True)
def reset_batch(records, decks, first_players, masks, legal):
    """Start a new game in every record from ``decks`` [N, 16] and ``first_players`` [N];
    write the legal masks into ``masks`` and, as bit sets, into ``legal`` (uint64 [N])."""
    for g in range(records.shape[0]):
        r = records[g]
        restart_game(r)
        start_round(r, decks[g], first_players[g])
        legal[g] = legal_bits(r)
        write_mask_bytes(legal[g], masks[g].view(np.uint8))


@njit(cache=True, inline="always")
def publish_outcome(r, g, outputs):
    """Game ``g``'s outputs of the turn just played on ``r`` into its rows of ``outputs`` (a
    :class:`TurnOutputs`), rewards zero: :func:`close_round` writes an episode's end over
    them. Inlined: the group's arrays (several words each) cost as much as the work."""
    outputs.round_over[g] = r[ROUND_OVER] != 0
    for seat in range(MAX_SEATS):
        outputs.round_winners[g, seat] = r[round_winners_at(seat)] != 0
        outputs.tokens[g, seat] = r[tokens_at(seat)]
        outputs.rewards[g, seat] = 0.0


@njit(cache=True, inline="always")
def close_round(r, g, episode_is_round, rewards):
    """For a round just ended on ``r``: whether the episode is done too. If it is, its
    rewards are written and the tokens zeroed for a new game; otherwise the next round of
    the same game is to be dealt. The CPU and the GPU deal from different sources, the
    first player of a new game with them.

    Callers test ``r[ROUND_OVER]`` themselves and call this only then: with the test inside
    it, the CPU step took 4 ns more a turn (84 against 80 ns, masks only, 8,192 games)."""
    if not episode_is_round and r[GAME_OVER] == 0:
        return False
    for seat in range(np.int64(r[NUM_PLAYERS])):
        won = r[round_winners_at(seat)] if episode_is_round else r[game_winners_at(seat)]
        rewards[g, seat] = 1.0 if won else -1.0
    restart_game(r)
    return True


@njit(cache=True, inline="always")
def publish_turn(r, g, current, legal, mask):
    """Game ``g``'s seat to act into ``current`` and its legal actions into ``legal`` (a bit
    set) and ``mask`` (its row of 41 bytes)."""
    current[g] = r[CURRENT]
    bits = legal_bits(r)
    legal[g] = bits
    write_mask_bytes(bits, mask)


@njit(cache=True)
def random_seat(u, num_players):
    """The seat ``torch``'s ``(u * num_players).long().clamp(max=3)`` picks from a uniform
    float32 ``u`` (the same float32 product, so the same seat)."""
    return min(np.int64(np.float32(u) * np.float32(num_players)), MAX_SEATS - 1)


@njit(cache=True)
def step_batch(records, actions, episode_is_round, deals, outputs, observations, observe):
    """Every game's player to act plays ``actions[g]`` (checked legal by the caller, see
    :func:`first_illegal`); rounds that end are followed at once by the next: a new game
    (tokens zeroed, the seat ``random_seat(deals.uniforms[g])`` starts) where the episode
    is done, else the next round of the same game, which the previous round's lowest-seat
    winner starts. Decks come from ``deals`` (a :class:`Deals`).

    Writes, per game, into ``outputs`` (a :class:`TurnOutputs`): ``rewards`` (+1 winners,
    -1 others at an episode's end, 0 for padding seats and otherwise), ``dones``,
    ``round_over``, ``round_winners`` and ``tokens`` of the turn just played (before any
    reset), then the new ``current`` seat, the legal ``masks`` (and the same as bit sets
    into ``legal``, the caller's private copy); and, when ``observe``, the acting seat's
    ``observations``."""
    no_sampler = np.zeros(1, np.uint64)
    _step_games(records, actions, no_sampler, False, episode_is_round, deals, outputs, observations, observe)


@njit(cache=True)
def random_step_batch(records, sampler, actions, episode_is_round, deals, outputs, observations, observe):
    """:func:`step_batch` with each game's action drawn in the same pass: uniformly from
    the legal set ``outputs.legal[g]`` with the SplitMix64 generator ``sampler`` (see
    :mod:`.sampling`), written into ``actions``. One draw per game, in game order, so the
    actions are those :func:`.sampling.sample_legal` draws from the same masks and
    generator state; drawing here skips a second pass over N masks. Every game must
    have a round in progress (as after a reset or a step)."""
    _step_games(records, actions, sampler, True, episode_is_round, deals, outputs, observations, observe)


@njit(cache=True)
def _step_games(records, actions, sampler, draw_actions, episode_is_round, deals, outputs, observations, observe):
    """The loop of :func:`step_batch` and :func:`random_step_batch` (which sets
    ``draw_actions``). One loop for both, not a per-game function: called per game, the
    groups' arrays (several machine words each) cost as much as the turn."""
    counter = sampler[0]  # in a register for the loop, as in sample_legal
    legal = outputs.legal
    mask_bytes = outputs.masks.view(np.uint8)
    draws = deals.draws
    for g in range(records.shape[0]):
        r = records[g]
        if draw_actions:
            counter += GOLDEN
            action = nth_set_bit(legal[g], pick(popcount(legal[g]), counter))
            actions[g] = action
        else:
            action = actions[g]
        play(r, action)
        publish_outcome(r, g, outputs)
        done = False
        if r[ROUND_OVER]:
            done = close_round(r, g, episode_is_round, outputs.rewards)
            first = random_seat(deals.uniforms[g], r[NUM_PLAYERS]) if done else lowest_round_winner(r)
            deal_shuffled(r, deals.orders, deals.placements, draws[0, g], draws[1, g], draws[2, g], first)
        outputs.dones[g] = done
        publish_turn(r, g, outputs.current, legal, mask_bytes[g])
    sampler[0] = counter
    # Observations in a second pass, not game by game inside the first: at 8,192 games (a
    # 21 MB buffer) this saved about 30 ns a game; interleaving a 2.6 KB row of stores with
    # each turn's branchy work was slower, and so were chunks of 16 to 1,024 games.
    if observe:
        for g in range(records.shape[0]):
            observe_into(records[g], np.int64(records[g, CURRENT]), observations[g])


@njit(cache=True)
def first_illegal(legal, actions):
    """The first game whose action (any integer) is not in its bit set ``legal[g]``
    (uint64 [N], as the kernels last wrote them), else -1."""
    for g in range(legal.shape[0]):
        a = actions[g]
        if a < 0 or a >= NUM_ACTIONS or (legal[g] >> np.uint64(a)) & np.uint64(1) == 0:
            return g
    return -1


@njit(cache=True)
def observe_batch(records, seats, out):
    """``out[g]`` = game ``g`` seen from ``seats[g]``."""
    for g in range(records.shape[0]):
        observe_into(records[g], seats[g], out[g])

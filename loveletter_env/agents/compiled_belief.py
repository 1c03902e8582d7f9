"""The card-counting bot (:mod:`~loveletter_env.agents.belief`) compiled over core records,
and the ISMCTS deal loop (sampled deals, then playouts) that runs on it.

A search playout asks the card-counting bot for every move of every player until the
round ends. In Python that is a view (:func:`~loveletter_env.agents.ismcts.seat_view`),
a dictionary of probabilities per opponent and a score per legal action, each turn; here
it is a few loops over the game's core record (:mod:`loveletter_env.core`), played with
the core's rules (:func:`~loveletter_env.core.kernels.play`).

The moves are the Python bot's, draw for draw: every score is computed with the same
floating-point operations in the same order as :func:`~loveletter_env.agents.belief.score_action`
(so ties and the best action come out the same), and ties are broken by a copy of
``random.Random(seed)`` drawn the way ``Random.choice`` draws (CPython's Mersenne Twister
in :mod:`loveletter_env.core.mt19937`). Deals are sampled as :func:`~loveletter_env.agents.ismcts.sample_deal`
samples them, from a copy of the search agent's own generator that goes back to it
afterwards. ``tests/agents/test_compiled_belief.py`` compares all of it with the Python reference.
The value model's weights are read from :mod:`.belief` at each call (an argument, not a
compiled-in constant), so the on-disk compile cache cannot hold stale ones. The kernels
called from here (the core's rules, its Mersenne Twister) are compiled into this
module's cache entries, and numba keys those on this file alone: after changing those
kernels, touch this file so that it compiles afresh (the tests catch a stale cache that
changes a move).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from ..cards import DECK_SIZE
from ..core.kernels import legal_bits, play
from ..core.layout import (
    CARD_OF_ACTION,
    COPIES,
    CURRENT,
    DECK,
    DISCARDED,
    DISCARDS,
    DRAWN,
    FACE_UP,
    GUESS_OF_ACTION,
    HANDS,
    KNOWN,
    M_ACTOR,
    M_CARD,
    M_GUESS,
    M_OUT,
    M_TARGET,
    MAX_SEATS,
    MOVE_BYTES,
    MOVE_LOG,
    NEXT_CARD,
    NUM_ACTIONS,
    NUM_DISCARDS,
    NUM_PLAYERS,
    OFFSET_OF_ACTION,
    OUT,
    ROUND_OVER,
    ROUND_WINNERS,
    RULED_OUT,
    SEEN,
    TURN,
)
from ..core.mt19937 import MT_WORDS, genrand, randbelow
from . import belief

GUARD, PRIEST, BARON, HANDMAID, PRINCE, KING, COUNTESS, PRINCESS = range(1, 9)

#: The value model's weights, in the order the kernels read them (see :func:`model_weights`).
_SURE_LOSS, _GUARD_OPTION, _BARON_OPTION, _PRINCE_OPTION, _SMALL_OPTION = range(5)
_SHOWDOWN_HORIZON, _BARON_THREAT, _MAX_OPTION, _RISK_SCALE, _KEEP_HIGHER = range(5, 10)


def model_weights() -> np.ndarray:
    """float64 [10]: the card-counting bot's weights (:mod:`.belief`), as the kernels take them."""
    return np.array(
        [
            belief.SURE_LOSS,
            belief.GUARD_OPTION,
            belief.BARON_OPTION,
            belief.PRINCE_OPTION,
            belief.SMALL_OPTION,
            belief.SHOWDOWN_HORIZON,
            belief.BARON_THREAT,
            belief.MAX_OPTION,
            belief.RISK_SCALE,
            belief.KEEP_HIGHER,
        ],
        dtype=np.float64,
    )


# Seeding: random.Random(seed) for a seed 0 <= seed < 2**64 --------------------------------


@njit(cache=True)
def seed_generator(seed, mt):
    """Write into ``mt`` (uint32 [625]) the state of ``random.Random(seed)`` (CPython's
    ``init_by_array`` over the seed's 32-bit words, low word first)."""
    mask = np.uint64(0xFFFFFFFF)
    low = np.uint64(seed) & mask
    high = np.uint64(seed) >> np.uint64(32)
    key = np.array([low, high], dtype=np.uint64)
    length = 2 if high else 1
    state = np.zeros(MT_WORDS, np.uint64)
    state[0] = np.uint64(19650218)
    for i in range(1, MT_WORDS):
        prev = state[i - 1]
        state[i] = (np.uint64(1812433253) * (prev ^ (prev >> np.uint64(30))) + np.uint64(i)) & mask
    i, j = 1, 0
    for _ in range(max(MT_WORDS, length)):
        prev = state[i - 1]
        state[i] = ((state[i] ^ ((prev ^ (prev >> np.uint64(30))) * np.uint64(1664525))) + key[j] + np.uint64(j)) & mask
        i += 1
        j += 1
        if i >= MT_WORDS:
            state[0] = state[MT_WORDS - 1]
            i = 1
        if j >= length:
            j = 0
    for _ in range(MT_WORDS - 1):
        prev = state[i - 1]
        state[i] = ((state[i] ^ ((prev ^ (prev >> np.uint64(30))) * np.uint64(1566083941))) - np.uint64(i)) & mask
        i += 1
        if i >= MT_WORDS:
            state[0] = state[MT_WORDS - 1]
            i = 1
    state[0] = np.uint64(0x80000000)
    for i in range(MT_WORDS):
        mt[i] = state[i]
    mt[MT_WORDS] = MT_WORDS


# The seat's view (ismcts.seat_view's fields, read from the record) -------------------------


@njit(cache=True)
def _play_likelihood(played, kept, w):
    """``belief.play_likelihood``."""
    if played == kept:
        return 1.0
    if kept == COUNTESS and (played in (KING, PRINCE)):
        return 0.0
    if played == COUNTESS:
        return 1.0 if kept in (KING, PRINCE) else 0.3
    if kept == PRINCESS:
        return 1.0
    return w[_KEEP_HIGHER] if kept > played else 1.0 - w[_KEEP_HIGHER]


@njit(cache=True)
def read_view(r, seat, unseen, opponents):
    """What ``seat`` (the player to act) sees of the game in ``r``, as the belief bot reads it:
    fills ``unseen`` (int64 [9], copies of each value whose place ``seat`` cannot name) and
    ``opponents`` (int64 [4], the seat offsets still in the round); returns how many those are."""
    n = np.int64(r[NUM_PLAYERS])
    a = np.int64(r[HANDS + seat])
    b = np.int64(r[DRAWN])
    for v in range(1, 9):
        unseen[v] = COPIES[v]
        for p in range(n):
            unseen[v] -= r[DISCARDED + p * 8 + v - 1]
    unseen[0] = 0
    unseen[a] -= 1
    unseen[b] -= 1
    for i in range(1, 1 + np.int64(r[FACE_UP])):  # 3 at 2 players, more on a ladder rung
        unseen[r[DECK + i]] -= 1
    for k in range(1, n):
        p = (seat + k) % n
        known = r[KNOWN + seat * MAX_SEATS + p]
        if known:
            unseen[known] -= 1
    count = np.int64(0)
    for k in range(1, n):
        p = (seat + k) % n
        if r[OUT + p]:
            continue
        opponents[count] = k
        count += 1
    return count


@njit(cache=True)
def record_rulings(r, ruled):
    """``base.move_rulings`` of every seat (not offset) into ``ruled`` (int64 [4], bit ``v``
    for value ``v``), from the move log and the ruled-out table."""
    n = np.int64(r[NUM_PLAYERS])
    for p in range(MAX_SEATS):
        ruled[p] = 0
    for t in range(np.int64(r[TURN])):
        base = MOVE_LOG + t * MOVE_BYTES
        actor = np.int64(r[base + M_ACTOR])
        card = np.int64(r[base + M_CARD])
        target = np.int64(r[base + M_TARGET]) - 1
        out = np.int64(r[base + M_OUT])
        # knowledge.ruled_out_after_play: a ruled-out value played shows the old card kept.
        if not (ruled[actor] >> card) & 1:
            ruled[actor] = 0
        if target >= 0:
            guess = np.int64(r[base + M_GUESS])
            if card == GUARD and guess and not (out >> target) & 1:
                ruled[target] |= np.int64(1) << guess
            elif card == PRINCE:
                ruled[target] = 0
            elif card == KING:
                ruled[actor], ruled[target] = ruled[target], ruled[actor]
        for p in range(n):
            if (out >> p) & 1:
                ruled[p] = 0
    for p in range(n):
        ruled[p] |= np.int64(r[RULED_OUT + p]) << 1


@njit(cache=True)
def _hand_posterior(r, seat, k, unseen, w, ruled, dist):
    """``belief.hand_posterior`` of seat offset ``k`` (in the round) into ``dist`` [9],
    with the rulings ``ruled`` (bit ``v`` for value ``v``, from :func:`record_rulings`)."""
    n = np.int64(r[NUM_PLAYERS])
    p = (seat + k) % n
    for v in range(9):
        dist[v] = 0.0
    known = np.int64(r[KNOWN + seat * MAX_SEATS + p])
    entries = np.int64(0)
    if known:
        dist[known] = 1.0
        entries = 1
    else:
        ruled_p = ruled[p]
        total = 0
        for v in range(1, 9):
            if unseen[v] and not (ruled_p >> v) & 1:
                total += unseen[v]
                entries += 1
        strict = entries > 0
        if not strict:  # only an inconsistent view rules out every unseen value
            for v in range(1, 9):
                if unseen[v]:
                    total += unseen[v]
                    entries += 1
        for v in range(1, 9):
            if unseen[v] and (not strict or not (ruled_p >> v) & 1):
                dist[v] = unseen[v] / total
    played_count = np.int64(r[NUM_DISCARDS + p])
    if entries < 2 or played_count == 0:
        return
    played = np.int64(r[DISCARDS + p * DECK_SIZE + played_count - 1])
    weights = np.zeros(9)
    total_weight = 0.0
    for v in range(1, 9):
        if dist[v] != 0.0:
            weights[v] = dist[v] * _play_likelihood(played, v, w)
            total_weight += weights[v]
    if total_weight:
        for v in range(1, 9):
            dist[v] = weights[v] / total_weight if weights[v] else 0.0


# The value model (belief._Situation and belief.score_action, operation for operation) ------


@njit(cache=True)
def _beats(card, dist):
    below = 0.0
    for v in range(1, card):
        if dist[v] != 0.0:
            below += dist[v]
    return below + 0.5 * dist[card]


@njit(cache=True)
def _showdown(card, count, beliefs):
    win = 1.0
    for i in range(count):
        win *= _beats(card, beliefs[i])
    return win


@njit(cache=True)
def _holds_chance(dist, card, unseen_share):
    return 1.0 - (1.0 - dist[card]) * (1.0 - unseen_share[card])


@njit(cache=True)
def _guess_chance(card, unseen, ruled):
    if card == GUARD:
        return 0.0
    ruled &= ~(np.int64(1) << card)  # only a sampled deal can rule out the card we hold
    best = np.int64(0)
    for v in range(2, 9):
        if not (ruled >> v) & 1:
            c = unseen[v] + (1 if v == card else 0)
            best = max(best, c)
    mine = unseen[card] + 1
    if mine == best:
        ties = np.int64(0)
        for v in range(2, 9):
            if not (ruled >> v) & 1 and unseen[v] + (1 if v == card else 0) == best:
                ties += 1
        return 1.0 / ties
    return 0.1 * mine / best


@njit(cache=True)
def _risk(card, exposed, protected, ruled, count, beliefs, unseen, unseen_share, deck_size, w):
    if protected or deck_size == 0:
        return 0.0
    survive = 1.0
    for i in range(count):
        dist = beliefs[i]
        hit = 0.0 if card == GUARD else exposed + (1.0 - exposed) * _guess_chance(card, unseen, ruled)
        threat = _holds_chance(dist, np.int64(GUARD), unseen_share) * hit
        threat += _holds_chance(dist, np.int64(BARON), unseen_share) * (1.0 - _beats(card, dist)) * w[_BARON_THREAT]
        if card == PRINCESS:
            threat += _holds_chance(dist, np.int64(PRINCE), unseen_share) * 0.5
        survive *= 1.0 - min(1.0, threat)
    return 1.0 - survive


@njit(cache=True)
def _option_value(card, count, beliefs, elim_gain, w):
    if card == GUARD:
        best = 0.0
        for i in range(count):
            for v in range(2, 9):
                best = max(best, beliefs[i, v])
        return min(w[_MAX_OPTION], w[_GUARD_OPTION] * best) * elim_gain
    if card == BARON:
        edge = 0.0
        for i in range(count):
            edge = _beats(np.int64(BARON), beliefs[i]) if i == 0 else max(edge, _beats(np.int64(BARON), beliefs[i]))
        return w[_BARON_OPTION] * elim_gain * max(0.0, edge - 0.5)
    if card == PRINCE:
        top = 0.0
        for i in range(count):
            top = beliefs[i, PRINCESS] if i == 0 else max(top, beliefs[i, PRINCESS])
        return w[_PRINCE_OPTION] * elim_gain * top
    if card in (PRIEST, HANDMAID):
        return w[_SMALL_OPTION]
    return 0.0


@njit(cache=True)
def _after(
    card, exposed, protected, ruled, count, beliefs, unseen, unseen_share, deck_size, share, elim_gain, horizon, w
):
    """``_Situation.after``: the value of going on holding ``card``."""
    if deck_size == 0:
        return _showdown(card, count, beliefs) - share
    value = horizon * (_showdown(card, count, beliefs) - share) + _option_value(card, count, beliefs, elim_gain, w)
    risk = _risk(card, exposed, protected, ruled, count, beliefs, unseen, unseen_share, deck_size, w)
    return value - w[_RISK_SCALE] * risk * (share + value)


@njit(cache=True)
def score_action(action, a, b, old_card, any_seen, own_ruled, count, opponents, beliefs, unseen, deck_size, w):
    """``belief.score_action`` for the player holding ``a <= b``; ``beliefs[i]`` is the
    distribution of ``opponents[i]``'s hand (``count`` of them), ``unseen`` the unseen counts,
    ``own_ruled`` the rulings on the card held before the draw."""
    share = 1.0 / (count + 1)
    elim_gain = 1.0 / count - share
    total = 0
    for v in range(1, 9):
        total += unseen[v]
    unseen_share = np.zeros(9)
    if total:
        for v in range(1, 9):
            if unseen[v]:
                unseen_share[v] = unseen[v] / total
    horizon = 1.0 / (1.0 + deck_size / w[_SHOWDOWN_HORIZON]) if w[_SHOWDOWN_HORIZON] else 0.0
    card = CARD_OF_ACTION[action]
    offset = OFFSET_OF_ACTION[action]
    guess = GUESS_OF_ACTION[action]
    kept = b if card == a else a
    ruled = own_ruled if (own_ruled >> card) & 1 else np.int64(0)  # knowledge.ruled_out_after_play
    exposed = 0.0
    if any_seen:
        exposed = 1.0 if old_card == kept else (0.5 if not old_card and kept != card else 0.0)
    targeted = offset > 0
    dist = beliefs[0]
    if targeted:
        for i in range(count):
            if opponents[i] == offset:
                dist = beliefs[i]
    alone = 1.0 if count == 1 else 0.0

    # Every score is ``now + scale * after(kept)``, or a sum of ``after`` over the cards a
    # Prince (on ourselves) or a King may leave us: one call site each keeps compiling quick.
    # Where the reference returns ``x + after`` or ``after``, ``scale`` is 1.0 and ``now`` 0.0:
    # the same floating-point results.
    now = 0.0
    scale = 1.0
    protected = card == HANDMAID
    if card == PRINCESS or (card == PRINCE and offset == 0 and kept == PRINCESS):
        return w[_SURE_LOSS]
    if (card == PRINCE and offset == 0) or (card == KING and targeted):
        spread = unseen_share if card == PRINCE else dist
        exposed_then = 0.0 if card == PRINCE else 1.0  # after a King trade they know our card
        value = 0.0
        for new in range(1, 9):
            if spread[new] != 0.0:
                value += spread[new] * _after(
                    new, exposed_then, protected, 0, count, beliefs, unseen, unseen_share, deck_size, share, elim_gain,
                    horizon, w,
                )  # fmt: skip
        return value
    if card == GUARD and targeted:
        hit = dist[guess]
        now = hit * elim_gain
        scale = 1.0 - hit * alone
    elif card == BARON and targeted:
        win = 0.0
        lose = 0.0
        for v in range(1, 9):
            if dist[v] != 0.0:
                if v < kept:
                    win += dist[v]
                elif v > kept:
                    lose += dist[v]
        tie = 1.0 - win - lose
        now = win * elim_gain - lose * share
        scale = tie + win * (1.0 - alone)
        exposed = max(exposed, tie)  # after a tie the target knows our card
    elif card == PRIEST and targeted:
        top = 0.0
        for v in range(1, 9):
            top = max(top, dist[v])
        use = 0.8 if kept == GUARD else 0.3 if kept in (BARON, PRINCE) else 0.15
        now = use * (1.0 - top) * elim_gain
    elif card == PRINCE:
        hit = dist[PRINCESS]
        mean = 0.0
        fresh = 0.0
        for v in range(1, 9):
            if dist[v] != 0.0:
                mean += v * dist[v]
            if unseen_share[v] != 0.0:
                fresh += v * unseen_share[v]
        now = hit * elim_gain + horizon * max(0.0, mean - fresh) / 16.0
        scale = 1.0 - hit * alone
    later = _after(
        kept, exposed, protected, ruled, count, beliefs, unseen, unseen_share, deck_size, share, elim_gain, horizon, w
    )
    return now + scale * later


@njit(cache=True)
def record_scores(r, legal, count_legal, old_card, w, scores):
    """``belief.action_scores`` of the player to act in ``r`` (seen from their own seat, as
    ``ismcts.seat_view`` builds it) for ``legal[:count_legal]`` into ``scores``."""
    seat = np.int64(r[CURRENT])
    n = np.int64(r[NUM_PLAYERS])
    unseen = np.zeros(9, np.int64)
    opponents = np.zeros(MAX_SEATS, np.int64)
    beliefs = np.zeros((MAX_SEATS, 9))
    count = read_view(r, seat, unseen, opponents)
    ruled = np.zeros(MAX_SEATS, np.int64)
    record_rulings(r, ruled)
    for i in range(count):
        _hand_posterior(r, seat, opponents[i], unseen, w, ruled, beliefs[i])
    seen = np.int64(0)
    for k in range(1, n):
        seen += r[SEEN + ((seat + k) % n) * MAX_SEATS + seat]
    any_seen = seen > 0
    a = np.int64(r[HANDS + seat])
    b = np.int64(r[DRAWN])
    if b < a:
        a, b = b, a
    deck_size = DECK_SIZE - np.int64(r[NEXT_CARD])
    for i in range(count_legal):
        scores[i] = score_action(
            legal[i], a, b, old_card, any_seen, ruled[seat], count, opponents, beliefs, unseen, deck_size, w
        )


@njit(cache=True)
def belief_move(r, mt, w, legal, scores):
    """``ismcts.model_action``: the move of the player to act in ``r``, the belief bot's
    (ties broken by ``mt``, as ``rng.choice``); a forced move draws nothing."""
    bits = legal_bits(r)
    count = np.int64(0)
    for action in range(NUM_ACTIONS):
        if (bits >> np.uint64(action)) & np.uint64(1):
            legal[count] = action
            count += 1
    if count == 1:
        return legal[0]
    record_scores(r, legal, count, np.int64(0), w, scores)
    top = scores[0]
    for i in range(1, count):
        top = max(top, scores[i])
    best = np.int64(0)
    for i in range(count):
        if scores[i] >= top - 1e-9:
            legal[best] = legal[i]
            best += 1
    return legal[randbelow(mt, best)]


@njit(cache=True)
def playout(r, first, mt, w):
    """Play ``first`` in ``r``, then the belief bot for everyone to the end of the round;
    seat 0's share of the round win (``ISMCTSAgent`` at ``tree_depth=1``)."""
    legal = np.zeros(NUM_ACTIONS, np.int64)
    scores = np.zeros(NUM_ACTIONS)
    play(r, first)
    while not r[ROUND_OVER]:
        play(r, belief_move(r, mt, w, legal, scores))
    if not r[ROUND_WINNERS]:
        return 0.0
    winners = np.int64(0)
    for seat in range(MAX_SEATS):
        winners += r[ROUND_WINNERS + seat]
    return 1.0 / winners


# The deal loop (ismcts.sample_deal, then the candidates' playouts) -------------------------

#: ``ismcts._SAMPLING_TRIES``: rejection-sampling tries before ruled-out values are ignored.
SAMPLING_TRIES = 64


@njit(cache=True)
def _random(mt):
    """``random.Random.random()``: 53 bits from two draws."""
    a = genrand(mt) >> 5
    b = genrand(mt) >> 6
    return (a * 67108864.0 + b) * (1.0 / 9007199254740992.0)


@njit(cache=True)
def _getrandbits64(mt):
    """``random.Random.getrandbits(64)``: the first draw is the low word."""
    low = np.uint64(genrand(mt))
    return low | (np.uint64(genrand(mt)) << np.uint64(32))


@njit(cache=True)
def _copy(source, target):
    """``target[:len(source)] = source`` as a loop: numba compiles an array-to-array slice
    assignment with a shape-mismatch error whose message formatting took about 2.5 s of the
    first compile."""
    for i in range(source.shape[0]):
        target[i] = source[i]


@njit(cache=True)
def search_deals(record, deals, pool, hidden, banned, weighted, likelihoods, face_up, mt, candidates, w, totals):
    """The deal loop of ``ISMCTSAgent.search`` at ``tree_depth=1``, draw for draw with the
    agent's generator ``mt``: ``deals`` times, sample the hidden cards as
    ``ismcts.sample_deal`` does, write them into ``record`` (the other hands at offsets
    ``hidden`` and the deck), then add to ``totals[i]`` the reward of playing ``candidates[i]``
    and playing out (:func:`playout`) on a copy of the deal, every candidate with a generator
    seeded ``random.Random(getrandbits(64))`` by the next draw (common random numbers).

    ``pool`` holds the unseen values in ascending order (each deal shuffles a copy). Per
    seat offset, ``banned`` is the ruled-out mask (bit ``v - 1``) and ``weighted`` says whether
    ``likelihoods[k, v]`` weight the values (else all weigh 1). Returns -1, or the number of
    cards left when a deal cannot be completed (the reference then raises).
    """
    size = pool.shape[0]
    rest = np.zeros(size, np.int64)
    weights = np.zeros(size)
    deck = record[DECK : DECK + DECK_SIZE]
    deck_size = DECK_SIZE - np.int64(record[NEXT_CARD])
    shuffled = pool.copy()
    start = np.zeros(MT_WORDS + 1, np.uint32)
    playout_mt = start.copy()
    for _ in range(deals):
        _copy(pool, shuffled)  # each deal shuffles a fresh, sorted list
        left = size
        for attempt in range(SAMPLING_TRIES + 1):
            for i in range(size - 1, 0, -1):  # random.shuffle
                j = randbelow(mt, i + 1)
                shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
            _copy(shuffled, rest)
            left = size
            ok = True
            for k in hidden:
                total = 0.0
                for i in range(left):
                    v = rest[i]
                    if attempt < SAMPLING_TRIES and (banned[k] >> (v - 1)) & 1:
                        weights[i] = 0.0
                    elif weighted[k]:
                        weights[i] = likelihoods[k, v]
                    else:
                        weights[i] = 1.0
                    total += weights[i]
                if total <= 0.0 and attempt == SAMPLING_TRIES:  # count cards only, as sample_deal does
                    for i in range(left):
                        weights[i] = 1.0
                    total = float(left)
                if total <= 0.0:
                    ok = False
                    break
                pick = _random(mt) * total
                i = 0
                while pick >= weights[i] and i < left - 1:
                    pick -= weights[i]
                    i += 1
                record[HANDS + k] = rest[i]
                for j in range(i, left - 1):
                    rest[j] = rest[j + 1]
                left -= 1
            if ok:
                break
        if left != deck_size + 1:
            return left
        seed_generator(_getrandbits64(mt), start)
        # The deck: set-aside card, face-up cards, the cards already gone (sorted), the draw pile.
        gone = COPIES.copy()
        for i in range(left):
            gone[rest[i]] -= 1
        for card in face_up:
            gone[card] -= 1
        deck[0] = rest[0]
        at = 1
        for card in face_up:
            deck[at] = card
            at += 1
        for v in range(1, 9):
            for _ in range(gone[v]):
                deck[at] = v
                at += 1
        for i in range(1, left):
            deck[at] = rest[i]
            at += 1
        # Common random numbers: every candidate on its own copy of the deal, with the same seed.
        for c in range(candidates.shape[0]):
            _copy(start, playout_mt)
            totals[c] += playout(record.copy(), candidates[c], playout_mt, w)
    return -1

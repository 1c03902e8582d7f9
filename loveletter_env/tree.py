"""The whole game tree of one round of a ladder rung, walked on the compiled core.

A rung (:data:`loveletter_env.rules.LADDER`) is small enough to enumerate, at its own
table size (:attr:`~loveletter_env.rules.Rules.rung_players`, 2 to 4). One round is:

* a **chance node** at the root, the deal: every distinct order of the cards in play
  (:func:`deals`), all equally likely; the face-up cards lie sorted between the
  set-aside card and the hands, and seat ``first_player`` (0 unless told) starts;
* **decision nodes**, one per history at which a player is to act, whose children are
  the legal actions (:func:`loveletter_env.core.kernels.legal_bits`), ascending;
* **terminal nodes**, where the round is over; :func:`round_score` scores them.

A deal fixes the whole order of the cards in play, so two histories that differ only in
the order of cards nobody has drawn yet are different histories of the same
information set.

The **information set** of the player to act is its seat and its observation
(:func:`~loveletter_env.core.kernels.observe_into`, the env's observation vector). The
observation is the player's information state with perfect recall (every move of the
round as announced, its own cards as received, what it was shown), so nothing else needs
remembering, and this is the game as played at a table. :func:`observation_key` writes an
observation exactly and compactly (its nonzero entries as ``index * 32 + value``; the
``tokens`` entries are left out, as the tree is one round), so information sets are keyed
exactly: by the seat and this key.

Walking a tree with this module's pieces::

    roots, probability = root_records(rules)
    r = roots[i].copy()                     # a history is a core record; copy to branch
    kernels.legal_bits(r)                   # legal actions, bit a for action a
    kernels.play(r, a)                      # play one (legal) action in place
    is_terminal(r), acting_seat(r)          # the round is over / the seat to act
    kernels.observe_into(r, seat, out)      # that seat's observation (float32 [1382])
    round_score(r, seat)                    # 1, 1/k (k winners) or 0 at a terminal node

All but :func:`root_records` (plain Python, run once) are numba functions, callable from
compiled code as well as from Python.
:func:`build_tree` walks the tree once and keeps it as flat arrays (:class:`GameTree`),
which a solver sweeps many times without replaying a card (the passes of
:mod:`training.exploitability.cfr`); :func:`count_tree` reports the sizes of the same walk, and
:func:`expected_score` evaluates a strategy on it.
"""

from __future__ import annotations

import argparse
import functools
import math
import sys
import time
from collections import Counter, namedtuple
from collections.abc import Callable
from dataclasses import dataclass
from itertools import permutations

import numpy as np
from numba import njit

from .actions import NUM_ACTIONS
from .core import kernels, new_records
from .core.layout import CURRENT, MAX_SEATS, NUM_PLAYERS, RECORD_SIZE, ROUND_OVER, ROUND_WINNERS
from .core.sampling import popcount
from .interruptible import run_interruptibly
from .observation import OBSERVATION_SIZE, SLICES
from .retired_flags import retire_flag
from .rules import LADDER, Rules, resolve_rules
from .validation import is_int

#: Entries of an observation key are ``index * KEY_VALUE_RANGE + value``.
KEY_VALUE_RANGE = 32
_TOKENS_START = SLICES["tokens"].start
_TOKENS_STOP = SLICES["tokens"].stop
#: Records the walker holds at once (one per pending history, at most 41 per level).
_STACK = 4096


class TreeError(ValueError):
    """Rules whose tree cannot be walked (not a ladder rung), or a walk that found a tree
    it cannot keep; the message says which."""


# Tree pieces (compiled) --------------------------------------------------------------


@njit(cache=True)
def is_terminal(r):
    """Whether the round in record ``r`` is over."""
    return r[ROUND_OVER] != 0


@njit(cache=True)
def acting_seat(r):
    """The seat to act in record ``r`` (meaningful while the round is not over)."""
    return np.int64(r[CURRENT])


@njit(cache=True)
def round_score(r, seat):
    """``seat``'s score of the finished round in ``r``: 1 for a win alone, 1/k for a win
    shared by k players (a full tie at the showdown), 0 for a loss."""
    winners = 0
    for s in range(np.int64(r[NUM_PLAYERS])):
        winners += r[ROUND_WINNERS + s] != 0
    if r[ROUND_WINNERS + seat] == 0 or winners == 0:
        return 0.0
    return 1.0 / winners


# Information-set keys ---------------------------------------------------------------


@njit(cache=True)
def observation_key_into(observation, out):
    """Write the key of ``observation`` (float32 [OBSERVATION_SIZE]) into ``out`` (uint16,
    as long) and return its length; ``-1 - i`` when entry ``i`` is not a whole number
    in 0..31 (no env observation has one)."""
    n = 0
    for i in range(observation.shape[0]):
        if _TOKENS_START <= i < _TOKENS_STOP:
            continue
        v = observation[i]
        if v != 0:
            whole = np.int64(v)
            if whole != v or whole < 0 or whole >= KEY_VALUE_RANGE:
                return -1 - i
            out[n] = i * KEY_VALUE_RANGE + whole
            n += 1
    return n


def observation_key(observation: np.ndarray) -> bytes:
    """The exact key of one observation vector (see the module docstring), as bytes."""
    vector = np.asarray(observation, dtype=np.float32).reshape(-1)
    if vector.shape[0] != OBSERVATION_SIZE:
        raise ValueError(f"an observation has {OBSERVATION_SIZE} entries, got {vector.shape[0]}")
    out = np.empty(OBSERVATION_SIZE, dtype=np.uint16)
    n = observation_key_into(vector, out)
    if n < 0:
        raise ValueError(f"observation entry {-1 - n} is {vector[-1 - n]!r}: not an env observation")
    return out[:n].tobytes()


@njit(cache=True)
def _key_into(entries, out):
    """Write the observation of key ``entries`` (int64) into ``out`` (float32 [OBSERVATION_SIZE],
    zeros); return -1, or the position of the first entry no key holds (its index out of range,
    in ``tokens`` or not after the previous one, or its value 0)."""
    previous = -1
    for j in range(entries.shape[0]):
        index = entries[j] // KEY_VALUE_RANGE
        value = entries[j] % KEY_VALUE_RANGE
        if entries[j] < 0 or index >= OBSERVATION_SIZE or index <= previous or value == 0:
            return j
        if _TOKENS_START <= index < _TOKENS_STOP:
            return j
        out[index] = value
        previous = index
    return -1


def key_to_observation(entries: np.ndarray | bytes) -> np.ndarray:
    """The observation vector (float32 [OBSERVATION_SIZE], tokens zero) a key was made from:
    its entries as an integer array (:meth:`GameTree.key`) or as the bytes of
    :func:`observation_key`. A ``ValueError`` for an entry no key holds (an index out of
    range, in ``tokens`` or not ascending, a value of 0), which would otherwise give another
    observation silently (numpy takes a negative index from the end)."""
    if isinstance(entries, bytes):
        if len(entries) % 2:  # np.frombuffer would only say the buffer size is not a multiple of 2
            raise ValueError(f"not an observation key: {len(entries)} byte(s), and each entry of a key is 2 bytes")
        entries = np.frombuffer(entries, dtype=np.uint16)
    array = np.asarray(entries)
    if array.ndim != 1 or (array.size and array.dtype.kind not in "iu"):
        raise ValueError(f"a key is a 1-d array of integers, got shape {array.shape} and dtype {array.dtype}")
    vector = np.zeros(OBSERVATION_SIZE, dtype=np.float32)
    bad = _key_into(array.astype(np.int64), vector)
    if bad >= 0:
        raise ValueError(
            f"not an observation key: entry {bad} is {int(array[bad])}, and a key's entries are "
            f"index * {KEY_VALUE_RANGE} + value, indices ascending in 0..{OBSERVATION_SIZE - 1} outside tokens, "
            f"values 1..{KEY_VALUE_RANGE - 1}"
        )
    return vector


# Deals and rungs --------------------------------------------------------------------


def rung_rules(rules: str | Rules) -> Rules:
    """``rules`` as a :class:`Rules` object if they are a ladder rung, else a :class:`TreeError`."""
    resolved = resolve_rules(rules)
    if not resolved.is_rung:
        raise TreeError(
            f"rules {resolved.name!r} are not a ladder rung: the tree of a full game is far too large "
            f"to enumerate; use one of {', '.join(r.name for r in LADDER)}"
        )
    return resolved


def deals(rules: str | Rules) -> np.ndarray:
    """uint8 [D, 16]: every distinct deck of the rung ``rules``, one per order of its cards
    in play (repeated copies counted once), face-up cards sorted; each is equally likely."""
    return _deal_decks(rung_rules(rules)).copy()


@functools.cache
def _deal_decks(rules: Rules) -> np.ndarray:
    orders = sorted(set(permutations(rules.in_play or ())))
    decks = np.array([rules.deck_from_in_play(order) for order in orders], dtype=np.uint8)
    decks.flags.writeable = False
    return decks


def num_deals(rules: str | Rules) -> int:
    """How many distinct deals :func:`deals` lists: k! over the product of repeated copies' factorials."""
    in_play = rung_rules(rules).in_play or ()
    return math.factorial(len(in_play)) // math.prod(math.factorial(c) for c in Counter(in_play).values())


def root_records(rules: str | Rules, first_player: int = 0) -> tuple[np.ndarray, float]:
    """(uint8 [D, RECORD_SIZE], probability): the records of every deal of :func:`deals`,
    at the rung's table size, dealt with ``first_player`` to act, and the probability of each (1 / D)."""
    rules = rung_rules(rules)
    seats = range(rules.rung_players)
    # is_int: a whole float is in the range too, and the compiled deal fails on it with a typing error.
    if not is_int(first_player) or first_player not in seats:
        raise ValueError(f"first_player must be a seat of {rules.name!r} (0..{seats[-1]}), got {first_player!r}")
    decks = _deal_decks(rules)
    records = new_records([rules.rung_players] * len(decks), rules)
    _start_rounds(records, decks, int(first_player))
    return records, 1.0 / len(decks)


@njit(cache=True)
def _start_rounds(records, decks, first_player):
    for g in range(records.shape[0]):
        kernels.start_round(records[g], decks[g], first_player)


# The walker ---------------------------------------------------------------------------
#
# numba has no list of arrays of one dtype that is cheap to append to, so each array of
# the walk doubles by hand (_grow) and the walk returns them with their lengths.

#: What the walker returns: the tree depth first (children consecutive, after their
#: parent), ``num_nodes`` and ``num_infosets`` long, and the information sets.
_Walked = namedtuple(
    "_Walked",
    "node_info node_child node_depth num_nodes infoset_player infoset_legal key_offsets key_entries num_infosets",
)


@njit(cache=True)
def _grow(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def _hash(seat, key, n):
    """A hash of an information set's seat and observation key (for the walker's table)."""
    h = np.uint64(1469598103934665603) ^ (np.uint64(seat + 1) * np.uint64(0x9E3779B97F4A7C15))
    for i in range(n):
        h = (h ^ np.uint64(key[i])) * np.uint64(1099511628211)
    h ^= h >> np.uint64(31)
    return h


@njit(cache=True, nogil=True)
def _walk(roots, stop, done):
    """Walk every deal of ``roots`` depth first and keep the tree (see :data:`_Walked`):
    at a decision node ``node_info`` is its information set, at a terminal node
    ``-1 - w`` with ``w`` the round's winners as a bit set of seats (see :func:`terminal_score`).
    ``done[0]`` counts the deals walked; the walk returns early, with arrays of no use,
    once ``stop[0]`` is set (checked at each deal, see :mod:`loveletter_env.interruptible`)."""
    num_deals = roots.shape[0]
    num_nodes = num_deals
    node_info = np.empty(max(num_nodes, 1 << 16), np.int32)
    node_child = np.empty(node_info.shape[0], np.int32)
    node_depth = np.empty(node_info.shape[0], np.int8)

    # Information sets, found again through an open-addressing table of their hashes.
    num_isets = 0
    iset_player = np.empty(1 << 12, np.int8)
    iset_depth = np.empty(1 << 12, np.int8)
    iset_legal = np.empty(1 << 12, np.uint64)
    iset_hash = np.empty(1 << 12, np.uint64)
    key_offsets = np.zeros(1 << 12, np.int64)
    key_entries = np.empty(1 << 16, np.uint16)
    table = np.full(1 << 12, -1, np.int32)
    obs = np.zeros(OBSERVATION_SIZE, np.float32)
    key = np.zeros(OBSERVATION_SIZE, np.uint16)

    # Pending histories: their records, node ids, and the action that led to each.
    stack_rec = np.empty((_STACK, RECORD_SIZE), np.uint8)
    stack_node = np.empty(_STACK, np.int64)
    stack_act = np.empty(_STACK, np.int64)

    for d in range(num_deals):
        if stop[0]:
            break
        stack_rec[0, :] = roots[d]
        stack_node[0] = d
        node_depth[d] = 0
        sp = 1
        while sp > 0:
            sp -= 1
            rec = stack_rec[sp]
            n = stack_node[sp]
            if rec[ROUND_OVER]:
                winners = 0
                for s in range(MAX_SEATS):
                    if rec[ROUND_WINNERS + s]:
                        winners |= 1 << s
                node_info[n] = -1 - winners
                node_child[n] = -1
                continue
            p = np.int64(rec[CURRENT])
            kernels.observe_into(rec, p, obs)
            length = observation_key_into(obs, key)
            bits = kernels.legal_bits(rec)
            h = _hash(p, key, length)
            mask = table.shape[0] - 1
            slot = np.int64(h & np.uint64(mask))
            found = -1
            while table[slot] >= 0:
                i = table[slot]
                if iset_hash[i] == h and iset_player[i] == p:
                    lo = key_offsets[i]
                    if key_offsets[i + 1] - lo == length and (key_entries[lo : lo + length] == key[:length]).all():
                        found = i
                        break
                slot = (slot + 1) & mask
            if found < 0:
                found = num_isets
                num_isets += 1
                iset_player = _grow(iset_player, num_isets)
                iset_depth = _grow(iset_depth, num_isets)
                iset_legal = _grow(iset_legal, num_isets)
                iset_hash = _grow(iset_hash, num_isets)
                key_offsets = _grow(key_offsets, num_isets + 1)
                start = key_offsets[found]
                key_entries = _grow(key_entries, start + length)
                key_entries[start : start + length] = key[:length]
                key_offsets[found + 1] = start + length
                iset_player[found] = p
                iset_depth[found] = node_depth[n]
                iset_legal[found] = bits
                iset_hash[found] = h
                table[slot] = found
                if 2 * num_isets > table.shape[0]:
                    table = np.full(2 * table.shape[0], -1, np.int32)
                    mask = table.shape[0] - 1
                    for i in range(num_isets):
                        s = np.int64(iset_hash[i] & np.uint64(mask))
                        while table[s] >= 0:
                            s = (s + 1) & mask
                        table[s] = i
            elif iset_legal[found] != bits or iset_depth[found] != node_depth[n]:
                raise TreeError("one information set showed two sets of legal actions, or lay at two depths")
            k = popcount(bits)
            if sp + k > _STACK or num_nodes + k >= 2**31 - 1:
                raise TreeError("the tree is too large for the walker (over 2**31 nodes, or deeper than its stack)")
            first = num_nodes
            num_nodes += k
            node_info = _grow(node_info, num_nodes)
            node_child = _grow(node_child, num_nodes)
            node_depth = _grow(node_depth, num_nodes)
            node_info[n] = found
            node_child[n] = first
            # Children: one per legal action, ascending, consecutive; the first ends on top.
            c = 0
            for a in range(NUM_ACTIONS - 1, -1, -1):
                if (bits >> np.uint64(a)) & np.uint64(1):
                    c += 1
                    t = sp + k - c
                    if t != sp:  # slot sp holds the parent's record until every copy is made
                        stack_rec[t, :] = rec
                    child = first + (k - c)
                    stack_node[t] = child
                    node_depth[child] = node_depth[n] + 1
                    stack_act[t] = a
            for t in range(sp, sp + k):
                kernels.play(stack_rec[t], stack_act[t])
            sp += k
        done[0] = d + 1
    return _Walked(node_info, node_child, node_depth, num_nodes,
                   iset_player, iset_legal,
                   key_offsets, key_entries, num_isets)  # fmt: skip


@njit(cache=True, nogil=True)
def _breadth_first(node_info, node_child, node_depth, num_nodes, num_roots, iset_legal, stop):
    """Renumber the depth-first tree level by level (see :class:`GameTree`); return the
    new ``node_info``, ``node_child`` and the first node of each level (plus the end).
    Returns early, with arrays of no use, once ``stop[0]`` is set."""
    order = np.empty(num_nodes, np.int32)
    new_index = np.empty(num_nodes, np.int32)
    for r in range(num_roots):
        order[r] = r
    tail = num_roots
    for head in range(num_nodes):
        if head & 0xFFFFF == 0 and stop[0]:
            return np.empty(0, np.int32), np.empty(0, np.int32), np.zeros(1, np.int64)
        n = order[head]
        new_index[n] = head
        i = node_info[n]
        if i >= 0:
            for j in range(popcount(iset_legal[i])):
                order[tail] = node_child[n] + j
                tail += 1
    info = np.empty(num_nodes, np.int32)
    child = np.empty(num_nodes, np.int32)
    max_depth = 0
    for j in range(num_nodes):
        n = order[j]
        info[j] = node_info[n]
        child[j] = new_index[node_child[n]] if node_info[n] >= 0 else -1
        max_depth = max(max_depth, np.int64(node_depth[n]))
    level_start = np.zeros(max_depth + 2, np.int64)
    for j in range(num_nodes):
        level_start[np.int64(node_depth[order[j]]) + 1] = j + 1
    for d in range(1, max_depth + 2):
        level_start[d] = max(level_start[d], level_start[d - 1])
    return info, child, level_start


@njit(cache=True)
def _action_lists(iset_legal, num_isets):
    offsets = np.zeros(num_isets + 1, np.int64)
    for i in range(num_isets):
        offsets[i + 1] = offsets[i] + popcount(iset_legal[i])
    actions = np.empty(offsets[num_isets], np.int8)
    for i in range(num_isets):
        at = offsets[i]
        for a in range(NUM_ACTIONS):
            if (iset_legal[i] >> np.uint64(a)) & np.uint64(1):
                actions[at] = a
                at += 1
    return offsets, actions


# The tree ---------------------------------------------------------------------------


@dataclass
class GameTree:
    """The whole tree of one round of a rung as flat arrays (see :func:`build_tree`).

    Nodes are numbered level by level (breadth first): a node's children are consecutive
    and come after it, one per legal action in ascending order, and every node of one
    level comes before the next level. A pass from the last node to the first sees
    children before parents, one level at a time; the deals' first decisions are nodes
    ``0 .. num_deals - 1`` (the chance node's outcomes, each with probability
    ``1 / num_deals``). Every node of one information set lies on one level.

    Attributes:
        rules: the rung (played by ``rules.rung_players``: :attr:`num_players`).
        first_player: the seat that acts first in every deal.
        num_deals: how many deals (root nodes).
        node_info: int32 [N], the information set of a decision node (``>= 0``), or at a
            terminal node ``-1 - w``, ``w`` being the round's winners as a bit set of seats
            (bit ``s`` for seat ``s``; :func:`terminal_score` scores it).
        node_child: int32 [N], a decision node's first child (-1 at a terminal node).
        level_start: int64 [L + 1], the first node of each level, then ``N``.
        infoset_player: int8 [I], the seat that acts at each information set.
        infoset_node: int64 [I], the first node of each information set.
        key_offsets: int64 [I + 1], key_entries: uint16, the observation key
            (:func:`observation_key`) of set ``i``: ``key_entries[key_offsets[i]:key_offsets[i + 1]]``.
        action_offsets: int64 [I + 1], actions: int8, the legal actions of set ``i``:
            ``actions[action_offsets[i]:action_offsets[i + 1]]``, ascending (child order).
            Per-action arrays (regrets, strategies) use the same offsets.
        build_seconds: how long :func:`build_tree` took.
    """

    rules: Rules
    first_player: int
    num_deals: int
    node_info: np.ndarray
    node_child: np.ndarray
    level_start: np.ndarray
    infoset_player: np.ndarray
    infoset_node: np.ndarray
    key_offsets: np.ndarray
    key_entries: np.ndarray
    action_offsets: np.ndarray
    actions: np.ndarray
    build_seconds: float

    @property
    def num_players(self) -> int:
        return self.rules.rung_players

    @property
    def num_nodes(self) -> int:
        return int(self.node_info.shape[0])

    @property
    def num_infosets(self) -> int:
        return int(self.infoset_player.shape[0])

    @property
    def num_terminals(self) -> int:
        return int(np.count_nonzero(self.node_info < 0))

    @property
    def action_player(self) -> np.ndarray:
        """The player who chooses each action (per-action, as strategies are laid out)."""
        return np.repeat(self.infoset_player, np.diff(self.action_offsets))

    @property
    def action_infoset(self) -> np.ndarray:
        """The information set of each action (per-action, as strategies are laid out)."""
        return np.repeat(np.arange(self.num_infosets), np.diff(self.action_offsets))

    def key(self, infoset: int) -> np.ndarray:
        """The observation key of ``infoset`` (:func:`key_to_observation` gives the observation)."""
        return self.key_entries[self.key_offsets[infoset] : self.key_offsets[infoset + 1]]

    def infoset_actions(self, infoset: int) -> list[int]:
        """The legal actions at information set ``infoset``, ascending (child order)."""
        return self.actions[self.action_offsets[infoset] : self.action_offsets[infoset + 1]].tolist()

    def uniform_strategy(self) -> np.ndarray:
        """float64 per action: every legal action equally likely."""
        counts = np.diff(self.action_offsets)
        return np.repeat(1.0 / counts, counts)

    def parents(self) -> np.ndarray:
        """int64 [N]: each node's parent (-1 at a deal)."""
        parent = np.full(self.num_nodes, -1, np.int64)
        decisions = np.flatnonzero(self.node_info >= 0)
        widths = np.diff(self.action_offsets)[self.node_info[decisions]]
        children = np.repeat(self.node_child[decisions].astype(np.int64), widths)
        children += np.arange(len(children)) - np.repeat(np.cumsum(widths) - widths, widths)
        parent[children] = np.repeat(decisions, widths)
        return parent


def build_tree(
    rules: str | Rules, first_player: int = 0, progress: Callable[[int, int], None] | None = None
) -> GameTree:
    """The whole tree of one round of the rung ``rules`` (at its table size) as a :class:`GameTree`.

    About 10 bytes a node: ``mini8`` (4.8 million nodes) takes about 50 MB, ``mini9`` (87
    million) about 2.4 GB (more while building). ``progress(done, total)`` is called now
    and then with the deals walked.

    Raises:
        TreeError: rules that are not a rung, or a tree the walker cannot keep.
        KeyboardInterrupt: Ctrl-C, within moments, nothing kept (see :mod:`loveletter_env.interruptible`).
        MemoryError: not enough memory for the tree.
    """
    resolved = rung_rules(rules)
    roots, _ = root_records(resolved, first_player)
    started = time.perf_counter()
    stop = np.zeros(1, np.uint8)
    done = np.zeros(1, np.int64)
    poll = None if progress is None else lambda: progress(int(done[0]), len(roots))
    walked: _Walked = run_interruptibly(_walk, roots, stop, done, stop=stop, poll=poll)
    n = walked.num_infosets
    info, child, level_start = run_interruptibly(
        _breadth_first,
        walked.node_info,
        walked.node_child,
        walked.node_depth,
        walked.num_nodes,
        len(roots),
        walked.infoset_legal,
        stop,
        stop=stop,
    )
    action_offsets, actions = _action_lists(walked.infoset_legal, n)
    decisions = np.flatnonzero(info >= 0)
    _, first = np.unique(info[decisions], return_index=True)
    key_offsets = walked.key_offsets[: n + 1].copy()
    tree = GameTree(
        rules=resolved,
        first_player=int(first_player),
        num_deals=len(roots),
        node_info=info,
        node_child=child,
        level_start=level_start,
        infoset_player=walked.infoset_player[:n].copy(),
        infoset_node=decisions[first],
        key_offsets=key_offsets,
        key_entries=walked.key_entries[: key_offsets[n]].copy(),
        action_offsets=action_offsets,
        actions=actions,
        build_seconds=time.perf_counter() - started,
    )
    if progress is not None:
        progress(len(roots), len(roots))
    return tree


def record_of(tree: GameTree, node: int, parents: np.ndarray | None = None) -> np.ndarray:
    """The core record of history ``node`` of ``tree``: its deal, replayed along the actions
    that lead to the node (``parents``: :meth:`GameTree.parents`, to reuse across calls)."""
    if not is_int(node) or not 0 <= node < tree.num_nodes:
        raise ValueError(f"node must be an integer in 0..{tree.num_nodes - 1}, got {node!r}")
    node = int(node)
    parent = tree.parents() if parents is None else parents
    path = []
    while parent[node] >= 0:
        up = int(parent[node])
        infoset = int(tree.node_info[up])
        path.append(int(tree.actions[tree.action_offsets[infoset] + node - tree.node_child[up]]))
        node = up
    record = new_records([tree.num_players], tree.rules)[0]
    kernels.start_round(record, _deal_decks(tree.rules)[node], tree.first_player)
    for action in reversed(path):
        kernels.play(record, action)
    return record


# Counting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeSize:
    """The size of the tree of one round of a rung (see the module docstring).

    ``histories`` counts every node below the deal (decision and terminal nodes);
    ``infosets`` counts information sets of the player to act, every seat together;
    ``infosets_by_seat`` has one count per seat of the rung's table.
    """

    rules: str
    first_player: int
    deals: int
    decision_nodes: int
    terminal_nodes: int
    infosets_by_seat: tuple[int, ...]

    @property
    def histories(self) -> int:
        return self.decision_nodes + self.terminal_nodes

    @property
    def infosets(self) -> int:
        return sum(self.infosets_by_seat)


def count_tree(
    rules: str | Rules, first_player: int = 0, progress: Callable[[int, int], None] | None = None
) -> TreeSize:
    """Walk the tree of one round of the rung ``rules`` (:func:`build_tree`) and count its
    histories and information sets (see :class:`TreeSize`)."""
    tree = build_tree(rules, first_player, progress)
    terminals = tree.num_terminals
    by_seat = np.bincount(tree.infoset_player, minlength=tree.num_players)
    return TreeSize(
        rules=tree.rules.name,
        first_player=first_player,
        deals=tree.num_deals,
        decision_nodes=tree.num_nodes - terminals,
        terminal_nodes=terminals,
        infosets_by_seat=tuple(int(c) for c in by_seat),
    )


# Expected score -----------------------------------------------------------------------


@njit(cache=True)
def terminal_score(info, player):
    """Player ``player``'s score at a terminal node whose ``node_info`` is ``info`` (``< 0``,
    ``-1 - w`` with ``w`` the winners' bit set): 1 / (number of winners) for a winner, 0 else.
    A round's scores sum to 1."""
    winners = np.int64(-1 - info)
    if not (winners >> player) & 1:
        return 0.0
    return 1.0 / popcount(np.uint64(winners))


@njit(cache=True, inline="always")
def mixed_value(node_child, offsets, strategy, work, n, i):
    """The value of node ``n`` (information set ``i``) when its player follows ``strategy``:
    the children's values ``work`` weighted by the set's action probabilities."""
    c = node_child[n]
    lo = offsets[i]
    v = 0.0
    for j in range(offsets[i + 1] - lo):
        v += strategy[lo + j] * work[c + j]
    return v


@njit(cache=True)
def expected_score_pass(node_info, node_child, offsets, strategy, num_roots, work, player):
    """Player ``player``'s expected score when every player follows ``strategy`` (``work``:
    one float per node, overwritten)."""
    for n in range(node_info.shape[0] - 1, -1, -1):
        i = node_info[n]
        work[n] = terminal_score(i, player) if i < 0 else mixed_value(node_child, offsets, strategy, work, n, i)
    total = 0.0
    for r in range(num_roots):
        total += work[r]
    return total / num_roots


def checked_layout(tree: GameTree, values: np.ndarray) -> np.ndarray:
    """``values`` as float64, one number per action of ``tree`` (laid out as
    :attr:`GameTree.actions`): a strategy, or one seat's part of a profile.

    The passes run without bounds checks, so an array of another length (another rung's, a
    slice) would be read past its end into figures that are no score; it is refused.

    Raises:
        ValueError: ``values`` is not one number per action of ``tree``.
    """
    array = np.ascontiguousarray(values, dtype=np.float64)
    if array.shape != tree.actions.shape:
        raise ValueError(
            f"a strategy on the tree of {tree.rules.name!r} is one probability per action "
            f"({tree.actions.shape[0]}), got an array of shape {array.shape}"
        )
    return array


def checked_strategy(tree: GameTree, strategy: np.ndarray) -> np.ndarray:
    """``strategy`` as the compiled passes over ``tree`` read it: float64, one probability per
    action (:func:`checked_layout`), each information set's summing to 1.

    Numbers that are not probabilities weight the children so that a score or a best response
    comes out outside 0..1 (or NaN) without a word; they are refused.

    Raises:
        ValueError: ``strategy`` is not one number per action of ``tree``, or some information
            set's numbers are not finite, non-negative and summing to 1 within 1e-5.
    """
    array = checked_layout(tree, strategy)
    sums = np.add.reduceat(array, tree.action_offsets[:-1])  # a tree has an action at every set
    if not (np.isfinite(array).all() and (array >= 0).all() and np.allclose(sums, 1.0, rtol=0, atol=1e-5)):
        worst = int(np.argmax(np.abs(np.nan_to_num(sums, nan=np.inf) - 1.0)))
        raise ValueError(
            "strategy must give each information set probabilities (finite, non-negative, summing to 1 within 1e-5); "
            f"set {worst} sums to {float(sums[worst])!r}, and the smallest entry is {float(array.min())!r}"
        )
    return array


def checked_seat(tree: GameTree, seat: object) -> int:
    """``seat`` if it is a seat of ``tree``'s rung; a ``ValueError`` naming the rung's seats
    otherwise (the passes read a winner's bit per seat without bounds checks: seat 2 of a
    2-player rung would score 0)."""
    if not is_int(seat) or seat not in range(tree.num_players):
        raise ValueError(f"seat must be a seat of {tree.rules.name!r} (0..{tree.num_players - 1}), got {seat!r}")
    return int(seat)  # type: ignore[call-overload]


def expected_score(tree: GameTree, strategy: np.ndarray, seat: int = 0) -> float:
    """Seat ``seat``'s expected score (player 0 by default) when every player follows
    ``strategy`` (float64 per action, laid out as :attr:`GameTree.actions`;
    :meth:`GameTree.uniform_strategy` is one)."""
    seat = checked_seat(tree, seat)
    strategy = checked_strategy(tree, strategy)
    work = np.empty(tree.num_nodes)
    args = (tree.node_info, tree.node_child, tree.action_offsets, strategy, tree.num_deals, work, seat)
    return float(expected_score_pass(*args))


def main(argv: list[str] | None = None) -> None:
    """``python -m loveletter_env.tree [RUNG ...]``: print the tree size of each rung."""
    from tqdm import tqdm

    parser = argparse.ArgumentParser(
        prog="python -m loveletter_env.tree",
        description="Count the histories and information sets of one round of ladder rungs exactly.",
    )
    parser.add_argument("rungs", nargs="*", default=["mini6", "mini7", "mini8"], help="default: mini6 mini7 mini8")
    parser.add_argument(
        "--first-player", type=int, default=0, choices=(0, 1, 2, 3), help="seat that starts (default 0)"
    )
    retire_flag(parser, "--observations-only", nargs=0)
    args = parser.parse_args(argv)
    # Every rung and the seat are checked before the first walk, which may take minutes.
    for rung in args.rungs:
        try:
            players = rung_rules(rung).rung_players
        except ValueError as error:  # an unknown name (resolve_rules) or not a rung (TreeError)
            parser.error(str(error))
        if args.first_player >= players:
            parser.error(
                f"--first-player {args.first_player} is not a seat of {rung}, played by {players} players "
                f"(0..{players - 1})"
            )
    rung = None
    try:
        count_tree("mini6")  # compiles the walk first, so the times below are the walks alone
        print("| rung | deals | decision nodes | terminal nodes | histories | information sets | seconds |")
        print("| --- | --- | --- | --- | --- | --- | --- |")
        for rung in args.rungs:
            began = time.perf_counter()
            with tqdm(total=num_deals(rung), desc=rung, unit="deal", leave=False, dynamic_ncols=True) as bar:
                size = count_tree(rung, args.first_player, progress=lambda done, _: bar.update(done - bar.n))
            seconds = time.perf_counter() - began
            print(
                f"| {size.rules} | {size.deals:,} | {size.decision_nodes:,} | {size.terminal_nodes:,} "
                f"| {size.histories:,} | {size.infosets:,} | {seconds:.1f} |",
                flush=True,
            )
    except KeyboardInterrupt:
        # A sentence, not a traceback; 130 (128 + SIGINT) is what a shell reports for Ctrl-C.
        said = (
            "before the first rung; nothing was counted"
            if rung is None
            else f"while counting {rung}; the rows above are complete"
        )
        print(f"\ninterrupted {said}", file=sys.stderr)
        raise SystemExit(130) from None
    except MemoryError:
        parser.exit(
            1, f"{parser.prog}: error: out of memory for the tree of {rung or 'mini6'}; the rows above are complete\n"
        )


if __name__ == "__main__":
    main()

"""The whole game tree of one round of a ladder rung, walked on the compiled core.

A rung (:data:`loveletter_env.rules.LADDER`) is small enough to enumerate. One round is:

* a **chance node** at the root, the deal: every distinct order of the cards in play
  (:func:`deals`), all equally likely; the face-up cards lie sorted between the
  set-aside card and the hands, and seat ``first_player`` (0 unless told) starts;
* **decision nodes**, one per history at which a player is to act, whose children are
  the legal actions (:func:`loveletter_env.core.kernels.legal_bits`);
* **terminal nodes**, where the round is over; :func:`round_score` scores them.

A deal fixes the whole order of the cards in play, so two histories that differ only in
the order of cards nobody has drawn yet are different histories of the same
information set.

The **information set** of the player to act is the perfect-recall sequence of what that
player has been shown: their observation (:func:`~loveletter_env.core.kernels.observe_into`,
the env's observation vector) at each of their decision points so far, their own actions,
and their observation now. The observation shows every move announced this round (card,
target, Guard guess, as the printed rules announce them), so this is the game as played at
a table. :func:`infoset_key` and :func:`after_action` fold that sequence into a 64-bit
key, one hash step per event; :func:`count_tree` counts distinct
keys (a hash collision would merge two sets: at the sizes here, under 1e-5 likely).

Walking a tree with this module's pieces (what a solver does)::

    roots, probability = root_records(rules)
    r = roots[i].copy()                     # a history is a core record; copy to branch
    kernels.legal_bits(r)                   # legal actions, bit a for action a
    kernels.play(r, a)                      # play one (legal) action in place
    is_terminal(r), acting_seat(r)          # the round is over / the seat to act
    kernels.observe_into(r, seat, out)      # that seat's observation (float32 [646])
    round_score(r, seat)                    # 1, 0.5 or 0 at a terminal node

All of these are numba functions, callable from compiled code as well as from Python.
:func:`build_tree` walks the tree once and keeps it as flat arrays (:class:`GameTree`:
children, seats, information sets, terminal scores), which a solver can sweep many times
without replaying a card; :func:`expected_score` evaluates a strategy on it.
"""

from __future__ import annotations

import argparse
import functools
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from itertools import permutations

import numpy as np
from numba import njit

from .cards import DECK_SIZE
from .core import kernels, new_records
from .core.layout import CURRENT, NUM_PLAYERS, OBS_SIZE, RECORD_SIZE, ROUND_OVER, ROUND_WINNERS
from .core.sampling import _mix, nth_set_bit
from .rules import Rules, resolve_rules

#: The deepest a history can go: one turn per card drawn, at most 16.
MAX_DEPTH = DECK_SIZE + 1
_SEAT_SALT = np.uint64(0x5EA7)


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


@njit(cache=True)
def combine(key, value):
    """One step of a keyed hash: ``key`` (a running hash) followed by ``value``; the order
    matters (``combine(a, b) != combine(b, a)``)."""
    return _mix(_mix(key) ^ np.uint64(value))


@njit(cache=True)
def observation_hash(obs):
    """A 64-bit hash of an observation vector (float32 [646]): its non-zero entries,
    each with its position."""
    words = obs.view(np.uint32)
    h = np.uint64(0x243F6A8885A308D3)
    for i in range(words.shape[0]):
        if words[i]:
            h = combine(h, (np.uint64(i) << np.uint64(32)) | np.uint64(words[i]))
    return h


@njit(cache=True)
def first_key(seat):
    """The perfect-recall key of ``seat`` before its first decision."""
    return _mix(_SEAT_SALT + np.uint64(seat))


@njit(cache=True)
def infoset_key(recall, obs):
    """The information-set key of the player to act: ``recall`` (their key after their
    last action, or :func:`first_key`) followed by their observation ``obs`` now."""
    return combine(recall, observation_hash(obs))


@njit(cache=True)
def after_action(key, action):
    """The actor's recall key after playing ``action`` at the set whose key is ``key``."""
    return combine(key, np.uint64(action) + np.uint64(1 << 40))


# Deals ------------------------------------------------------------------------------


def deals(rules: str | Rules) -> np.ndarray:
    """uint8 [D, 16]: every distinct deck of the rung ``rules``, one per order of its cards
    in play (repeated copies counted once), face-up cards sorted; each is equally likely."""
    return _deal_decks(_rung(rules)).copy()


@functools.cache
def _deal_decks(rules: Rules) -> np.ndarray:
    orders = sorted(set(permutations(rules.in_play or ())))
    decks = np.array([rules.deck_from_in_play(order) for order in orders], dtype=np.uint8)
    decks.flags.writeable = False
    return decks


def num_deals(rules: str | Rules) -> int:
    """How many distinct deals :func:`deals` lists: k! over the product of repeated copies' factorials."""
    in_play = _rung(rules).in_play or ()
    return math.factorial(len(in_play)) // math.prod(math.factorial(c) for c in Counter(in_play).values())


def root_records(rules: str | Rules, first_player: int = 0) -> tuple[np.ndarray, float]:
    """(uint8 [D, RECORD_SIZE], probability): the records of every deal of :func:`deals`,
    dealt with ``first_player`` to act, and the probability of each (1 / D)."""
    rules = _rung(rules)
    if first_player not in (0, 1):
        raise ValueError(f"first_player must be 0 or 1, got {first_player!r}")
    decks = _deal_decks(rules)
    records = new_records([2] * len(decks), rules)
    _start_rounds(records, decks, first_player)
    return records, 1.0 / len(decks)


@njit(cache=True)
def _start_rounds(records, decks, first_player):
    for g in range(records.shape[0]):
        kernels.start_round(records[g], decks[g], first_player)


def _rung(rules: str | Rules) -> Rules:
    resolved = resolve_rules(rules)
    if not resolved.is_rung:
        raise ValueError(
            f"rules {resolved.name!r} are not a ladder rung: the tree of a full game is far too large "
            "to enumerate; use mini6, mini7, mini8 or mini9"
        )
    return resolved


# Counting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeSize:
    """The size of the tree of one round of a rung (see the module docstring).

    ``histories`` counts every node below the deal (decision and terminal nodes);
    ``infosets`` counts information sets of the player to act, both seats together.
    """

    rules: str
    first_player: int
    deals: int
    decision_nodes: int
    terminal_nodes: int
    infosets_by_seat: tuple[int, int]

    @property
    def histories(self) -> int:
        return self.decision_nodes + self.terminal_nodes

    @property
    def infosets(self) -> int:
        return sum(self.infosets_by_seat)


@njit(cache=True)
def _descend(stack, recall, node_key, depth, action):
    """Play ``action`` from the record at ``depth`` into the one at ``depth + 1``, and carry
    each seat's recall down: the actor's key after its own action, the other seat's as it
    was (its next observation shows the action)."""
    r = stack[depth]
    seat = np.int64(r[CURRENT])
    child = stack[depth + 1]
    child[:] = r
    kernels.play(child, action)
    recall[depth + 1, 0] = recall[depth, 0]
    recall[depth + 1, 1] = recall[depth, 1]
    recall[depth + 1, seat] = after_action(node_key[depth], action)


@njit(cache=True)
def _walk(roots, start, keys, counts):
    """Depth-first walk of the trees of deals ``start..``: adds decision and terminal nodes
    to ``counts[0]`` and ``counts[1]`` and writes each decision's information-set key into
    ``keys[seat]`` (``counts[2 + seat]`` keys so far). Stops before a deal whose keys would
    not fit, and returns the index of the first deal not walked."""
    stack = np.empty((MAX_DEPTH, RECORD_SIZE), np.uint8)
    pending = np.zeros(MAX_DEPTH, np.uint64)  # legal actions not yet tried, per depth
    recall = np.empty((MAX_DEPTH, 2), np.uint64)  # each seat's recall key, per depth
    node_key = np.zeros(MAX_DEPTH, np.uint64)
    obs = np.empty(OBS_SIZE, np.float32)
    capacity = keys.shape[1]
    g = start
    while g < roots.shape[0]:
        saved = counts.copy()
        stack[0] = roots[g]
        recall[0, 0] = first_key(0)
        recall[0, 1] = first_key(1)
        depth = 0
        fresh = True  # the node at ``depth`` is visited for the first time
        overflow = False
        while depth >= 0:
            r = stack[depth]
            if fresh:
                fresh = False
                if r[ROUND_OVER]:
                    counts[1] += 1
                    depth -= 1
                    continue
                seat = np.int64(r[CURRENT])
                n = counts[2 + seat]
                if n >= capacity:
                    overflow = True
                    break
                kernels.observe_into(r, seat, obs)
                key = infoset_key(recall[depth, seat], obs)
                keys[seat, n] = key
                counts[2 + seat] = n + 1
                counts[0] += 1
                node_key[depth] = key
                pending[depth] = kernels.legal_bits(r)
            bits = pending[depth]
            if bits == 0:
                depth -= 1
                continue
            action = nth_set_bit(bits, 0)
            pending[depth] = bits & (bits - np.uint64(1))
            _descend(stack, recall, node_key, depth, action)
            depth += 1
            fresh = True
        if overflow:
            counts[:] = saved
            return g
        g += 1
    return g


def count_tree(
    rules: str | Rules,
    first_player: int = 0,
    buffer: int = 1 << 22,
    progress: Callable[[int, int], None] | None = None,
) -> TreeSize:
    """Enumerate the tree of one round of the rung ``rules`` and count its histories and
    information sets exactly (see :class:`TreeSize`). ``progress(done, total)`` is called
    as deals are walked; ``buffer`` keys are held before they are merged."""
    rules = _rung(rules)
    roots, _ = root_records(rules, first_player)
    keys = np.empty((2, buffer), np.uint64)
    counts = np.zeros(4, np.int64)
    distinct: list[np.ndarray] = [np.empty(0, np.uint64), np.empty(0, np.uint64)]
    decisions = terminals = 0
    start = 0
    while start < len(roots):
        counts[:] = 0
        end = _walk(roots, start, keys, counts)
        if end == start:
            raise ValueError(f"one deal of {rules.name} has more than {buffer} decisions: raise buffer")
        decisions += int(counts[0])
        terminals += int(counts[1])
        for seat in range(2):
            distinct[seat] = np.union1d(distinct[seat], keys[seat, : counts[2 + seat]])
        start = end
        if progress is not None:
            progress(start, len(roots))
    return TreeSize(
        rules=rules.name,
        first_player=first_player,
        deals=len(roots),
        decision_nodes=decisions,
        terminal_nodes=terminals,
        infosets_by_seat=(len(distinct[0]), len(distinct[1])),
    )


@dataclass(frozen=True)
class GameTree:
    """The whole tree of one round of a rung as flat arrays (see :func:`build_tree`).

    Nodes ``0 .. deals - 1`` are the first decisions of the deals (the chance node's
    outcomes, each with probability ``1 / deals``). Every node's children are a contiguous block of ids,
    all larger than its own, one per legal action in ascending action order: sweeping ids
    upwards visits parents before children (reach probabilities), downwards children
    before parents (values).

    Attributes:
        rules: the rung.
        first_player: the seat that acts first in every deal.
        deals: how many deals (root nodes).
        parent: int64 [N], -1 at a deal.
        action: int8 [N], the action that led to the node (-1 at a deal).
        first_child: int64 [N], the first child's id (0 at a terminal node).
        num_children: int8 [N], legal actions at a decision node, 0 at a terminal node.
        seat: int8 [N], the seat to act, -1 at a terminal node.
        infoset: int64 [N], the information set of a decision node, -1 at a terminal node.
        score: float32 [N], player 0's score at a terminal node (player 1 scores
            ``1 - score``), 0 elsewhere.
        infoset_seat: int8 [I], the seat that acts at each information set.
        infoset_legal: uint64 [I], its legal actions as a bit set (bit ``a`` for action ``a``):
            child ``k`` of each of its nodes plays the ``k``-th set bit.
        infoset_key: uint64 [I], its key (:func:`infoset_key`), sorted ascending.
        infoset_node: int64 [I], one of its nodes (:func:`record_of` gives that history's
            record, :func:`~loveletter_env.core.kernels.observe_into` the acting seat's
            observation, the same at every node of the set).
    """

    rules: Rules
    first_player: int
    deals: int
    parent: np.ndarray
    action: np.ndarray
    first_child: np.ndarray
    num_children: np.ndarray
    seat: np.ndarray
    infoset: np.ndarray
    score: np.ndarray
    infoset_seat: np.ndarray
    infoset_legal: np.ndarray
    infoset_key: np.ndarray
    infoset_node: np.ndarray

    @property
    def num_nodes(self) -> int:
        return len(self.parent)

    @property
    def num_infosets(self) -> int:
        return len(self.infoset_seat)

    def infoset_actions(self, infoset: int) -> list[int]:
        """The legal actions at information set ``infoset``, ascending (child order)."""
        bits = int(self.infoset_legal[infoset])
        return [a for a in range(64) if bits >> a & 1]


@njit(cache=True)
def _size_of_trees(roots):
    """Nodes in the trees of all ``roots`` (deals included), walked without observations."""
    stack = np.empty((MAX_DEPTH, RECORD_SIZE), np.uint8)
    pending = np.zeros(MAX_DEPTH, np.uint64)
    nodes = 0
    for g in range(roots.shape[0]):
        stack[0] = roots[g]
        nodes += 1
        pending[0] = kernels.legal_bits(stack[0])
        depth = 0
        while depth >= 0:
            bits = pending[depth]
            if bits == 0:
                depth -= 1
                continue
            action = nth_set_bit(bits, 0)
            pending[depth] = bits & (bits - np.uint64(1))
            child = stack[depth + 1]
            child[:] = stack[depth]
            kernels.play(child, action)
            nodes += 1
            depth += 1
            pending[depth] = kernels.legal_bits(child)  # 0 once the round is over
    return nodes


@njit(cache=True)
def _fill_tree(roots, parent, action, first_child, num_children, seat, score, keys, legal):
    """Walk every deal depth first, giving each expanded node's children the next block of
    ids, and write the per-node arrays of :class:`GameTree` (``keys``: each decision's
    information-set key; ``legal``: its legal actions)."""
    stack = np.empty((MAX_DEPTH, RECORD_SIZE), np.uint8)
    pending = np.zeros(MAX_DEPTH, np.uint64)
    cursor = np.zeros(MAX_DEPTH, np.int64)  # id of the next child to visit, per depth
    node_of = np.zeros(MAX_DEPTH, np.int64)
    recall = np.empty((MAX_DEPTH, 2), np.uint64)
    node_key = np.zeros(MAX_DEPTH, np.uint64)
    obs = np.empty(OBS_SIZE, np.float32)
    next_id = roots.shape[0]
    for g in range(roots.shape[0]):
        parent[g] = -1
        action[g] = -1
        stack[0] = roots[g]
        node_of[0] = g
        recall[0, 0] = first_key(0)
        recall[0, 1] = first_key(1)
        depth = 0
        fresh = True
        while depth >= 0:
            r = stack[depth]
            node = node_of[depth]
            if fresh:
                fresh = False
                if r[ROUND_OVER]:
                    seat[node] = -1
                    score[node] = round_score(r, 0)
                    depth -= 1
                    continue
                s = np.int64(r[CURRENT])
                seat[node] = s
                kernels.observe_into(r, s, obs)
                key = infoset_key(recall[depth, s], obs)
                keys[node] = key
                node_key[depth] = key
                bits = kernels.legal_bits(r)
                legal[node] = bits
                pending[depth] = bits
                count = 0
                rest = bits
                while rest:
                    rest &= rest - np.uint64(1)
                    count += 1
                first_child[node] = next_id
                num_children[node] = count
                cursor[depth] = next_id
                next_id += count
            bits = pending[depth]
            if bits == 0:
                depth -= 1
                continue
            a = nth_set_bit(bits, 0)
            pending[depth] = bits & (bits - np.uint64(1))
            child_id = cursor[depth]
            cursor[depth] = child_id + 1
            parent[child_id] = node
            action[child_id] = a
            _descend(stack, recall, node_key, depth, a)
            node_of[depth + 1] = child_id
            depth += 1
            fresh = True
    return next_id


def build_tree(rules: str | Rules, first_player: int = 0) -> GameTree:
    """The whole tree of one round of the rung ``rules`` as a :class:`GameTree`, with the
    information sets of :func:`count_tree`. About 31 bytes a
    node (46 while building): ``mini8`` (4.8 million nodes) takes about 150 MB, ``mini9``
    (87 million) about 2.7 GB."""
    rules = _rung(rules)
    roots, _ = root_records(rules, first_player)
    n = _size_of_trees(roots)
    parent = np.empty(n, np.int64)
    action = np.empty(n, np.int8)
    first_child = np.zeros(n, np.int64)
    num_children = np.zeros(n, np.int8)
    seat = np.empty(n, np.int8)
    score = np.zeros(n, np.float32)
    keys = np.zeros(n, np.uint64)
    legal = np.zeros(n, np.uint64)
    filled = _fill_tree(roots, parent, action, first_child, num_children, seat, score, keys, legal)
    assert filled == n, (filled, n)
    decisions = seat >= 0
    infoset_key, first_node, index = np.unique(keys[decisions], return_index=True, return_inverse=True)
    infoset = np.full(n, -1, np.int64)
    infoset[decisions] = index
    decision_ids = np.flatnonzero(decisions)[first_node]
    return GameTree(
        rules=rules,
        first_player=first_player,
        deals=len(roots),
        parent=parent,
        action=action,
        first_child=first_child,
        num_children=num_children,
        seat=seat,
        infoset=infoset,
        score=score,
        infoset_seat=seat[decision_ids].copy(),
        infoset_legal=legal[decision_ids].copy(),
        infoset_key=infoset_key,
        infoset_node=decision_ids,
    )


def record_of(tree: GameTree, node: int) -> np.ndarray:
    """The core record of history ``node`` of ``tree``: its deal, replayed along the actions
    that lead to the node."""
    if not 0 <= node < tree.num_nodes:
        raise ValueError(f"node must be in 0..{tree.num_nodes - 1}, got {node!r}")
    path = []
    while tree.parent[node] >= 0:
        path.append(int(tree.action[node]))
        node = int(tree.parent[node])
    record = new_records([2], tree.rules)[0]
    kernels.start_round(record, _deal_decks(tree.rules)[node], tree.first_player)
    for action in reversed(path):
        kernels.play(record, action)
    return record


@njit(cache=True)
def _expected_scores(deals, first_child, num_children, seat, infoset, score, strategy, value):
    for node in range(len(seat) - 1, -1, -1):
        if seat[node] < 0:
            value[node] = score[node]
            continue
        total = 0.0
        for k in range(num_children[node]):
            total += strategy[infoset[node], k] * value[first_child[node] + k]
        value[node] = total
    mean = 0.0
    for g in range(deals):
        mean += value[g]
    return mean / deals


def expected_score(tree: GameTree, strategy: np.ndarray) -> float:
    """Player 0's expected score when both players follow ``strategy`` (float64 [I, K]:
    row ``i`` gives the probability of child ``k`` of information set ``i``, i.e. of its
    ``k``-th legal action; K at least the most legal actions of any set)."""
    strategy = np.ascontiguousarray(strategy, dtype=np.float64)
    if strategy.ndim != 2 or strategy.shape[0] != tree.num_infosets or strategy.shape[1] < tree.num_children.max():
        raise ValueError(
            f"strategy must be [{tree.num_infosets}, >= {int(tree.num_children.max())}] probabilities, "
            f"got shape {list(strategy.shape)}"
        )
    value = np.empty(tree.num_nodes)
    args = (tree.first_child, tree.num_children, tree.seat, tree.infoset, tree.score)
    return float(_expected_scores(tree.deals, *args, strategy, value))


def uniform_strategy(tree: GameTree) -> np.ndarray:
    """float64 [I, 41]: every legal action of each information set equally likely."""
    counts = np.array([bin(int(bits)).count("1") for bits in tree.infoset_legal], np.float64)
    strategy = np.zeros((tree.num_infosets, 41))
    for i, k in enumerate(counts.astype(int)):
        strategy[i, :k] = 1.0 / k
    return strategy


#: Why no tool takes a choice of information sets (the flags that once chose refuse with it).
ONE_GAME = (
    "the observation is the player's information state (every announced move, perfect recall), so there is one game"
)


class _RetiredFlag(argparse.Action):
    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: object,
        option_string: str | None = None,
    ) -> None:
        parser.error(f"{option_string} is retired: {ONE_GAME}")


def retire_flag(parser: argparse.ArgumentParser, flag: str, nargs: int | str | None = "?") -> None:
    """Make ``parser`` refuse ``flag`` (with or without a value: ``nargs``) with one sentence
    naming it, so a command line written for the information modes says why it stopped working."""
    parser.add_argument(flag, nargs=nargs, action=_RetiredFlag, help=argparse.SUPPRESS)


def main(argv: list[str] | None = None) -> None:
    """``python -m loveletter_env.tree [RUNG ...]``: print the tree size of each rung."""
    from tqdm import tqdm

    parser = argparse.ArgumentParser(
        prog="python -m loveletter_env.tree",
        description="Count the histories and information sets of one round of ladder rungs exactly.",
    )
    parser.add_argument("rungs", nargs="*", default=["mini6", "mini7", "mini8"], help="default: mini6 mini7 mini8")
    parser.add_argument("--first-player", type=int, default=0, choices=(0, 1), help="seat that starts (default 0)")
    retire_flag(parser, "--observations-only", nargs=0)
    args = parser.parse_args(argv)
    for rung in args.rungs:
        try:
            _rung(rung)
        except ValueError as error:
            parser.error(str(error))
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


if __name__ == "__main__":
    main()

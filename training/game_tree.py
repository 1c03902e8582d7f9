"""The whole game tree of one round of a ladder rung, as flat arrays, and the compiled
passes over it: CFR+ iterations, exact best responses and expected values.

The tree is walked with the compiled core (:mod:`loveletter_env.core.kernels`) from the
deals of :func:`loveletter_env.tree.root_records`: every distinct order of the cards in
play is one deal (all equally likely), player 0 to move first; every legal action of the
player to act is played on a copy of the record. Nothing here restates a rule.

Layout. Nodes are numbered level by level (breadth first), so a node's children are
consecutive and come after it, and every node of one level comes before the next level:
a pass from the last node to the first sees children before parents, and one level at a
time. The deals' first decisions (player 0's) are nodes ``0 .. D - 1``.

* ``node_info[n]``: the information set of the player to act (``>= 0``), or, at the end
  of the round, ``-1 - h`` where ``h`` is player 0's score in halves (2 win, 1 shared, 0 loss);
* ``node_child[n]``: the first child (children follow the information set's actions).

An information set is keyed exactly by what its player has seen and done this round (see
:mod:`loveletter_env.agents.solved`): its previous information set, the action taken
there, and the observation vector now (which shows every move announced this round, so
this is the game as played at a table). Actions of information set ``i`` are
``actions[action_offsets[i]:action_offsets[i + 1]]`` (ascending); per-action arrays
(regrets, strategies) use the same offsets.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from numba import njit

from loveletter_env.actions import NUM_ACTIONS
from loveletter_env.agents.solved import observation_key_into
from loveletter_env.core import kernels, layout
from loveletter_env.core.sampling import popcount
from loveletter_env.observation import OBSERVATION_SIZE
from loveletter_env.rules import Rules, resolve_rules
from loveletter_env.tree import root_records

_STACK = 4096
_RECORD = layout.RECORD_SIZE
_CURRENT = layout.CURRENT
_ROUND_OVER = layout.ROUND_OVER
_ROUND_WINNERS = layout.ROUND_WINNERS
_MASK64 = np.uint64(0xFFFFFFFFFFFFFFFF)


class TreeError(ValueError):
    """Rules the solver cannot walk (not a 2-player ladder rung), or a tree too large."""


def rung_rules(rules: str | Rules) -> Rules:
    """``rules`` as a :class:`Rules` object if they are a ladder rung; a clear error otherwise."""
    resolved = resolve_rules(rules)
    if resolved.in_play is None:
        raise TreeError(
            f"rules {resolved.name!r} are not a ladder rung: only a rung (mini6, mini7, mini8, mini9), "
            "where most cards are dealt face up, is small enough to walk whole"
        )
    return resolved


# Growable arrays in compiled code: numba has no list of arrays of fixed dtype that is
# cheap to append to, so each array doubles by hand.


@njit(cache=True)
def _grow(a, need):
    if need <= a.shape[0]:
        return a
    b = np.empty(max(need, 2 * a.shape[0]), a.dtype)
    b[: a.shape[0]] = a
    return b


@njit(cache=True)
def _hash(parent, action, key, n):
    h = np.uint64(1469598103934665603) ^ (np.uint64(parent + 1) * np.uint64(0x9E3779B97F4A7C15))
    h ^= np.uint64(action + 1) * np.uint64(0xBF58476D1CE4E5B9)
    for i in range(n):
        h = (h ^ np.uint64(key[i])) * np.uint64(1099511628211)
    h ^= h >> np.uint64(31)
    return h


@njit(cache=True, nogil=True)
def _build(roots, obs, key, stop):
    """Walk every deal; return the tree in depth-first order (children consecutive) and
    the information sets (see the module docstring). ``obs`` and ``key`` are scratch
    buffers. ``status`` is 0, or 1 when one observation showed two different sets of legal
    actions (the key would not be what an agent can tell apart), 2 when the tree is too
    large, 3 when ``stop[0]`` was set (checked at each deal, see :func:`run_interruptibly`);
    with 2 or 3 the arrays are of no use."""
    num_deals = roots.shape[0]
    node_info = np.empty(1 << 16, np.int32)
    node_child = np.empty(1 << 16, np.int32)
    node_depth = np.empty(1 << 16, np.int8)
    num_nodes = num_deals
    node_info = _grow(node_info, num_nodes)
    node_child = _grow(node_child, num_nodes)
    node_depth = _grow(node_depth, num_nodes)

    iset_parent = np.empty(1 << 12, np.int32)
    iset_parent_action = np.empty(1 << 12, np.int8)
    iset_parent_slot = np.empty(1 << 12, np.int8)
    iset_player = np.empty(1 << 12, np.int8)
    iset_depth = np.empty(1 << 12, np.int8)
    iset_legal = np.empty(1 << 12, np.uint64)
    iset_hash = np.empty(1 << 12, np.uint64)
    key_offsets = np.zeros(1 << 12, np.int64)
    key_entries = np.empty(1 << 16, np.uint16)
    num_isets = 0
    table = np.full(1 << 12, -1, np.int32)

    stack_rec = np.empty((_STACK, _RECORD), np.uint8)
    stack_node = np.empty(_STACK, np.int64)
    stack_last = np.empty((_STACK, 2), np.int32)
    stack_act = np.empty((_STACK, 2), np.int8)
    stack_slot = np.empty((_STACK, 2), np.int8)
    status = 0

    for d in range(num_deals):
        if stop[0]:
            status = 3
            break
        stack_rec[0, :] = roots[d]
        stack_node[0] = d
        stack_last[0, 0] = -1
        stack_last[0, 1] = -1
        stack_act[0, :] = -1
        stack_slot[0, :] = -1
        node_depth[d] = 0
        sp = 1
        while sp > 0:
            sp -= 1
            rec = stack_rec[sp]
            n = stack_node[sp]
            if rec[_ROUND_OVER]:
                w0 = rec[_ROUND_WINNERS]
                w1 = rec[_ROUND_WINNERS + 1]
                halves = 2 if w0 and not w1 else (1 if w0 else 0)
                node_info[n] = -1 - halves
                node_child[n] = -1
                continue
            p = np.int64(rec[_CURRENT])
            kernels.observe_into(rec, p, obs)
            length = observation_key_into(obs, key)
            bits = kernels.legal_bits(rec)
            parent = stack_last[sp, p]
            pact = stack_act[sp, p]
            # Find or add the information set (open addressing, linear probing).
            h = _hash(parent, pact, key, length)
            mask = table.shape[0] - 1
            slot = np.int64(h & np.uint64(mask))
            found = -1
            while table[slot] >= 0:
                i = table[slot]
                if iset_hash[i] == h and iset_parent[i] == parent and iset_parent_action[i] == pact:
                    lo = key_offsets[i]
                    if key_offsets[i + 1] - lo == length:
                        same = True
                        for j in range(length):
                            if key_entries[lo + j] != key[j]:
                                same = False
                                break
                        if same:
                            found = i
                            break
                slot = (slot + 1) & mask
            if found < 0:
                found = num_isets
                num_isets += 1
                iset_parent = _grow(iset_parent, num_isets)
                iset_parent_action = _grow(iset_parent_action, num_isets)
                iset_parent_slot = _grow(iset_parent_slot, num_isets)
                iset_player = _grow(iset_player, num_isets)
                iset_depth = _grow(iset_depth, num_isets)
                iset_legal = _grow(iset_legal, num_isets)
                iset_hash = _grow(iset_hash, num_isets)
                key_offsets = _grow(key_offsets, num_isets + 1)
                start = key_offsets[found]
                key_entries = _grow(key_entries, start + length)
                key_entries[start : start + length] = key[:length]
                key_offsets[found + 1] = start + length
                iset_parent[found] = parent
                iset_parent_action[found] = pact
                iset_parent_slot[found] = stack_slot[sp, p]
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
                status = 1
            # Children: one per legal action, ascending, consecutive.
            k = popcount(bits)
            first = num_nodes
            num_nodes += k
            node_info = _grow(node_info, num_nodes)
            node_child = _grow(node_child, num_nodes)
            node_depth = _grow(node_depth, num_nodes)
            node_info[n] = found
            node_child[n] = first
            if sp + k > _STACK or num_nodes >= 2**31 - 1:
                status = 2
                break
            c = 0
            # Push the children after the record in slot sp (which the first child overwrites last).
            for a in range(NUM_ACTIONS - 1, -1, -1):
                if (bits >> np.uint64(a)) & np.uint64(1):
                    c += 1
                    t = sp + k - c
                    if t != sp:
                        stack_rec[t, :] = rec
                        stack_last[t, :] = stack_last[sp, :]
                        stack_act[t, :] = stack_act[sp, :]
                        stack_slot[t, :] = stack_slot[sp, :]
                    child = first + (k - c)
                    stack_node[t] = child
                    node_depth[child] = node_depth[n] + 1
                    stack_last[t, p] = found
                    stack_act[t, p] = a
                    stack_slot[t, p] = k - c
            # Slot sp still held the parent's record while the others were copied; play now.
            for t in range(sp, sp + k):
                kernels.play(stack_rec[t], np.int64(stack_act[t, p]))
            sp += k
        if status >= 2:
            break
    return (node_info, node_child, node_depth, num_nodes, iset_parent, iset_parent_action, iset_parent_slot,
            iset_player, iset_legal, key_offsets, key_entries, num_isets, status)  # fmt: skip


@njit(cache=True, nogil=True)
def _breadth_first(node_info, node_child, node_depth, num_nodes, num_roots, iset_legal, stop):
    """Renumber the depth-first tree level by level (see the module docstring); return
    the new arrays and the first node of each level (plus the end). Stops early, with
    arrays of no use, once ``stop[0]`` is set."""
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
            k = popcount(iset_legal[i])
            for j in range(k):
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


def run_interruptibly(kernel: Callable[..., Any], *args: Any, stop: np.ndarray | None = None) -> Any:
    """``kernel(*args)``, a compiled function, run in a worker thread so that Ctrl-C stops it cleanly.

    Why a thread: a SIGINT that arrives while compiled code runs is raised as
    ``KeyboardInterrupt`` by the next Python code to run, and numba runs some while it
    turns the arrays a function returns into Python objects (it unpickles their dtypes);
    the exception then lands halfway through the returned tuple, which numba does not
    check, and the process dies of a segmentation fault. Python handles signals in the
    main thread only, so the worker's results are built undisturbed while the main thread
    waits here and takes the ``KeyboardInterrupt``. It then sets ``stop[0]``, which a kernel
    compiled with ``nogil=True`` checks now and then to return early, waits for the worker
    and raises the ``KeyboardInterrupt``. A kernel that holds the GIL delays the signal until
    it returns. Exceptions of the kernel (``MemoryError``) are raised here.
    """
    outcome: dict[str, Any] = {}

    def call() -> None:
        try:
            outcome["value"] = kernel(*args)
        except BaseException as err:  # handed to the waiting thread, which raises it
            outcome["error"] = err

    worker = threading.Thread(target=call, name=f"compiled {getattr(kernel, '__name__', 'kernel')}", daemon=True)
    worker.start()
    try:
        worker.join()
    except KeyboardInterrupt:
        if stop is not None:
            stop[0] = 1
        worker.join()
        raise
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@dataclass
class GameTree:
    """One round of a rung as flat arrays (see the module docstring)."""

    rules: Rules
    num_deals: int
    node_info: np.ndarray
    node_child: np.ndarray
    level_start: np.ndarray
    infoset_player: np.ndarray
    infoset_parent: np.ndarray
    infoset_parent_action: np.ndarray
    infoset_parent_slot: np.ndarray
    key_offsets: np.ndarray
    key_entries: np.ndarray
    action_offsets: np.ndarray
    actions: np.ndarray
    build_seconds: float

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

    def key(self, infoset: int) -> np.ndarray:
        return self.key_entries[self.key_offsets[infoset] : self.key_offsets[infoset + 1]]

    def uniform_strategy(self) -> np.ndarray:
        """float64 per action: every legal action equally likely."""
        counts = np.diff(self.action_offsets)
        return np.repeat(1.0 / counts, counts)


def build_tree(rules: str | Rules) -> GameTree:
    """The whole tree of one round of a ladder rung (2 players, player 0 moves first).

    An information set holds the player's observation at each of its decisions and its own
    actions: exactly what an agent in the env can tell apart, and, as the observation shows
    every announced move, the game as played at a table.

    Args:
        rules: a rung.

    Raises:
        TreeError: rules that are not a rung, or a tree too large to walk.
        KeyboardInterrupt: Ctrl-C, within moments, nothing kept (see :func:`run_interruptibly`).
        MemoryError: not enough memory for the tree (``mini9`` needs about 2.4 GB).
    """
    resolved = rung_rules(rules)
    roots, _ = root_records(resolved, first_player=0)
    started = time.perf_counter()
    obs = np.zeros(OBSERVATION_SIZE, np.float32)
    key = np.zeros(OBSERVATION_SIZE, np.uint16)
    stop = np.zeros(1, np.uint8)
    (node_info, node_child, node_depth, num_nodes, parent, parent_action, parent_slot, player, legal,
     key_offsets, key_entries, num_isets, status) = run_interruptibly(
        _build, roots, obs, key, stop, stop=stop)  # fmt: skip
    if status == 2:
        raise TreeError("the tree is too large for the walker (over 2**31 nodes, or deeper than its stack)")
    if status == 1:
        raise TreeError("one observation showed two sets of legal actions: information sets would be wrong")
    info, child, level_start = run_interruptibly(
        _breadth_first, node_info, node_child, node_depth, num_nodes, roots.shape[0], legal, stop, stop=stop
    )
    # The depth-first arrays, as large as the tree, are not needed any more.
    del node_info, node_child, node_depth
    action_offsets, actions = run_interruptibly(_action_lists, legal, num_isets)
    return GameTree(
        rules=resolved,
        num_deals=int(roots.shape[0]),
        node_info=info,
        node_child=child,
        level_start=level_start,
        infoset_player=player[:num_isets].copy(),
        infoset_parent=parent[:num_isets].copy(),
        infoset_parent_action=parent_action[:num_isets].copy(),
        infoset_parent_slot=parent_slot[:num_isets].copy(),
        key_offsets=key_offsets[: num_isets + 1].copy(),
        key_entries=key_entries[: key_offsets[num_isets]].copy(),
        action_offsets=action_offsets,
        actions=actions,
        build_seconds=time.perf_counter() - started,
    )


# Passes -----------------------------------------------------------------------------


@njit(cache=True)
def _score(info, player):
    """Player ``player``'s score at a terminal node (``info < 0``)."""
    s0 = (-1 - info) * 0.5
    return s0 if player == 0 else 1.0 - s0


@njit(cache=True, inline="always")
def _mixed_value(node_child, offsets, strategy, work, n, i):
    """The value of node ``n`` (information set ``i``) when its player follows ``strategy``:
    the children's values ``work`` weighted by the set's action probabilities."""
    c = node_child[n]
    lo = offsets[i]
    v = 0.0
    for j in range(offsets[i + 1] - lo):
        v += strategy[lo + j] * work[c + j]
    return v


@njit(cache=True)
def _opponent_reach(node_info, node_child, iset_player, offsets, strategy, player, num_roots, work):
    """``work[n]`` = chance x the other player's probability of reaching node ``n``."""
    for r in range(num_roots):
        work[r] = 1.0 / num_roots
    for n in range(node_info.shape[0]):
        i = node_info[n]
        if i < 0:
            continue
        c = node_child[n]
        lo = offsets[i]
        k = offsets[i + 1] - lo
        if iset_player[i] == player:
            for j in range(k):
                work[c + j] = work[n]
        else:
            for j in range(k):
                work[c + j] = work[n] * strategy[lo + j]


@njit(cache=True, nogil=True)
def cfr_plus_iterations(
    node_info, node_child, iset_player, iset_parent, iset_parent_slot, offsets,
    regret, strategy, average, own_reach, work, num_roots, first_iteration, count, stop,
):  # fmt: skip
    """Run ``count`` CFR+ iterations (alternating updates, average weighted by the
    iteration number) from iteration ``first_iteration``; ``strategy`` is the current
    strategy (regret matching+ of ``regret``) and is updated in place. Returns the
    iterations run: fewer than ``count`` once ``stop[0]`` is set (checked before each
    iteration; see :func:`run_interruptibly`)."""
    num_isets = iset_player.shape[0]
    for t in range(first_iteration, first_iteration + count):
        if stop[0]:
            return t - first_iteration
        for player in range(2):
            # Average strategy: weight t x the player's own reach of each of its sets.
            for i in range(num_isets):
                if iset_player[i] != player:
                    continue
                parent = iset_parent[i]
                own_reach[i] = (
                    1.0 if parent < 0 else own_reach[parent] * strategy[offsets[parent] + iset_parent_slot[i]]
                )
                w = t * own_reach[i]
                for a in range(offsets[i], offsets[i + 1]):
                    average[a] += w * strategy[a]
            _opponent_reach(node_info, node_child, iset_player, offsets, strategy, player, num_roots, work)
            # Values from the leaves up; regrets at the player's own nodes.
            for n in range(node_info.shape[0] - 1, -1, -1):
                i = node_info[n]
                if i < 0:
                    work[n] = _score(i, player)
                    continue
                v = _mixed_value(node_child, offsets, strategy, work, n, i)
                if iset_player[i] == player:
                    c = node_child[n]
                    reach = work[n]
                    for a in range(offsets[i], offsets[i + 1]):
                        regret[a] += reach * (work[c + a - offsets[i]] - v)
                work[n] = v
            # Regret matching+ for the player's sets.
            for i in range(num_isets):
                if iset_player[i] != player:
                    continue
                lo = offsets[i]
                hi = offsets[i + 1]
                total = 0.0
                for a in range(lo, hi):
                    if regret[a] < 0.0:
                        regret[a] = 0.0
                    total += regret[a]
                for a in range(lo, hi):
                    strategy[a] = regret[a] / total if total > 0.0 else 1.0 / (hi - lo)
    return count


@njit(cache=True)
def best_response_value(node_info, node_child, level_start, iset_player, offsets, strategy, player, num_roots, work, q):
    """Player ``player``'s expected score when it best-responds exactly to ``strategy``
    (read at the other player's sets only). Levels are processed deepest first: a set's
    nodes all lie on one level, so its action values ``q`` are complete before it chooses."""
    _opponent_reach(node_info, node_child, iset_player, offsets, strategy, player, num_roots, work)
    q[:] = 0.0
    num_levels = level_start.shape[0] - 1
    for level in range(num_levels - 1, -1, -1):
        lo_n, hi_n = level_start[level], level_start[level + 1]
        for n in range(lo_n, hi_n):
            i = node_info[n]
            if i >= 0 and iset_player[i] == player:
                c = node_child[n]
                lo = offsets[i]
                for j in range(offsets[i + 1] - lo):
                    q[lo + j] += work[n] * work[c + j]
        for n in range(lo_n, hi_n):
            i = node_info[n]
            if i < 0:
                work[n] = _score(i, player)
                continue
            if iset_player[i] == player:
                lo = offsets[i]
                best = 0
                for j in range(1, offsets[i + 1] - lo):
                    if q[lo + j] > q[lo + best]:
                        best = j
                work[n] = work[node_child[n] + best]
            else:
                work[n] = _mixed_value(node_child, offsets, strategy, work, n, i)
    total = 0.0
    for r in range(num_roots):
        total += work[r]
    return total / num_roots


@njit(cache=True)
def expected_score(node_info, node_child, offsets, strategy, num_roots, work):
    """Player 0's expected score when both players follow ``strategy``."""
    for n in range(node_info.shape[0] - 1, -1, -1):
        i = node_info[n]
        work[n] = _score(i, 0) if i < 0 else _mixed_value(node_child, offsets, strategy, work, n, i)
    total = 0.0
    for r in range(num_roots):
        total += work[r]
    return total / num_roots


@dataclass(frozen=True)
class Exploitability:
    """Exact best responses to one strategy, in the project's score units (1 / ½ / 0)."""

    best_response_as_first: float  # a best response's expected score in seat 0 (moving first)
    best_response_as_second: float

    @property
    def exploitability(self) -> float:
        """The mean of the two best responses' scores, minus 0.5 (0 at an equilibrium)."""
        return (self.best_response_as_first + self.best_response_as_second) / 2 - 0.5


class TreeWorkspace:
    """Scratch arrays for passes over one tree (one float per node, one per action)."""

    def __init__(self, tree: GameTree):
        self.tree = tree
        self.work = np.zeros(tree.num_nodes, np.float64)
        self.q = np.zeros(tree.actions.shape[0], np.float64)

    def exploitability(self, strategy: np.ndarray) -> Exploitability:
        """Exact best responses, in both seats, to ``strategy`` (float64 per action)."""
        t = self.tree
        values = [
            best_response_value(
                t.node_info,
                t.node_child,
                t.level_start,
                t.infoset_player,
                t.action_offsets,
                strategy,
                seat,
                t.num_deals,
                self.work,
                self.q,
            )  # fmt: skip
            for seat in (0, 1)
        ]
        return Exploitability(float(values[0]), float(values[1]))

    def first_player_score(self, strategy: np.ndarray) -> float:
        """Player 0's expected score when both seats play ``strategy``."""
        t = self.tree
        return float(expected_score(t.node_info, t.node_child, t.action_offsets, strategy, t.num_deals, self.work))

    def head_to_head(self, first: np.ndarray, second: np.ndarray) -> float:
        """Player 0's expected score when player 0 plays ``first`` and player 1 plays ``second``
        (each a strategy over the whole tree, as :meth:`first_player_score` takes)."""
        return self.first_player_score(np.where(self.tree.action_player == 0, first, second))

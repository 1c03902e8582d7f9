"""The compiled passes of the solver over a :class:`loveletter_env.tree.GameTree`: CFR+
iterations, exact best responses and expected values.

Strategies, regrets and average strategies are float64 per action, laid out as the
tree's ``actions`` (information set ``i``'s slice is
``action_offsets[i]:action_offsets[i + 1]``). The tree's nodes are numbered level by
level, so a pass from the last node to the first sees children before parents.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from loveletter_env.tree import GameTree, expected_score_pass, mixed_value, terminal_score

# Passes -----------------------------------------------------------------------------


@njit(cache=True)
def _reach(node_info, node_child, iset_player, offsets, strategy, player, own, num_roots, work):
    """``work[n]``: with ``own``, ``player``'s own probability of reaching node ``n`` (its
    actions on the way); else chance x the other player's."""
    for r in range(num_roots):
        work[r] = 1.0 if own else 1.0 / num_roots
    for n in range(node_info.shape[0]):
        i = node_info[n]
        if i < 0:
            continue
        c = node_child[n]
        lo = offsets[i]
        k = offsets[i + 1] - lo
        if (iset_player[i] == player) != own:
            for j in range(k):
                work[c + j] = work[n]
        else:
            for j in range(k):
                work[c + j] = work[n] * strategy[lo + j]


@njit(cache=True, nogil=True)
def cfr_plus_iterations(
    node_info, node_child, iset_player, iset_node, offsets,
    regret, strategy, average, work, num_roots, first_iteration, count, stop,
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
            # Average strategy: weight t x the player's own reach of each of its sets (the
            # same at every node of a set, as the observation recalls the player's actions).
            _reach(node_info, node_child, iset_player, offsets, strategy, player, True, num_roots, work)
            for i in range(num_isets):
                if iset_player[i] != player:
                    continue
                w = t * work[iset_node[i]]
                for a in range(offsets[i], offsets[i + 1]):
                    average[a] += w * strategy[a]
            _reach(node_info, node_child, iset_player, offsets, strategy, player, False, num_roots, work)
            # Values from the leaves up; regrets at the player's own nodes.
            for n in range(node_info.shape[0] - 1, -1, -1):
                i = node_info[n]
                if i < 0:
                    work[n] = terminal_score(i, player)
                    continue
                v = mixed_value(node_child, offsets, strategy, work, n, i)
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
    _reach(node_info, node_child, iset_player, offsets, strategy, player, False, num_roots, work)
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
                work[n] = terminal_score(i, player)
                continue
            if iset_player[i] == player:
                lo = offsets[i]
                best = 0
                for j in range(1, offsets[i + 1] - lo):
                    if q[lo + j] > q[lo + best]:
                        best = j
                work[n] = work[node_child[n] + best]
            else:
                work[n] = mixed_value(node_child, offsets, strategy, work, n, i)
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
        return float(expected_score_pass(t.node_info, t.node_child, t.action_offsets, strategy, t.num_deals, self.work))

    def head_to_head(self, first: np.ndarray, second: np.ndarray) -> float:
        """Player 0's expected score when player 0 plays ``first`` and player 1 plays ``second``
        (each a strategy over the whole tree, as :meth:`first_player_score` takes)."""
        return self.first_player_score(np.where(self.tree.action_player == 0, first, second))

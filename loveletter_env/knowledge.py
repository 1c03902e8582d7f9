"""What each seat knows of the others' hands, and the public facts everyone can use.

Two tables live in the game state and are updated by the engine as cards resolve:

* ``known[observer][player]``: the card value ``observer`` knows ``player`` holds (0 = unknown).
  Learned from a Priest, a Baron comparison or a King trade, and kept only while the
  card provably stays in that hand (SPEC, "Knowledge about another player's hand").
* ``ruled_out[player]``: a bit mask of values a failed Guard guess proved ``player`` does
  not hold (bit ``v`` for value ``v``). Public: every observer sees the guess. It holds
  until that player's hand changes (they draw, are chosen by a Prince, or are out);
  a King trade moves it with the card.

Every rule about knowledge is one function here; the engine calls them, the batched
engine mirrors them with array operations.
"""

from __future__ import annotations


def new_tables(num_players: int) -> tuple[list[list[int]], list[int]]:
    """Empty knowledge: nobody knows anything about anybody."""
    return [[0] * num_players for _ in range(num_players)], [0] * num_players


def learn(known: list[list[int]], observer: int, player: int, card: int) -> None:
    """``observer`` has seen that ``player`` holds ``card`` (Priest, Baron, King)."""
    known[observer][player] = card


def on_card_played(known: list[list[int]], player: int, card: int) -> None:
    """``player`` played ``card``: whoever knew they held that value can no longer tell
    whether the known copy or the drawn one was played. A different value keeps it."""
    for row in known:
        if row[player] == card:
            row[player] = 0


def on_hand_replaced(known: list[list[int]], ruled_out: list[int], player: int) -> None:
    """``player``'s hand left it (chosen by a Prince, or out): every fact about it is void."""
    for row in known:
        row[player] = 0
    ruled_out[player] = 0


def on_draw(ruled_out: list[int], player: int) -> None:
    """``player`` drew a card: the card they keep may be the new one, so failed
    Guard guesses against them no longer hold."""
    ruled_out[player] = 0


def on_guard_missed(ruled_out: list[int], player: int, guess: int) -> None:
    """A Guard named ``guess`` against ``player`` and missed: public proof they lack it."""
    ruled_out[player] |= 1 << guess


def on_king_trade(
    known: list[list[int]], ruled_out: list[int], actor: int, target: int, actor_card: int, target_card: int
) -> None:
    """``actor`` gave ``actor_card`` to ``target`` and received ``target_card``.

    Whatever anyone knew of either hand moves with the card; then each of the two knows
    what the other now holds (their own former card).
    """
    for row in known:
        row[actor], row[target] = row[target], row[actor]
    ruled_out[actor], ruled_out[target] = ruled_out[target], ruled_out[actor]
    known[actor][target] = actor_card
    known[target][actor] = target_card

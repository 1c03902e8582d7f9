"""What each seat knows of the others' hands, and the public facts everyone can use.

Three tables live in the game state and are updated by the engine as cards resolve:

* ``known[observer][player]``: the card value ``observer`` knows ``player`` holds (0 = unknown).
  Learned from a Priest, a Baron comparison or a King trade, and kept only while the
  card provably stays in that hand (SPEC, "Knowledge about another player's hand").
* ``seen[observer][player]``: ``player`` can tell that ``observer`` knows their card. True
  for what ``observer`` learned about ``player`` directly; False for knowledge a King
  trade moved onto ``player``'s new hand, because whether it still held depended on the
  other trader's hidden card. The observation's ``seen_by`` field reads this table,
  never ``known``, so it cannot leak that hidden card.
* ``ruled_out[player]``: a bit mask of values a failed Guard guess proved ``player`` does
  not hold (bit ``v`` for value ``v``). Public: every observer sees the guess. It holds
  until that player's hand changes (they draw, are chosen by a Prince, or are out);
  a King trade moves it with the card.

Every rule about knowledge is one function here. They take any object with these three
attributes (the engine's ``GameState``); the batched engine mirrors them with array operations.
"""

from __future__ import annotations

from typing import Protocol


class KnowledgeTables(Protocol):
    known: list[list[int]]
    seen: list[list[bool]]
    ruled_out: list[int]


def reset(tables: KnowledgeTables, num_players: int) -> None:
    """Nobody knows anything about anybody (a new round)."""
    tables.known = [[0] * num_players for _ in range(num_players)]
    tables.seen = [[False] * num_players for _ in range(num_players)]
    tables.ruled_out = [0] * num_players


def reveal_card(tables: KnowledgeTables, observer: int, player: int, card: int) -> None:
    """``observer`` has seen that ``player`` holds ``card`` (Priest, Baron, King), and
    ``player`` knows it."""
    tables.known[observer][player] = card
    tables.seen[observer][player] = True


def on_card_played(tables: KnowledgeTables, player: int, card: int) -> None:
    """``player`` played ``card``: whoever knew they held that value can no longer tell
    whether the known copy or the drawn one was played. A different value keeps it."""
    for row, seen_row in zip(tables.known, tables.seen):
        if row[player] == card:
            row[player] = 0
            seen_row[player] = False


def on_hand_replaced(tables: KnowledgeTables, player: int) -> None:
    """``player``'s hand left it (chosen by a Prince, or out): every fact about it is void."""
    for row, seen_row in zip(tables.known, tables.seen):
        row[player] = 0
        seen_row[player] = False
    tables.ruled_out[player] = 0


def on_draw(tables: KnowledgeTables, player: int) -> None:
    """``player`` drew a card: the card they keep may be the new one, so failed
    Guard guesses against them no longer hold."""
    tables.ruled_out[player] = 0


def ruled_out_after_play(ruled_out: int, card: int) -> int:
    """What a failed Guard proved of a hand still proves after its holder draws and plays ``card``.

    ``ruled_out`` holds for the card kept before the draw. Playing one of its values shows
    the card played was the one just drawn, so the old card is kept and every ruling
    stands; any other play may have kept the new card, and nothing is left. The engine's
    table forgets at the draw (:func:`on_draw`), before the play is known; a player with
    the whole move record (the bots) can keep what this proves.
    """
    return ruled_out if ruled_out >> card & 1 else 0


def on_guard_missed(tables: KnowledgeTables, player: int, guess: int) -> None:
    """A Guard named ``guess`` against ``player`` and missed: public proof they lack it."""
    tables.ruled_out[player] |= 1 << guess


def on_king_trade(tables: KnowledgeTables, actor: int, target: int, actor_card: int, target_card: int) -> None:
    """``actor`` gave ``actor_card`` to ``target`` and received ``target_card``.

    Whatever anyone knew of either hand moves with the card (the new holder cannot tell
    whether that knowledge still held, so it is not ``seen``); then each of the two knows
    what the other now holds (their own former card).
    """
    for row, seen_row in zip(tables.known, tables.seen):
        row[actor], row[target] = row[target], row[actor]
        seen_row[actor] = seen_row[target] = False
    tables.ruled_out[actor], tables.ruled_out[target] = tables.ruled_out[target], tables.ruled_out[actor]
    reveal_card(tables, actor, target, actor_card)
    reveal_card(tables, target, actor, target_card)

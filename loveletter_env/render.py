"""Text views of a game: what one seat at the table can see, and turn narration."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from .actions import describe_action
from .cards import (
    BARON,
    CARD_COUNTS,
    CARD_VALUES,
    COUNTESS,
    GUARD,
    HANDMAID,
    KING,
    PRIEST,
    PRINCE,
    PRINCESS,
    card_name,
)
from .engine import GameState, TurnEvent, legal_actions
from .rules import CLASSIC, Rules, resolve_rules
from .validation import check_seat

#: What each card does when played, in a line (the rules page says it at length).
CARD_EFFECTS: dict[int, str] = {
    GUARD: "name a non-Guard card; if the chosen player holds it, they are out",
    PRIEST: "look at another player's hand",
    BARON: "compare hands with another player in secret; the lower card is out (a tie: nothing)",
    HANDMAID: "no other player's card can choose you until your next turn",
    PRINCE: "a player (you too) discards their hand and draws; discarding the Princess puts them out",
    KING: "trade hands with another player",
    COUNTESS: "no effect, but you must play her while you also hold the King or a Prince",
    PRINCESS: "if you play or discard her, you are out",
}


def card_rows(rules: str | Rules = CLASSIC) -> list[tuple[int, str, int, int, str]]:
    """Every card under ``rules`` (a :class:`Rules` or a preset name; anything else raises
    ``ValueError``): value, name, copies a round can deal into play, copies
    always face up (on a ladder rung, the cards not in play; 0 off the ladder, where the
    shuffle decides) and effect (as these rules change it). The terminal's and the web
    page's card references are both made from these rows."""
    rules = resolve_rules(rules)  # a preset name read as a Rules object raised AttributeError
    face_up = Counter(rules.face_up_cards or ())
    rows = []
    for value in CARD_VALUES:
        effect = CARD_EFFECTS[value]
        if value == KING and rules.king_ignores_handmaid:
            effect += " (a Handmaid does not protect from the King in these rules)"
        elif value == HANDMAID and rules.king_ignores_handmaid:
            effect += " (except the King's, in these rules)"
        rows.append((value, card_name(value), CARD_COUNTS[value] - face_up[value], face_up[value], effect))
    return rows


def card_reference(rules: str | Rules = CLASSIC) -> str:
    """A table of every card: value, name, copies in play (and, on a ladder rung, face up) and effect
    (``rules``: a :class:`Rules` or a preset name)."""
    rules = resolve_rules(rules)
    rows = card_rows(rules)
    if not rules.is_rung:
        lines = ["value  card      copies  effect"]
        lines += [f"  {value}    {name:<9} {copies}       {effect}" for value, name, copies, _, effect in rows]
        return "\n".join(lines)
    lines = ["value  card      in play  face up  effect"]
    lines += [
        f"  {value}    {name:<9} {copies}        {face_up}        {effect}"
        for value, name, copies, face_up, effect in rows
    ]
    return "\n".join(lines)


def _names(cards) -> str:
    return ", ".join(card_name(c) for c in cards) if cards else "-"


def render_seat_view(state: GameState, seat: int, moves: Sequence[int] | None = None, halted: bool = False) -> str:
    """What ``seat`` sees: tokens, discards, flags, face-up cards, own hand, known cards, the
    values a failed Guard ruled out for each other player, who knows its card, and its legal
    moves when it is to act (``moves``, when given: the legal moves to list). That is what its
    observation holds, never another player's hidden card. ``halted``: play stopped midway (an
    episode abandoned), so no seat is shown to act and no moves are listed.

    Raises ``ValueError`` for a seat outside the table, and for ``moves`` given when ``seat`` is
    not to act or holding a move that is not legal.
    """
    n = state.num_players
    seat = check_seat("seat", seat, n)  # -1 would index the last seat and show its hand as "your hand"
    someone_acts = not state.round_over and not halted
    to_act = someone_acts and state.current == seat
    legal = list(legal_actions(state)) if to_act else []
    if moves is not None:
        try:
            listed = list(moves)
        except TypeError:
            raise ValueError(f"moves must be a sequence of legal actions, got {moves!r}") from None
        if not to_act:
            raise ValueError(f"moves were given for seat {seat}, which is not to act")
        illegal = [a for a in listed if a not in legal]
        if illegal:
            raise ValueError(f"moves {illegal} are not legal for seat {seat}; its legal actions are {legal}")
        legal = listed
    lines = [
        (
            f"Round {state.round}, over after {state.turn} turns"
            if state.round_over
            else f"Round {state.round}, turn {state.turn + 1}"
        )
        + f" - deck: {state.deck_remaining} cards"
        + (f" - face up: {_names(state.face_up)}" if state.face_up else "")
    ]
    for p in range(n):
        flags = []
        if state.out[p]:
            flags.append("out")
        if state.protected[p]:
            flags.append("protected")
        if p == state.current and someone_acts:
            flags.append("to act")
        who = f"player_{p}" + (" (you)" if p == seat else "")
        known = state.known[seat][p] if p != seat else 0
        extra = f" - you know they hold {card_name(known)}" if known else ""
        if p != seat:  # what the observation adds of them: a failed Guard's proof, and whether they saw us
            ruled_out = [v for v in CARD_VALUES if state.ruled_out[p] >> v & 1]
            extra += f" - a Guard ruled out: {_names(ruled_out)}" if ruled_out else ""
            extra += " - they know your card" if state.seen[p][seat] else ""
        lines.append(
            f"  {who:<16} tokens {state.tokens[p]}/{state.tokens_to_win}"
            f"{' [' + ', '.join(flags) + ']' if flags else ''} discards: {_names(state.discards[p])}{extra}"
        )
    lines.append(f"Your hand: {_names(state.hand_of(seat))}")
    if state.round_over:
        lines.append(f"Round over - winners: {', '.join(f'player_{p}' for p in state.round_winners)}")
    elif to_act:
        lines.append("Legal moves:")
        lines += [f"  {a:>2}: {describe_action(a, seat, n)}" for a in legal]
    return "\n".join(lines)


def narrate(event: TurnEvent, viewer: int) -> str:
    """One turn in words, as ``viewer`` experienced it: what everyone saw (a card discarded face up
    by whoever goes out), and private reveals only to those who saw them (a Priest's card, a Baron's
    or King's cards, the card a Prince's target drew)."""
    who = "You" if event.player == viewer else f"player_{event.player}"
    tgt = "" if event.target < 0 else ("you" if event.target == viewer else f"player_{event.target}")
    if event.target == event.player:
        tgt = "yourself" if event.player == viewer else "themselves"
    text = f"{who} played {card_name(event.card)}"
    if event.target < 0:
        if event.card in (GUARD, PRIEST, BARON, KING):
            text += " with no one to choose (no effect)"
    else:
        text += f" on {tgt}"
        if event.card == GUARD:
            text += f", naming {card_name(event.guess)}: " + ("a hit" if event.target_card else "a miss")
        elif event.card == PRIEST and viewer == event.player:
            text += f" and saw {card_name(event.target_card)}"
        elif event.card == BARON:
            if viewer in (event.player, event.target):
                # Say whose card is whose: "King against Princess" left the reader guessing.
                mine, theirs = (event.actor_card, event.target_card)
                other = event.target if viewer == event.player else event.player
                if viewer == event.target:
                    mine, theirs = theirs, mine
                text += f": your {card_name(mine)} against player_{other}'s {card_name(theirs)}"
            elif not event.eliminated:
                text += ": a tie"
        elif event.card == PRINCE:
            text += f", who discarded {card_name(event.target_card)}"
            if viewer == event.target and event.replacement:
                text += f" and drew {card_name(event.replacement)}"  # the target's alone to know
        elif event.card == KING and viewer in (event.player, event.target):
            gave, got = (event.actor_card, event.target_card)
            if viewer == event.target:
                gave, got = got, gave
            text += f": you gave {card_name(gave)} and received {card_name(got)}"
    # A player who goes out discards face up: say the card, unless the text has named it (a
    # Guard's right guess, a Prince's discard, both cards of a Baron to the two who compared).
    named = event.card in (GUARD, PRINCE) or (event.card == BARON and viewer in (event.player, event.target))
    for p in event.eliminated:
        text += f". {'You are' if p == viewer else f'player_{p} is'} out"
        if event.discarded and not named:
            text += f", discarding {card_name(event.discarded)}"
    return text + "."


def round_summary(state: GameState, viewer: int | None = None) -> str:
    """The end of a round in words: the showdown hands (when several players were left),
    the winners and the tokens. ``viewer`` is called "you" (``None``: nobody).

    Raises ``ValueError`` for a round still being played: it has no winners yet, and its
    "showdown" would show every player's hidden hand.
    """
    if not state.round_over:
        raise ValueError(f"round {state.round} is still being played: only a round that is over has a summary")
    names = ["you" if p == viewer else f"player_{p}" for p in range(state.num_players)]
    alive = [p for p in range(state.num_players) if not state.out[p]]
    lines = []
    if len(alive) > 1:
        lines.append("Showdown - " + ", ".join(f"{names[p]}: {card_name(state.hands[p])}" for p in alive))
    lines.append(
        f"Round {state.round} won by {', '.join(names[p] for p in state.round_winners)}. Tokens: "
        + ", ".join(f"{names[p]} {state.tokens[p]}" for p in range(state.num_players))
        + f" (target {state.tokens_to_win})"
    )
    return "\n".join(lines)

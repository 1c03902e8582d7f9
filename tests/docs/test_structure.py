"""The package's names: ``loveletter_env.env`` is PettingZoo's constructor, the function ``env``
of the AEC env's module ``loveletter_env.aec``; the basics import without the env's libraries."""

from __future__ import annotations

import importlib
import pickle
import subprocess
import sys
import textwrap

import loveletter_env
from loveletter_env import aec


def test_env_is_the_aec_modules_constructor_and_stays_so():
    assert loveletter_env.env is aec.env and loveletter_env.raw_env is aec.raw_env
    built = loveletter_env.env(num_players=3, episode="round")
    assert type(built) is type(aec.env(num_players=3)) and built.unwrapped.num_players == 3
    built.reset(seed=1)
    assert built.agent_selection in built.possible_agents
    assert pickle.loads(pickle.dumps(loveletter_env.env)) is aec.env
    # Importing the module again does not make the package's name the module: they differ in name.
    importlib.import_module("loveletter_env.aec")
    assert loveletter_env.env is aec.env


def test_aec_module_docstring_is_an_env_card():
    card = aec.__doc__
    for heading in ("Action space", "Observation space", "Action mask", "Rewards", "Version history", "loveletter_v0"):
        assert heading in card, heading


def test_the_basics_import_without_gymnasium_pettingzoo_or_torch():
    """``import loveletter_env.cards`` and the other basics, and the package's engine names,
    work where none of the env's libraries is installed; the env itself says what it needs."""
    code = textwrap.dedent(
        """
        import sys

        BLOCKED = ("gymnasium", "pettingzoo", "torch")
        for name in BLOCKED:
            sys.modules[name] = None  # any import of it now fails, as where it is not installed

        import loveletter_env.actions
        import loveletter_env.cards
        import loveletter_env.engine
        import loveletter_env.rules
        from loveletter_env import CLASSIC, NUM_ACTIONS, legal_actions, new_game

        game = new_game(2, list(loveletter_env.cards.FULL_DECK), 0, CLASSIC)
        assert legal_actions(game) and NUM_ACTIONS == 41
        loaded = {m.partition(".")[0] for m, module in sys.modules.items() if module is not None}
        assert not loaded & set(BLOCKED), loaded & set(BLOCKED)
        try:
            loveletter_env.env
        except ImportError as missing:
            print("the env needs", missing.name)
        """
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() in ("the env needs gymnasium", "the env needs pettingzoo", "the env needs torch")

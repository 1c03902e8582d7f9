"""What ``docs/ladder.md`` says of :mod:`loveletter_env.tree` against the module itself.

"Walking a tree" lists the pieces a solver needs and says which are numba functions,
callable from compiled code as well as from Python, and what an information set's key
keeps of an observation; a piece that is a plain Python function, or a key that leaves
entries out without the page saying so, would send a solver's author the wrong way.
"""

from __future__ import annotations

import re

import numpy as np
from conftest import ROOT
from numba.core.dispatcher import Dispatcher

import loveletter_env
from loveletter_env import tree
from loveletter_env.core import kernels
from loveletter_env.observation import SLICES

PAGE = ROOT / "docs" / "ladder.md"
#: The page's list of the numba pieces: from this phrase to the end of its sentence.
NUMBA_LIST = re.compile(r"numba functions callable from compiled code as well\s+as from Python:(?P<list>.*?)\.\s", re.S)


def walking_section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    return text[text.index("## Walking a tree") :]


def test_the_pieces_the_page_calls_numba_functions_are_numba_functions():
    found = NUMBA_LIST.search(walking_section())
    assert found, "docs/ladder.md no longer lists the numba pieces of loveletter_env.tree"
    names = re.findall(r"`(?:kernels\.)?(\w+)\(", found["list"])
    assert len(names) >= 6, names
    for name in names:
        function = getattr(kernels, name, None) or getattr(tree, name)
        assert isinstance(function, Dispatcher), f"docs/ladder.md calls {name}() a numba function; it is plain Python"


def test_the_page_says_what_the_key_leaves_out_of_an_observation():
    env = loveletter_env.env(rules="mini6", episode="round")
    env.reset(seed=0)
    observation = env.observe(env.agent_selection)["observation"].astype(np.float32)
    tokens = observation.copy()
    tokens[SLICES["tokens"].start] += 1
    assert tree.observation_key(tokens) == tree.observation_key(observation)  # the key leaves the tokens out
    sentence = walking_section().split("`observation_key(observation)`", 1)[1].split(".", 1)[0]
    assert "tokens" in sentence, f"docs/ladder.md says observation_key writes an observation exactly:{sentence}"

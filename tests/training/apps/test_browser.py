"""The web app in a real browser: headless Chromium driven by Selenium with the system's chromedriver.

It plays a whole round by clicking, checks that the result appears and that the browser
console stayed free of errors, opens the game's replay and steps through it, shows the
leaderboard, and takes a screenshot of each page: into ``docs/images/`` (the pictures the
documentation shows) when run as ``LOVELETTER_SCREENSHOTS=docs/images pytest tests/training/apps/test_browser.py``,
else into a temporary folder, so that a test run leaves the working tree as it was.

Needs Debian's ``chromium`` and ``chromium-driver`` packages (``.ci/run`` installs them).
Without them the test is skipped, except in CI (``CI=true``), where it fails instead.
"""

from __future__ import annotations

import os
import shutil
import socket
import threading
import time
from pathlib import Path

import pytest
from conftest import ROOT

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
CHROMEDRIVER = shutil.which("chromedriver")
IN_CI = os.environ.get("CI", "").lower() == "true"

missing = [what for what, found in [("chromium", CHROMIUM), ("chromedriver", CHROMEDRIVER)] if not found]
try:
    import selenium  # noqa: F401
    import uvicorn  # noqa: F401
except ImportError as exc:
    missing.append(f"python package {exc.name} (pip install -e '.[web-test]')")
if missing:
    reason = "no browser to drive: missing " + ", ".join(missing) + " (apt-get install chromium chromium-driver)"
    if IN_CI:
        pytest.fail(f"CI must run the browser test, but: {reason}", pytrace=False)
    pytest.skip(reason, allow_module_level=True)

from selenium import webdriver  # noqa: E402
from selenium.webdriver.chrome.service import Service  # noqa: E402
from selenium.webdriver.common.action_chains import ActionChains  # noqa: E402
from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support import expected_conditions as EC  # noqa: E402
from selenium.webdriver.support.ui import Select, WebDriverWait  # noqa: E402

from training.apps.web.app import ServerConfig, create_app  # noqa: E402
from training.measure.league import league, write_league  # noqa: E402

WAIT = 30  # seconds: generous, the machine may be busy


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    base = tmp_path_factory.mktemp("web")
    replays, league_dir = base / "replays", base / "league"
    replays.mkdir()
    write_league(league(["random", "rule", "belief"], rounds=30, seed=0), league_dir)
    checkpoints = {name: ROOT / "checkpoints" / f"{name}.pt" for name in ("shipped/ppo_2p", "v1/ppo_2p")}
    config = ServerConfig(replays, league_dir, checkpoints)
    port = _free_port()
    uv = uvicorn.Server(uvicorn.Config(create_app(config), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=uv.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + WAIT
    while not uv.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("the web server did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    uv.should_exit = True
    thread.join(timeout=10)


@pytest.fixture(scope="module")
def browser():
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for arg in ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000"):
        options.add_argument(arg)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    yield driver
    driver.quit()


def console_errors(driver) -> list[str]:
    return [entry["message"] for entry in driver.get_log("browser") if entry["level"] == "SEVERE"]


def visible(driver, css: str) -> bool:
    return any(e.is_displayed() for e in driver.find_elements(By.CSS_SELECTOR, css))


@pytest.fixture(scope="module")
def screenshot(tmp_path_factory):
    """``screenshot(driver, name)`` saves the browser's view as ``name`` in ``LOVELETTER_SCREENSHOTS``
    (a temporary folder when unset)."""
    chosen = os.environ.get("LOVELETTER_SCREENSHOTS")
    folder = Path(chosen) if chosen else tmp_path_factory.mktemp("screenshots")
    folder.mkdir(parents=True, exist_ok=True)

    def save(driver, name: str) -> None:
        ActionChains(driver).move_to_element(driver.find_element(By.TAG_NAME, "h1")).perform()  # no hover effects
        driver.save_screenshot(str(folder / name))

    return save


def play_one_click(driver, screenshot, shot: str | None = None) -> tuple[bool, bool]:
    """Make one move by clicking: a playable card, then a target, then a guess when asked
    (saving the screenshot ``shot`` while the guesses are offered). Returns whether the
    Princess confirmation was asked (it is first declined, which must change nothing, then
    accepted) and whether the screenshot was taken."""
    taken = False
    wait = WebDriverWait(driver, WAIT)
    card = wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#hand .card.playable")))
    value = card.get_attribute("data-card")
    card.click()
    for selector in ("#picker .target-btn", "#picker .guess-btn"):
        buttons = [b for b in driver.find_elements(By.CSS_SELECTOR, selector) if b.is_displayed()]
        if buttons:
            if shot and selector.endswith("guess-btn"):
                screenshot(driver, shot)
                taken = True
            buttons[0].click()
    if not visible(driver, "#confirm"):
        return False, taken
    assert value == "8"
    driver.find_element(By.ID, "confirm-no").click()
    assert not visible(driver, "#confirm") and visible(driver, "#hand .card.playable")  # still our turn
    card = wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#hand .card.playable[data-card='8']")))
    card.click()
    wait.until(lambda d: visible(d, "#confirm"))
    driver.find_element(By.ID, "confirm-yes").click()
    return True, taken


def test_play_a_round_then_watch_its_replay(server, browser, screenshot):
    driver = browser
    wait = WebDriverWait(driver, WAIT)
    driver.get(f"{server}/#/play")
    wait.until(EC.presence_of_element_located((By.ID, "opp-1")))
    Select(driver.find_element(By.ID, "length")).select_by_value("round")
    Select(driver.find_element(By.ID, "opp-1")).select_by_value("checkpoint:v1/ppo_2p")
    # Seed 55 against the version 1 network: the person plays Guard, Guard, Countess and then
    # must play the Princess.
    driver.find_element(By.ID, "seed").send_keys("55")
    screenshot(driver, "web-setup.png")
    driver.find_element(By.ID, "start").click()
    wait.until(lambda d: visible(d, "#board .player"))
    moves = 0
    confirmed = shot = False
    while True:
        wait.until(lambda d: visible(d, "#hand .card.playable") or visible(d, "#round-winner"))
        if visible(driver, "#round-winner"):
            break
        log_before = len(driver.find_elements(By.CSS_SELECTOR, "#log li"))
        asked, taken = play_one_click(driver, screenshot, shot=None if shot else "web-play.png")
        confirmed, shot = confirmed or asked, shot or taken
        wait.until(lambda d, n=log_before: len(d.find_elements(By.CSS_SELECTOR, "#log li")) > n)
        moves += 1
        assert moves < 20, "a round takes at most 8 moves of one player"
    assert moves >= 3 and confirmed and shot, "seed 55: four moves, a Guard's guess, and the Princess last"
    result = driver.find_element(By.ID, "round-winner").text
    assert result.startswith("Round 1 won by")
    log = [li.text for li in driver.find_elements(By.CSS_SELECTOR, "#log li")]
    assert any("Round 1 won by" in line for line in log)
    assert len([line for line in log if line.startswith("You played")]) == moves
    # The person discarded the Princess: the last player in wins without a showdown, so no
    # hand is shown (only a showdown shows the hands still in).
    players = driver.find_elements(By.CSS_SELECTOR, "#board .player")
    assert [bool(p.find_elements(By.CSS_SELECTOR, ".flag.out")) for p in players] == [True, False]
    assert players[1].find_elements(By.CSS_SELECTOR, ".hand .card.back")
    assert not players[1].find_elements(By.CSS_SELECTOR, ".hand .card.small:not(.back)")
    assert console_errors(driver) == []

    # The finished game was saved: open its replay and step through it.
    driver.find_element(By.ID, "replay-link").click()
    wait.until(lambda d: visible(d, "#viewer") and d.find_element(By.ID, "frame-label").text.startswith("1 /"))
    total = int(driver.find_element(By.ID, "frame-label").text.split("/")[1])
    assert total == moves + len([line for line in log if line.startswith("player_1 played")]) + 1
    for step in range(2, total + 1):
        driver.find_element(By.ID, "next").click()
        assert driver.find_element(By.ID, "frame-label").text == f"{step} / {total}"
    driver.find_element(By.ID, "next").click()  # past the end: stays on the last frame
    assert driver.find_element(By.ID, "frame-label").text == f"{total} / {total}"
    driver.find_element(By.ID, "prev").click()
    assert driver.find_element(By.ID, "frame-label").text == f"{total - 1} / {total}"
    driver.find_element(By.ID, "first").click()
    assert driver.find_element(By.ID, "frame-label").text == f"1 / {total}"
    # Every card open: the set-aside card is shown; the checkpoint's decisions show its policy.
    assert "Set aside" in driver.find_element(By.ID, "replay-board").text
    while not visible(driver, "#details"):
        driver.find_element(By.ID, "next").click()
    details = driver.find_element(By.ID, "details").text
    assert "Policy over the legal moves" in details and "Value estimate" in details
    screenshot(driver, "web-replays.png")
    # From the person's seat: no set-aside card, and the checkpoint's reasoning is not shown.
    Select(driver.find_element(By.ID, "view-seat")).select_by_value("0")
    wait.until(lambda d: "Set aside" not in d.find_element(By.ID, "replay-board").text)
    assert not visible(driver, "#details")
    assert console_errors(driver) == []


def test_leaderboard_page(server, browser, screenshot):
    driver = browser
    driver.get(f"{server}/#/leaderboard")
    wait = WebDriverWait(driver, WAIT)
    wait.until(lambda d: visible(d, "#league-table") and visible(d, "#league-chart"))
    rows = driver.find_elements(By.CSS_SELECTOR, "#league-table tr")
    assert len(rows) == 4  # a header and three agents
    assert [th.text for th in rows[0].find_elements(By.TAG_NAME, "th")] == [
        "Rank",
        "Agent",
        "Rating",
        "Win rate",
        "Episodes",
    ]
    assert {"random", "rule", "belief"} <= {r.find_elements(By.TAG_NAME, "td")[1].text for r in rows[1:]}
    assert all(r.find_elements(By.TAG_NAME, "td")[3].text.endswith("%") for r in rows[1:])
    # The chart's bars start at the agents' average: the best agent's bar goes right, the worst's left.
    bars = driver.find_elements(By.CSS_SELECTOR, "#league-chart .rating-row:not(.scale) .fill")
    assert len(bars) == 3
    assert "below" not in bars[0].get_attribute("class") and "below" in bars[-1].get_attribute("class")
    screenshot(driver, "web-leaderboard.png")
    assert console_errors(driver) == []


def test_a_refused_request_is_shown_not_thrown(server, browser):
    driver = browser
    driver.get(f"{server}/?fresh#/play")  # a new page, not just a new hash on the last one
    wait = WebDriverWait(driver, WAIT)
    wait.until(EC.presence_of_element_located((By.ID, "opp-1")))
    Select(driver.find_element(By.ID, "opp-1")).select_by_value("ismcts")
    driver.find_element(By.ID, "opt-1").send_keys("iterations=99999")
    driver.find_element(By.ID, "start").click()
    wait.until(lambda d: visible(d, "#error"))
    assert "option iterations must be in 1..2000" in driver.find_element(By.ID, "error").text
    assert not visible(driver, "#game")
    # The browser reports the 400 answer itself; nothing else may appear.
    assert all("400" in message for message in console_errors(driver))


def test_the_cards_of_a_game_say_what_they_do_under_its_rules(server, browser):
    """The cards on the table showed what they do in classic rules whatever the game's rules:
    under king_ignores_handmaid the King in the person's hand must say it passes a Handmaid."""
    driver = browser
    driver.get(f"{server}/?rules#/play")
    wait = WebDriverWait(driver, WAIT)
    wait.until(EC.presence_of_element_located((By.ID, "opp-1")))
    Select(driver.find_element(By.ID, "length")).select_by_value("round")
    Select(driver.find_element(By.ID, "rules")).select_by_value("king_ignores_handmaid")
    Select(driver.find_element(By.ID, "opp-1")).select_by_value("random")
    driver.find_element(By.ID, "seed").send_keys("1")  # seed 1 deals the person a King
    driver.find_element(By.ID, "start").click()
    wait.until(lambda d: visible(d, "#hand .card"))
    king = driver.find_element(By.CSS_SELECTOR, "#hand .card[data-card='6']")
    assert "does not protect from the King" in king.get_attribute("title")
    reference = driver.find_element(By.ID, "reference").text
    assert "does not protect from the King" in reference and "except the King's" in reference
    assert console_errors(driver) == []


def move_requests(driver) -> int:
    """How many move requests the page has sent (the browser's own record of its fetches)."""
    return driver.execute_script(
        "return performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/move')).length"
    )


def moves_told(driver) -> int:
    """The person's moves in the turn log (read in one go: the log is redrawn after each answer)."""
    return driver.execute_script(
        "return [...document.querySelectorAll('#log li')]"
        ".filter((li) => li.textContent.startsWith('You played')).length"
    )


def start_round(driver, server: str, seed: int, fresh: str) -> None:
    """A one-round game against ``random`` dealt by ``seed``, on a freshly loaded page."""
    driver.get(f"{server}/?{fresh}#/play")
    wait = WebDriverWait(driver, WAIT)
    wait.until(EC.presence_of_element_located((By.ID, "opp-1")))
    Select(driver.find_element(By.ID, "length")).select_by_value("round")
    Select(driver.find_element(By.ID, "opp-1")).select_by_value("random")
    driver.find_element(By.ID, "seed").send_keys(str(seed))
    driver.find_element(By.ID, "start").click()
    wait.until(lambda d: visible(d, "#hand .card.playable"))


def test_a_double_click_sends_one_move(server, browser):
    """A double click sent the move twice: the second answer put an error on the page
    ("not one of your legal moves", "this game is over") and a 400 or 409 in the console."""
    driver = browser
    wait = WebDriverWait(driver, WAIT)
    # Seed 0 deals the person a Guard and a Priest: the Priest has one move (on player_1).
    start_round(driver, server, 0, "double-card")
    priest = driver.find_element(By.CSS_SELECTOR, "#hand .card.playable[data-card='2']")
    ActionChains(driver).double_click(priest).perform()
    wait.until(lambda d: moves_told(d) == 1)
    time.sleep(1)  # time for a second request to be sent and answered
    assert move_requests(driver) == 1 and moves_told(driver) == 1
    assert not visible(driver, "#error")
    assert console_errors(driver) == []
    # The same with a Guard's guess: seed 1 deals a Guard and a King.
    start_round(driver, server, 1, "double-guess")
    driver.find_element(By.CSS_SELECTOR, "#hand .card.playable[data-card='1']").click()
    driver.find_element(By.CSS_SELECTOR, "#picker .target-btn").click()
    guess = wait.until(EC.element_to_be_clickable((By.CSS_SELECTOR, "#picker .guess-btn")))
    ActionChains(driver).double_click(guess).perform()
    wait.until(lambda d: moves_told(d) == 1)
    time.sleep(1)
    assert move_requests(driver) == 1 and moves_told(driver) == 1
    assert not visible(driver, "#error")
    assert console_errors(driver) == []


def test_the_page_lets_the_bots_play_on_once_the_person_is_out(server, browser):
    """The server lets each bot move once per request; seed 39 at 4 players puts the person
    out before their first turn, and the page asks on until the round is over."""
    driver = browser
    wait = WebDriverWait(driver, WAIT)
    driver.get(f"{server}/?play-on#/play")
    wait.until(EC.presence_of_element_located((By.ID, "opp-1")))
    Select(driver.find_element(By.ID, "players")).select_by_visible_text("4")
    for i in (1, 2, 3):
        Select(wait.until(EC.presence_of_element_located((By.ID, f"opp-{i}")))).select_by_value("rule")
    Select(driver.find_element(By.ID, "length")).select_by_value("round")
    driver.find_element(By.ID, "seed").send_keys("39")
    driver.find_element(By.ID, "start").click()
    wait.until(lambda d: visible(d, "#round-winner"))
    asked_on = driver.execute_script(
        "return performance.getEntriesByType('resource').filter((e) => e.name.endsWith('/play-on')).length"
    )
    assert asked_on == 3 and not visible(driver, "#error")
    assert console_errors(driver) == []


def test_a_seed_the_page_cannot_send_exactly_is_refused_on_the_page(server, browser):
    driver = browser
    wait = WebDriverWait(driver, WAIT)
    driver.get(f"{server}/?big-seed#/play")
    wait.until(EC.presence_of_element_located((By.ID, "opp-1")))
    driver.find_element(By.ID, "seed").send_keys("9007199254740993")  # 2**53 + 1: a float would send 2**53
    driver.find_element(By.ID, "start").click()
    wait.until(lambda d: visible(d, "#error"))
    assert "The seed must be a whole number from 0 to 9007199254740991" in driver.find_element(By.ID, "error").text
    assert not visible(driver, "#game")
    assert console_errors(driver) == []

"""cockroach-play in a real Chromium (Debian's ``chromium``, driven by Playwright).

A human seat plays a whole 4-player game against three shipped ``classic-4p`` agents
through the page, with the mouse and the keyboard; after every move the screen is
compared with the server's state. Then the replay page is opened offline and stepped
through, and the page is checked at a phone width. Screenshots go to
``$PLAY_SCREENSHOTS`` (default: the test's temporary directory).
"""

from __future__ import annotations

import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("fastapi")
playwright_api = pytest.importorskip("playwright.sync_api")

from cockroach_env.view import seat_view  # noqa: E402
from play.store import GameStore  # noqa: E402

from .play_server import ManualClock, running_server  # noqa: E402

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(CHROMIUM is None, reason="needs Debian's chromium (apt-get install -y chromium)"),
]


@pytest.fixture(scope="module")
def browser():
    with playwright_api.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()


@pytest.fixture()
def shots(tmp_path):
    folder = Path(os.environ.get("PLAY_SCREENSHOTS", tmp_path))
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def open_setup(browser, url: str, errors: list | None = None):
    """A new page on the server's setup form (its page errors appended to ``errors`` if given)."""
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    if errors is not None:
        page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_selector("#seat-choices select")
    return page


def dom_state(page) -> dict:
    return page.evaluate(
        """() => {
        const chips = (root) => Object.fromEntries(
          [...root.querySelectorAll('.chip')].map(c => [c.dataset.card, Number(c.dataset.count)]));
        const seats = {};
        for (const s of document.querySelectorAll('.seat[data-agent]')) {
          seats[s.dataset.agent] = {
            hand: Number(s.dataset.handSize), collection: chips(s), toAct: s.dataset.toAct === '1'};
        }
        const chain = document.querySelector('#chain');
        return {
          version: Number(document.body.dataset.version),
          hand: Object.fromEntries(
            [...document.querySelectorAll('#hand .card[data-card]')]
              .map(c => [c.dataset.card, Number(c.dataset.count)])),
          seats, toAct: document.querySelector('#turn').dataset.toAct,
          chain: {claim: chain.dataset.claim, holder: chain.dataset.holder, card: chain.dataset.card},
          log: document.querySelectorAll('#log li').length,
          text: document.body.innerText,
        };
    }"""
    )


def check_screen(page, session, seat="player_0") -> None:
    """The page shows exactly the server's state for ``seat``."""
    view = seat_view(session.env, seat)
    screen = dom_state(page)
    assert screen["version"] == session.version
    assert screen["hand"] == view["hand"]
    for agent in view["players"]:
        assert screen["seats"][agent]["hand"] == view["hand_sizes"][agent], agent
        assert screen["seats"][agent]["collection"] == view["collections"][agent], agent
        assert screen["seats"][agent]["toAct"] == (view["to_act"] == agent)
    assert screen["toAct"] == (view["to_act"] or "")
    chain = view["chain"]
    assert screen["chain"] == (
        {"claim": chain["claim"], "holder": chain["holder"], "card": chain["card"] or ""}
        if chain
        else {"claim": "", "holder": "", "card": ""}
    )
    assert screen["log"] == len(session.env.history)


def settle(page, session, seat, timeout=30.0) -> None:
    """Wait until the server waits for ``seat`` (or the game is over) and the page shows that state."""
    deadline = time.monotonic() + timeout
    while not (session.over or session.seat_to_act.agent == seat):
        assert time.monotonic() < deadline, "the agents did not move"
        time.sleep(0.01)
    # polled on a timer, not on animation frames (which a headless browser may hold back for a page in the
    # background); the server's version is read again after each short wait, since it may move on meanwhile (the
    # game's end, its save)
    while True:
        version = session.version
        try:
            page.wait_for_function(f"document.body.dataset.version === '{version}'", polling=50, timeout=1000)
        except playwright_api.TimeoutError:
            shown = page.evaluate("document.body.dataset.version")
            assert time.monotonic() < deadline, f"the page shows version {shown}; the server is at {session.version}"
            continue
        if session.version == version:
            return


def play_one_move(page, rng, use_keyboard: bool) -> None:
    if page.locator("#call-true").count():
        choice = ["t", "f", "p"][int(rng.integers(3 if page.locator("#peek").count() else 2))]
        if use_keyboard:
            page.keyboard.press(choice)
        else:
            page.click({"t": "#call-true", "f": "#call-false", "p": "#peek"}[choice])
        return
    if (
        page.locator("#hand .card.pickable").count() and not page.locator("[data-step=target]").count()
    ):  # Royal replacement
        page.locator("#hand .card.pickable").first.click()
        return
    if page.locator("#hand .card.pickable").count():
        cards = page.locator("#hand .card.pickable")
        k = int(rng.integers(cards.count()))
        if use_keyboard:
            page.keyboard.press(str(k + 1))
        else:
            cards.nth(k).click()
    for step in ("target", "claim"):
        options = page.locator(f"[data-step={step}] button")
        k = int(rng.integers(options.count()))
        if use_keyboard:
            page.keyboard.press(str(k + 1))
        else:
            options.nth(k).click()
    if use_keyboard:
        page.keyboard.press("Enter")
    else:
        page.click("#submit-move")


def test_views_that_arrive_while_the_card_art_loads_end_on_the_latest(browser, tmp_path):
    """A reloaded page waits for its card art before it shows a view; views that the server pushes meanwhile must be
    shown in order, however the art requests are answered, so the page ends on the server's latest version (it once
    ended on an older one and stayed there: each view fetched the art anew and the answers came back out of order).
    """
    store = GameStore(max_games=2, idle_seconds=600)
    with running_server(store) as (url, app):
        errors = []
        page = open_setup(browser, url, errors)
        page.eval_on_selector("#pace", "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
        page.click("#start")
        page.wait_for_selector("#hand .card")
        session = next(iter(store))
        settle(page, session, "player_0")
        held, holding = [], [True]
        page.route(
            "**/api/art/**", lambda route: held.append(route) if holding[0] else route.continue_()
        )  # held until released below
        page.reload()
        deadline = time.monotonic() + 30
        while not held:
            assert time.monotonic() < deadline, "the reloaded page asked for no card art"
            page.wait_for_timeout(20)
        token = session.seats[0].token
        for pace in (5, 0):  # two more versions, pushed to the page while its art is held
            response = page.request.post(
                f"{url}/api/games/{session.game_id}/pace", data={"token": token, "pace_ms": pace}
            )
            assert response.ok, response.text()
        page.wait_for_timeout(500)  # the pushed views reach the page
        holding[0] = False
        while held:
            held.pop().continue_()  # the latest request is answered first
            page.wait_for_timeout(50)
        settle(page, session, "player_0")
        check_screen(page, session)
        assert not errors, errors


def test_a_page_refused_for_good_stops_reconnecting(browser):
    """A game that expired (4410) or never was (4404) closes the page's WebSocket for good: the page says so and opens
    no other (it once reconnected forever, as the server refused at the handshake, which a page sees as 1006).
    """
    clock = ManualClock()
    store = GameStore(max_games=2, idle_seconds=600, clock=clock)
    with running_server(store) as (url, app):
        page = open_setup(browser, url)
        sockets = []
        page.on("websocket", lambda ws: sockets.append(ws))
        page.click("#start")
        page.wait_for_selector("#hand .card")
        page.wait_for_function("document.querySelector('#status').dataset.connected === '1'")
        session = next(iter(store))
        clock.advance(601)
        gone = page.request.get(f"{url}/api/games/{session.game_id}?token={session.seats[0].token}")
        assert gone.status == 404
        page.wait_for_function("document.querySelector('#status').textContent.startsWith('game closed')")
        page.wait_for_timeout(2500)  # a page that retries does so after 0.5 s, then 1 s
        assert len(sockets) == 1, f"the page opened {len(sockets)} WebSockets"
        other = browser.new_page()
        opened = []
        other.on("websocket", lambda ws: opened.append(ws))
        other.goto(f"{url}/?game=unknown&token=x")
        other.wait_for_function("document.querySelector('#status').textContent.startsWith('game closed')")
        other.wait_for_timeout(2500)
        assert len(opened) == 1, f"the page opened {len(opened)} WebSockets"


def test_a_second_key_press_does_not_answer_the_next_card(browser):
    """T pressed twice answers the card on the table once: the second press, sent before the first answer came back,
    must not answer the card the agent offers next, which the human has not seen (in the duel an honest agent's claim is
    true, so calling it true gives it the card and it offers the next one at once).
    """
    store = GameStore(max_games=2, idle_seconds=600)
    with running_server(store) as (url, app):
        page = open_setup(browser, url)
        page.select_option("#players", "2")
        page.wait_for_selector("#seat-1 option[value=honest]", state="attached")
        page.select_option("#seat-1", "honest")
        page.fill("#seed", "3")
        page.eval_on_selector("#pace", "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
        page.click("#start")
        page.wait_for_selector("#hand .card")
        session = next(iter(store))
        assert [s.label for s in session.seats] == ["human", "honest"]
        rng = np.random.default_rng(3)
        while True:  # the human offers until the agent offers back
            settle(page, session, "player_0")
            if page.locator("#call-true").count():
                break
            before = len(session.actions)
            play_one_move(page, rng, use_keyboard=False)
            while len(session.actions) == before:
                page.wait_for_timeout(10)
        held = []
        page.route(
            "**/move", lambda route: held.append(route)
        )  # both presses reach the server only when released below
        page.keyboard.press("t")
        page.keyboard.press("t")
        deadline = time.monotonic() + 10
        while len(held) < 2:
            assert time.monotonic() < deadline, f"the page sent {len(held)} moves for two presses"
            page.wait_for_timeout(10)
        answered = len(session.actions)
        held[0].continue_()
        while not (
            len(session.actions) > answered + 1
            and session.seat_to_act.agent == "player_0"
            and session.env.game.phase.value == "respond"
        ):
            assert time.monotonic() < deadline, "the agent did not offer the next card to the human"
            page.wait_for_timeout(10)
        actions = list(session.actions)
        with page.expect_response(lambda response: response.request == held[1].request) as second:
            held[1].continue_()
        assert second.value.status == 409 and "chosen on version" in second.value.text()
        assert session.actions == actions, "the second press answered a card the human had not seen"
        page.unroute("**/move")
        settle(page, session, "player_0")
        check_screen(page, session)
        assert page.locator("#call-true").count(), "the human answers the new card"


def test_every_key_shown_on_a_card_picks_it_in_a_royal_hand_of_many_kinds(browser):
    """A Royal hand holds up to 16 kinds of card: a key shown on a card must be one key (1 to 9, then 0) that picks it,
    not "11" (which cannot be pressed) or "10" (pressed as 0).
    """
    store = GameStore(max_games=2, idle_seconds=600)
    with running_server(store) as (url, app):
        page = open_setup(browser, url)
        page.select_option("#edition", "royal")
        page.select_option("#players", "3")
        page.wait_for_selector("#seat-2", state="attached")
        page.fill("#seed", "30")  # player_0 starts, holding 12 kinds of card
        page.click("#start")
        page.wait_for_selector("#hand .card.pickable")
        session = next(iter(store))
        assert session.config.edition == "royal" and session.seat_to_act is session.seats[0]
        cards = page.locator("#hand .card.pickable")
        assert cards.count() >= 11
        keys = {}
        for k in range(cards.count()):
            shown = cards.nth(k).locator(".key")
            if shown.count():
                keys[shown.inner_text()] = cards.nth(k).get_attribute("data-card")
        assert sorted(keys) == sorted("1234567890"), f"the number keys name the first ten cards: {sorted(keys)}"
        for key, card in keys.items():
            page.keyboard.press(key)
            assert page.get_attribute("#hand .card.selected", "data-card") == card, key
            page.keyboard.press("Escape")


def test_your_own_agent_fills_every_seat_that_is_not_human(browser):
    store = GameStore(max_games=2, idle_seconds=600)
    with running_server(store) as (url, app):
        page = open_setup(browser, url)
        page.select_option("#seat-0", "random")
        page.select_option("#seat-1", "human")
        page.fill("#custom-agent", "baselines:HonestAgent")
        page.eval_on_selector("#pace", "e => { e.value = 3000; }")
        page.click("#start")
        page.wait_for_selector("#hand .card")
        session = next(iter(store))
        assert [s.label for s in session.seats] == [
            "baselines:HonestAgent",
            "human",
            "baselines:HonestAgent",
            "baselines:HonestAgent",
        ]


def test_a_human_plays_a_whole_game_against_three_shipped_agents(browser, shots, tmp_path):
    store = GameStore(max_games=4, idle_seconds=600)
    with running_server(store, save_dir=str(tmp_path / "games")) as (url, app):
        errors = []
        page = open_setup(browser, url, errors)
        assert [page.input_value(f"#seat-{k}") for k in range(4)] == ["human", "classic-4p", "classic-4p", "classic-4p"]
        page.fill("#seed", "11")
        page.eval_on_selector("#pace", "e => { e.value = 0; e.dispatchEvent(new Event('input')); }")
        page.click("#start")
        page.wait_for_selector("#hand .card")
        session = next(iter(store))
        assert [s.label for s in session.seats] == ["human", "classic-4p", "classic-4p", "classic-4p"]
        rng = np.random.default_rng(11)
        moves, shot = 0, False
        while True:
            settle(page, session, "player_0")
            check_screen(page, session)
            if session.over:
                break
            if not shot and moves >= 6 and page.locator("#call-true").count():  # a card in play, the human to answer
                page.screenshot(path=str(shots / "play.png"))
                shot = True
            if moves == 10:  # the page goes away mid-game and comes back: the server kept the game
                page.reload()
                page.wait_for_selector("#hand .card")
                settle(page, session, "player_0")
                check_screen(page, session)
            before = len(session.actions)
            play_one_move(page, rng, use_keyboard=moves % 2 == 1)
            deadline = time.monotonic() + 10
            while len(session.actions) == before:  # the move reached the server
                assert time.monotonic() < deadline, f"the page sent no move: {page.inner_text('#move-error')}"
                time.sleep(0.01)
            moves += 1
            assert moves < 400
        page.wait_for_selector("#end:not([hidden])")
        loser = session.env.possible_agents[session.env.game.loser]
        assert page.inner_text("#end-title").startswith(loser)
        assert page.locator(".reveal-claims li").count() == sum(
            1 for e in session.env.history if e["type"] in ("offer", "pass")
        )
        page.screenshot(path=str(shots / "play-end.png"))
        assert moves >= 5 and shot and not errors, errors
        assert session.saved_path and os.path.exists(session.saved_path)

        # the replay page, opened offline and stepped through
        token = session.seats[0].token
        html = page.request.get(f"{url}/api/games/{session.game_id}/replay?token={token}").text()
        replay_file = tmp_path / "replay.html"
        replay_file.write_text(html)
        replay = browser.new_page(viewport={"width": 1280, "height": 900})
        replay.route(
            "**/*", lambda route: route.abort() if not route.request.url.startswith("file:") else route.continue_()
        )
        replay.goto(replay_file.as_uri())
        steps = len(session.actions)
        for step in range(1, steps + 1):
            replay.keyboard.press("ArrowRight")
            assert replay.evaluate("document.body.dataset.step") == str(step)
            if step % 7 == 0:
                assert replay.locator(".hidden-card").count() == 0, "hidden hands stay hidden without the reveal"
                assert replay.locator("#centre .card[data-card]").evaluate_all(
                    "cards => cards.every(c => c.dataset.card === '')"
                )
        assert replay.locator("#log li").count() == len(session.env.history)
        marks = replay.locator("[data-claim-mark]").count()
        assert marks == sum(1 for e in session.env.history if e["type"] in ("offer", "pass")), (
            "every claim marked once its card is revealed"
        )
        replay.keyboard.press("ArrowLeft")
        assert replay.evaluate("document.body.dataset.step") == str(steps - 1)
        replay.keyboard.press("Home")
        replay.check("#reveal")
        assert replay.locator(".hidden-card").count() > 0
        replay.screenshot(path=str(shots / "replay.png"))

        # a phone: the page fits the width and still shows the hand and the actions
        phone = browser.new_page(
            viewport={"width": 390, "height": 844}, device_scale_factor=2, is_mobile=True, has_touch=True
        )
        phone.goto(url)
        phone.wait_for_selector("#seat-choices select")
        phone.eval_on_selector("#pace", "e => { e.value = 0; }")
        phone.click("#start")
        phone.wait_for_selector("#hand .card")
        second = [s for s in store if s is not session][0]
        settle(phone, second, "player_0")
        check_screen(phone, second)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390
        box = phone.locator("#hand .card").first.bounding_box()
        assert box["width"] >= 40 and box["x"] >= 0
        phone.screenshot(path=str(shots / "play-phone.png"), full_page=True)
        assert phone.evaluate("document.documentElement.scrollWidth") <= 390

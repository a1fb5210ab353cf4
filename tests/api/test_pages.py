"""The pages as a plain HTTP client sees them (no JavaScript): the arbiter's record rendered
whole on the server once the operator key comes in a form's body or a header (never a URL),
each seat's perspective without a card hidden from it, the printable finding, a table page
that holds no game at all, and a Content-Security-Policy with no inline script."""

from __future__ import annotations

import html
import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from services.pages import STATIC
from services.pages.words import card_name, card_sign
from tests.api.conftest import FIRST_TRICK, OPERATOR, OPERATOR_KEY, Api, Table

INLINE_SCRIPT = re.compile(r"<script(?![^>]*\bsrc=)[^>]*>")


async def with_findings(api: Api) -> Table:
    """Two deals: seat 1 draws out of turn in the first; the leader of the second declares
    31 with no trick taken."""
    table = await api.create(rules={"match_target": 2})
    for seat, command in FIRST_TRICK:
        await api.play(table, seat, command)
    await api.play(table, 1, {"type": "draw"})
    shown = await api.get(f"/games/{table.game_id}")
    await api.play(table, shown["turn"], {"type": "declare", "claim": "thirty_one"})
    return table


def secret(html: str, card: str) -> bool:
    """The card is nowhere in the page: not as data, not by name, not by sign."""
    return all(s not in html for s in (f'data-card="{card}"', card_name(card), card_sign(card)))


async def test_without_a_key_the_arbiter_page_is_a_form_that_posts_it(api: Api) -> None:
    table = await with_findings(api)
    answer = await api.client.get(f"/arbiter/games/{table.game_id}")
    assert answer.status_code == 200 and answer.headers["content-type"].startswith("text/html")
    page = answer.text
    assert '<form id="key-form" method="post"' in page and 'type="password" name="key"' in page
    assert 'id="timeline"' not in page and "data-card" not in page
    policy = answer.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "unsafe-inline" not in policy
    assert not INLINE_SCRIPT.search(page) and " style=" not in page


async def test_the_posted_key_renders_the_whole_record_without_javascript(api: Api) -> None:
    table = await with_findings(api)
    audit = await api.get(f"/games/{table.game_id}/audit")
    draw, claim = audit["findings"]
    answer = await api.client.post(
        f"/arbiter/games/{table.game_id}", data={"key": OPERATOR_KEY, "version": "1"}
    )
    assert answer.status_code == 200, answer.text
    page = answer.text
    last = audit["version"]
    # the timeline: every version, with its event, seat, time and request id
    assert all(f'id="v{v}"' in page for v in range(1, last + 1))
    assert "seat 1 (p1) draws" in page or "penalty: out of turn draw by seat 1 (p1)" in page
    assert page.count('class="step finding') >= 4
    # the table at version 1, then at the finding: hands, stock in order, piles with points
    at = await api.client.post(
        f"/arbiter/games/{table.game_id}",
        data={"key": OPERATOR_KEY, "version": str(draw["versions"][0])},
    )
    shown = at.text
    assert f'data-version="{draw["versions"][0]}"' in shown
    assert "25 points" in shown  # seat 0's pile: the trick it took
    replay = await api.get(f"/games/{table.game_id}/replay", version=draw["versions"][0])
    stock = replay["view"]["stock"]
    order = [shown.index(f'data-card="{c}"', shown.index('id="stock"')) for c in stock]
    assert order == sorted(order)  # in the stock's order, top first
    # the evidence of both findings
    assert "docs/rules.md §4" in shown and "seat 0 (p0) to draw" in shown
    assert "docs/rules.md §5" in shown and "had 0, needed 31" in shown
    assert f"seat {claim['seat']} (p{claim['seat']}) to lead" in shown
    assert 'id="fairness"' in shown and "DOES NOT VERIFY" not in shown
    # the key came in the body: no link or form of the page carries it in a URL
    assert "key=" not in shown


async def test_a_header_key_renders_the_same_record_and_a_wrong_key_is_refused(
    api: Api,
) -> None:
    table = await with_findings(api)
    path = f"/arbiter/games/{table.game_id}"
    by_header = await api.client.get(path, headers=OPERATOR, params={"version": 5})
    assert by_header.status_code == 200 and 'data-version="5"' in by_header.text
    assert OPERATOR_KEY not in by_header.text  # only a page without JavaScript needs it back
    wrong = await api.client.post(path, data={"key": "not-the-key"})
    assert wrong.status_code == 200 and "not the operator key" in wrong.text
    player = await api.client.post(path, data={"key": table.tokens[0]})
    assert player.status_code == 200 and "player's token" in html.unescape(player.text)
    assert 'id="timeline"' not in wrong.text + player.text


async def test_a_seat_or_a_version_the_game_lacks_is_refused_not_shown_as_the_arbiter(
    api: Api,
) -> None:
    """`?as=7` at a table of two, and a version past the game's last, answered as the
    API's replay answers them: never quietly the arbiter's latest view."""
    table = await with_findings(api)
    path = f"/arbiter/games/{table.game_id}"
    last = await api.version(table)
    seat = await api.client.get(path, headers=OPERATOR, params={"as": 7})
    assert seat.status_code == 400 and seat.json()["errors"][0]["key"] == "as"
    assert "no seat 7" in seat.json()["detail"]
    late = await api.client.get(path, headers=OPERATOR, params={"version": last + 1})
    assert late.status_code == 404 and late.json()["code"] == "version_not_found"
    assert late.json()["version"] == last
    posted = await api.client.post(path, data={"key": OPERATOR_KEY, "perspective": "2"})
    assert posted.status_code == 400 and posted.json()["errors"][0]["key"] == "perspective"
    fine = await api.client.get(path, headers=OPERATOR, params={"version": last, "as": 1})
    assert fine.status_code == 200 and 'data-viewer="1"' in fine.text


@pytest.mark.parametrize("seat", [0, 1])
async def test_as_a_seat_saw_it_the_page_holds_no_card_hidden_from_that_seat(
    api: Api, seat: int
) -> None:
    table = await with_findings(api)
    audit = await api.get(f"/games/{table.game_id}/audit")
    other = 1 - seat
    for version in (9, 12, audit["findings"][0]["versions"][0]):
        page = (
            await api.client.get(
                f"/arbiter/games/{table.game_id}",
                headers=OPERATOR,
                params={"version": version, "as": seat},
            )
        ).text
        assert f'data-viewer="{seat}"' in page
        whole = (await api.get(f"/games/{table.game_id}/replay", version=version))["view"]
        trump = whole["trump"]
        hidden = set(whole["seats"][other]["hand"]) | set(whole["stock"]) - {trump}
        for card in hidden:
            assert secret(page, card), (version, card)
        for card in whole["seats"][seat]["hand"]:
            assert f'data-card="{card}"' in page  # its own hand is there
        assert "not yet seen from here" in page  # later versions: their kind only
        assert "game seed" in page and "not revealed to this viewer" in page


async def test_a_printable_summary_of_a_finding(api: Api) -> None:
    table = await with_findings(api)
    answer = await api.client.post(
        f"/arbiter/games/{table.game_id}", data={"key": OPERATOR_KEY, "print": "1"}
    )
    assert answer.status_code == 200
    assert 'id="printable"' in answer.text and "false_declaration" in answer.text
    assert 'id="timeline"' not in answer.text
    assert (
        "seat due to draw"
        in (
            await api.client.get(
                f"/arbiter/games/{table.game_id}", headers=OPERATOR, params={"print": "0"}
            )
        ).text
    )
    # a finding the game does not have is a 404, as a version past its last is (it gave
    # the whole page, as if no finding had been asked for)
    path = f"/arbiter/games/{table.game_id}"
    for answer in (
        await api.client.get(path, headers=OPERATOR, params={"print": "2"}),
        await api.client.post(path, data={"key": OPERATOR_KEY, "print": "99"}),
    ):
        assert answer.status_code == 404, answer.text
        assert answer.json()["code"] == "not_found"
        assert "has findings 0 to 1" in answer.json()["detail"]


async def test_the_table_page_holds_no_game_and_its_files_are_served(api: Api) -> None:
    table = await with_findings(api)
    answer = await api.client.get(f"/play/{table.game_id}")
    assert answer.status_code == 200
    assert "data-card" not in answer.text and 'id="token-form"' in answer.text
    assert not INLINE_SCRIPT.search(answer.text)
    assert "script-src 'self'" in answer.headers["content-security-policy"]
    for path in ("/play/no-such-game", "/arbiter/games/no-such-game"):
        # a client is answered with problem details, as every error is
        missing = await api.client.get(path)
        assert missing.status_code == 404 and missing.json()["code"] == "game_not_found"
        # a browser following a stale link reads a page, with the pages' headers
        browser = {"Accept": "text/html,application/xhtml+xml,*/*;q=0.8"}
        for method in ("GET", "POST"):
            page = await api.client.request(method, path, headers=browser)
            assert page.status_code == 404, (method, path)
            assert page.headers["content-type"].startswith("text/html")
            assert "holds no game with that id" in page.text
            assert "script-src 'self'" in page.headers["content-security-policy"]
            assert page.headers["referrer-policy"] == "no-referrer"
    for name, kind in (
        ("table.js", "javascript"),
        ("arbiter.js", "javascript"),
        ("pages.css", "css"),
    ):
        served = await api.client.get(f"/pages/static/{name}")
        assert served.status_code == 200 and kind in served.headers["content-type"]


@pytest.mark.slow  # builds the whole document
async def test_the_pages_stay_out_of_the_openapi_document(api: Api) -> None:
    paths = (await api.get("/schema/openapi.json", headers={}))["paths"]
    assert not [p for p in paths if p.startswith(("/arbiter", "/play", "/pages"))]


def test_the_pages_files_ship_in_the_package() -> None:
    """`pip install .` (the image) copies package data only as pyproject names it."""
    root = Path(__file__).resolve().parents[2]
    with open(root / "pyproject.toml", "rb") as f:
        shipped = tomllib.load(f)["tool"]["setuptools"]["package-data"]["services.pages"]
    files = sorted(p.name for p in STATIC.iterdir())
    assert {"table.js", "arbiter.js", "pages.css"} <= set(files)
    assert all(any(fnmatch(f"static/{name}", glob) for glob in shipped) for name in files)


async def test_names_are_text_never_markup(api: Api) -> None:
    hostile = '<img src=x onerror="alert(1)">'
    body = {"seats": [{"name": hostile}, {"name": "bob"}], "seed": "escape"}
    created = (await api.client.post("/games", json=body, headers=OPERATOR)).json()
    page = await api.client.get(f"/arbiter/games/{created['game_id']}", headers=OPERATOR)
    assert page.status_code == 200
    assert hostile not in page.text and html.escape(hostile) in page.text


async def test_the_fairness_of_a_seat_shuffled_deal_names_the_seeds(api: Api) -> None:
    table = await api.create(rules={"shuffle": "seats"}, deck=None)
    for seat in (0, 1):
        await api.play(table, seat, {"type": "seed", "value": f"seed-of-p{seat}"})
    page = await api.client.get(f"/arbiter/games/{table.game_id}", headers=OPERATOR)
    fairness = page.text[page.text.index('id="fairness"') :]
    assert "seed-of-p0" in fairness and "seed-of-p1" in fairness
    assert "server seed verified" in fairness and "MISMATCH" not in fairness


async def test_the_token_form_never_puts_the_token_in_a_url(api: Api) -> None:
    """Before (or without) table.js the form posts: the token travels in the body, and the
    answer holds it nowhere. A token that came in the query anyway is not echoed either."""
    table = await with_findings(api)
    token = "tok-" + "s3cr3t" * 4
    page = (await api.client.get(f"/play/{table.game_id}")).text
    form = page[page.index('<form id="token-form"') :]
    assert form.startswith('<form id="token-form" method="post"')
    assert "action=" not in form[: form.index(">")]  # posts back to the page itself
    posted = await api.client.post(f"/play/{table.game_id}", data={"token": token})
    assert posted.status_code == 200 and token not in posted.text
    assert "needs JavaScript" in posted.text and 'id="token-form"' in posted.text
    assert posted.headers["cache-control"] == "no-store"
    linked = await api.client.get(f"/play/{table.game_id}", params={"token": token})
    assert linked.status_code == 200 and token not in linked.text
    assert "does not belong in a link" in linked.text and "#seat=" in html.unescape(linked.text)
    assert "does not belong" not in page  # the page itself says nothing of the kind
    gone = await api.client.post("/play/no-such-game", data={"token": token})
    assert gone.status_code == 404 and token not in gone.text


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("version", "²"),
        ("version", "9" * 5000),
        ("version", "1.5"),
        ("version", "0"),  # versions count from 1, as the GET's
        ("perspective", "²"),
        ("perspective", "nobody"),
        ("as", "²"),
        ("print", "²"),
        ("slider", "³"),
        ("slider", "0"),
    ],
)
async def test_a_posted_number_that_is_no_number_is_a_400(api: Api, field: str, value: str) -> None:
    table = await with_findings(api)
    form = {"key": OPERATOR_KEY, field: value} | ({"show": "1"} if field == "slider" else {})
    answer = await api.client.post(f"/arbiter/games/{table.game_id}", data=form)
    assert answer.status_code == 400, answer.text
    assert answer.headers["content-type"].startswith("application/problem+json")
    assert field in answer.json()["detail"]


@pytest.mark.parametrize("field", ["version", "key", "as", "slider"])
async def test_a_form_field_given_twice_with_two_values_is_a_400_as_in_a_query(
    api: Api, field: str
) -> None:
    """Which of the two would count is the reader's guess (the page's GET refuses a
    repeated parameter): the form's POST said the first. The same value twice says one."""
    table = await with_findings(api)
    values = {"version": ("1", "3"), "key": (OPERATOR_KEY, "x"), "as": ("arbiter", "0")}
    first, second = values.get(field, ("1", "2"))
    form: dict[str, str | list[str]] = {"key": OPERATOR_KEY, "show": "1"}
    form[field] = [first, second]
    answer = await api.client.post(f"/arbiter/games/{table.game_id}", data=form)
    assert answer.status_code == 400, answer.text
    assert answer.json()["detail"] == f"{field}: given twice with different values: send it once"
    assert answer.json()["errors"] == [
        {
            "key": field,
            "message": "given twice with different values: send it once",
            "source": "body",
        }
    ]
    same = {"key": OPERATOR_KEY, "version": ["3", "3"]}
    answer = await api.client.post(f"/arbiter/games/{table.game_id}", data=same)
    assert answer.status_code == 200 and 'data-version="3"' in answer.text, answer.text


@pytest.mark.parametrize(
    "params",
    [
        {"as": "²"},
        {"as": "nobody"},
        {"version": "9" * 5000},
        # digits only, as the API's replay takes a version: the framework read these as 1
        {"version": "1e0"},
        {"version": "1.0"},
        {"version": "0"},
        {"print": "0.0"},
        {"print": "1e3"},
    ],
)
async def test_a_queried_perspective_or_version_that_is_no_number_is_a_400(
    api: Api, params: dict[str, str]
) -> None:
    table = await with_findings(api)
    answer = await api.client.get(
        f"/arbiter/games/{table.game_id}", params=params, headers=OPERATOR
    )
    assert answer.status_code == 400, answer.text
    # the good values still answer
    for good in ({"as": "0"}, {"as": "arbiter"}, {"version": "1"}):
        shown = await api.client.get(
            f"/arbiter/games/{table.game_id}", params=good, headers=OPERATOR
        )
        assert shown.status_code == 200


async def test_the_pages_files_are_not_sniffed_and_are_revalidated(api: Api) -> None:
    for name in ("table.js", "arbiter.js", "pages.css"):
        served = await api.client.get(f"/pages/static/{name}")
        assert served.status_code == 200
        assert served.headers["x-content-type-options"] == "nosniff"
        assert served.headers["cache-control"] == "no-cache"
        assert "script-src 'self'" in served.headers["content-security-policy"]


async def test_the_table_while_dealing_says_who_leads_not_who_deals(api: Api) -> None:
    """While the cards go out the server deals: the turn line names the seat that will
    lead once they are out, never a seat "to deal"."""
    table = await api.create()
    dealing = await api.client.post(
        f"/arbiter/games/{table.game_id}", data={"key": OPERATOR_KEY, "version": "3"}
    )
    assert dealing.status_code == 200, dealing.text
    assert "leads once the cards are out" in dealing.text
    assert " to deal<" not in dealing.text and " to deal " not in dealing.text


async def pot_paid_and_conceded(api: Api) -> Table:
    """pay_pot: p0 declares 31 with nothing taken (a pot of 1 to p1), leads, and p1 concedes:
    the stake p0 wins and the pot it owes cancel out, and the game is over at 0 to 0."""
    table = await api.create(rules={"closed_discard": True, "false_declaration": "pay_pot"})
    await api.play(table, 0, {"type": "declare", "claim": "thirty_one"})
    await api.play(table, 0, {"type": "lead", "cards": ["AS"]})
    await api.play(table, 1, {"type": "concede"})
    return table


async def test_the_settlement_of_a_deal_with_a_pot_says_what_the_pot_took(api: Api) -> None:
    table = await pot_paid_and_conceded(api)
    assert (await api.view(table))["score"] == [0, 0]
    page = html.unescape(
        (await api.client.get(f"/arbiter/games/{table.game_id}", headers=OPERATOR)).text
    )
    assert "seat 0 (p0) owes 1 to every other side (the pot for a false 31)" in page
    assert (
        "deal 1 settled at stake 1: p0 +0, p1 +0, net of the pot: "
        "seat 0 (p0) owes 1 to every other side<"
    ) in page
    assert "(conceded)" in page and "pot_paid by seat" not in page


async def test_the_fairness_headers_are_distinct_and_the_api_files_are_linked(api: Api) -> None:
    """Two columns were headed "commitment" and two "deal"; the record now links the API's
    audit and bundle of the game, which the page's script fetches with the key in a header
    (no key in any link)."""
    table = await with_findings(api)
    page = (await api.client.get(f"/arbiter/games/{table.game_id}", headers=OPERATOR)).text
    fairness = page[page.index('id="fairness"') :]
    headers = re.findall(r"<th>([^<]*)</th>", fairness[: fairness.index("</thead>")])
    assert len(headers) == len(set(headers)) == 8, headers
    assert f'href="/games/{table.game_id}/audit"' in page
    assert f'href="/games/{table.game_id}/bundle"' in page
    assert OPERATOR_KEY not in page and "token=" not in page and "key=" not in page
    evidence = page[page.index('id="findings"') :]
    assert "[3, 3]" not in evidence and "p0 " in evidence  # hand sizes in words, no list


async def test_the_pages_have_an_icon_of_their_own(api: Api) -> None:
    """No <link rel="icon">: every browser then asked for /favicon.ico, a 404 and an error
    in the console of both pages."""
    table = await with_findings(api)
    for path in (f"/arbiter/games/{table.game_id}", f"/play/{table.game_id}"):
        page = (await api.client.get(path, headers=OPERATOR)).text
        icon = re.search(r'<link rel="icon" type="image/svg\+xml" href="([^"]+)">', page)
        assert icon is not None and icon[1].startswith("data:image/svg+xml,"), path


async def test_a_token_in_the_query_is_answered_with_this_games_own_link(api: Api) -> None:
    table = await with_findings(api)
    linked = await api.client.get(f"/play/{table.game_id}", params={"token": "x"})
    said = html.unescape(linked.text)
    assert f"Share /play/{table.game_id}#seat=<token> instead" in said
    assert "{id}" not in said


async def test_a_file_path_with_a_nul_is_no_file(api: Api) -> None:
    """A NUL in a static file's path was a 500 with an error-level traceback in the log
    (the file system refuses such a name): any client could fill the error logs. It names
    no file: 404, as any path serving nothing."""
    for path in (
        "/pages/static/%00",
        "/pages/static/table.js%00.css",
        "/schema/assets/%00",
        "/schema/assets/swagger-ui.css%00",
    ):
        answer = await api.client.get(path)
        assert answer.status_code == 404, (path, answer.text)
        assert answer.json()["code"] == "not_found"
    assert (await api.client.get("/pages/static/table.js")).status_code == 200


async def test_a_file_not_there_is_said_so_without_where_it_was_looked_for(api: Api) -> None:
    """The file router's 404 named the absolute path it looked in (the install's
    directory, the virtualenv's, its Python's version): any client could read it."""
    for path in (
        "/pages/static/%2e/",
        "/pages/static/nope.js",
        "/schema/assets/%2e/",
        "/schema/assets/x",
    ):
        answer = await api.client.get(path)
        assert answer.status_code == 404, (path, answer.text)
        problem = answer.json()
        assert (problem["code"], problem["detail"]) == ("not_found", "no such file"), problem

"""The published contract is one a generator gets right: human operation ids, security only
where a token is needed, discriminators on every tagged union, `additionalProperties: false`
where unknown fields are refused, examples for every request body and error, the streams as
text/event-stream (and in AsyncAPI), and a reference UI that needs no network."""

from __future__ import annotations

import asyncio
import json
import re
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from domain.commands import PlayerCommand
from domain.errors import BadOption
from domain.events import EVENT_TYPES
from domain.naming import snake
from domain.rules import Rules, check
from services.config import Settings
from services.http.contract import RULE_BOUNDS, STREAMS, WHO, operations
from services.http.problems import PROBLEMS
from services.http.schemas import COMMAND_EXAMPLES
from services.live.sse import MESSAGES
from tests.api.conftest import OPERATOR, Api, undocumented_headers

# Real receivers, timers, documents or whole games per case: left out of make test-fast.
pytestmark = pytest.mark.slow

Doc = dict[str, Any]
PUBLIC_TAGS = {"health", "problems"}
HUMAN_ID = re.compile(r"^[a-z]+(?:[A-Z][a-z]+)+$")  # createGame, sendCommand, getView


async def openapi(api: Api) -> Doc:
    answer = await api.client.get("/schema/openapi.json")
    assert answer.status_code == 200
    doc: Doc = answer.json()
    return doc


def refs(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        if isinstance(value.get("$ref"), str):
            yield value["$ref"]
        for item in value.values():
            yield from refs(item)
    elif isinstance(value, list):
        for item in value:
            yield from refs(item)


async def test_every_operation_has_a_human_operation_id(api: Api) -> None:
    doc = await openapi(api)
    ids = [op.get("operationId", "") for _, _, op in operations(doc)]
    assert [i for i in ids if not HUMAN_ID.match(i)] == []
    assert len(set(ids)) == len(ids)
    assert {"createGame", "sendCommand", "getView", "streamView", "createStreamTicket"} <= set(ids)


async def test_only_operations_that_need_a_token_ask_for_one(api: Api) -> None:
    doc = await openapi(api)
    assert "security" not in doc  # no blanket requirement
    for path, method, op in operations(doc):
        public = bool(PUBLIC_TAGS & set(op.get("tags", [])))
        assert bool(op.get("security")) is not public, (method, path)
        if not public:
            assert {"bearer": []} in op["security"]
            assert "401" in op["responses"], (method, path)
    stream = doc["paths"]["/games/{game_id}/stream"]["get"]
    assert {"ticket": []} in stream["security"]


async def test_commands_events_and_messages_carry_discriminator_mappings(api: Api) -> None:
    doc = await openapi(api)
    schemas = doc["components"]["schemas"]
    body = doc["paths"]["/games/{game_id}/commands"]["post"]["requestBody"]
    command = body["content"]["application/json"]["schema"]
    commands = {snake(t.__name__) for t in PlayerCommand.__args__}
    assert command["discriminator"]["propertyName"] == "type"
    assert set(command["discriminator"]["mapping"]) == commands
    event = schemas["Recorded"]["properties"]["event"]
    assert set(event["discriminator"]["mapping"]) == set(EVENT_TYPES)
    for tag, ref in event["discriminator"]["mapping"].items():
        target = schemas[ref.rsplit("/", 1)[1]]
        assert target["properties"]["type"]["const"] == tag
    frame = schemas["StreamFrame"]
    assert set(frame["discriminator"]["mapping"]) == set(MESSAGES)


async def test_a_discriminator_names_a_property_every_member_carries(api: Api) -> None:
    """OpenAPI: a discriminator's property is required in each member. The feed's entry
    frame has no `event` line on the wire, so the feed's union is told apart without one."""
    doc = await openapi(api)
    schemas = doc["components"]["schemas"]
    found = 0
    for tag in _values_of(doc, "discriminator"):
        for ref in tag["mapping"].values():
            member = schemas[ref.rsplit("/", 1)[1]]
            assert tag["propertyName"] in member.get("required", []), (ref, tag)
            found += 1
    assert found > 40
    assert "discriminator" not in schemas["FeedFrame"]
    assert "event" not in schemas["FeedEntryFrame"]["required"]


async def test_every_ref_resolves(api: Api) -> None:
    doc = await openapi(api)
    for ref in refs(doc):
        _, components, section, name = ref.split("/")
        assert name in doc[components][section], ref


async def test_bodies_that_refuse_unknown_fields_say_so(api: Api) -> None:
    schemas = (await openapi(api))["components"]["schemas"]
    for name in ("CreateGame", "SeatSpec", "Rules", "Draw", "Lead", "DaveAnswer", "CardsLed"):
        assert schemas[name]["additionalProperties"] is False, name
    assert "additionalProperties" not in schemas["TableView"]  # answers may grow fields


async def test_closed_vocabularies_are_enums(api: Api) -> None:
    schemas = (await openapi(api))["components"]["schemas"]
    assert set(schemas["ProblemDetails"]["properties"]["code"]["enum"]) == set(PROBLEMS)
    assert "finished" in schemas["TableView"]["properties"]["phase"]["enum"]
    assert set(schemas["Declare"]["properties"]["claim"]["enum"]) == {
        "thirty_one",
        "bura",
        "four_aces",
    }
    reason = schemas["DealWon"]["properties"]["reason"]
    assert "most_points" in reason["enum"]
    viewer = schemas["TableView"]["properties"]["viewer"]
    assert set(viewer["enum"]) == {"seat", "spectator", "arbiter"}


async def test_every_request_body_and_error_has_examples(api: Api) -> None:
    doc = await openapi(api)
    assert set(COMMAND_EXAMPLES) == {snake(t.__name__) for t in PlayerCommand.__args__}
    for path, method, op in operations(doc):
        for media in op.get("requestBody", {}).get("content", {}).values():
            assert media.get("examples"), (method, path)
        for status, response in op["responses"].items():
            if int(status) < 400 or path.startswith("/health"):
                continue
            media = response["content"]["application/problem+json"]
            examples = media["examples"]
            assert examples, (method, path, status)
            for example in examples.values():
                value = example["value"]
                assert value["status"] == int(status) and value["code"] in PROBLEMS
                assert value["type"] == f"/problems/{value['code']}"
    sent = doc["paths"]["/games/{game_id}/commands"]["post"]["responses"]["409"]
    assert "not_your_turn" in sent["content"]["application/problem+json"]["examples"]


async def test_streams_are_text_event_stream_with_their_messages(api: Api) -> None:
    doc = await openapi(api)
    for path, _, op in operations(doc):
        if op["operationId"] not in STREAMS:
            continue
        content = op["responses"]["200"]["content"]
        assert list(content) == ["text/event-stream"], path
        media = content["text/event-stream"]
        assert media["itemSchema"]["$ref"].endswith("/StreamFrame")
        headers = {p["name"]: p for p in op["parameters"] if p["in"] == "header"}
        assert headers["Last-Event-ID"]["schema"]["type"] == "string"  # never null
        query = {p["name"]: p["schema"] for p in op["parameters"] if p["in"] == "query"}
        assert query["after"]["minimum"] == 0 and query["after"]["maximum"] == 2**53 - 1


async def test_every_operation_says_who_may_call_it(api: Api) -> None:
    """Every bearer operation declares the same scheme, so the roles it admits are the
    first line of its description; a new operation without one fails here."""
    doc = await openapi(api)
    ids = {op["operationId"] for _, _, op in operations(doc)}
    assert ids == set(WHO)
    for path, method, op in operations(doc):
        assert op["description"].startswith("Who may call: "), (method, path)
        public = not op.get("security")
        assert ("with no token" in op["description"].split("\n")[0]) is public, (method, path)


async def test_no_parameter_admits_null(api: Api) -> None:
    """A header or query parameter is absent or text: a URL cannot carry JSON's null, so no
    parameter's schema has a `null` type or a null among its values (a generated client
    would offer a nullable enum with a `null` member)."""
    doc = await openapi(api)
    enums = 0
    for path, method, op in operations(doc):
        for parameter in op.get("parameters", []):
            schema = parameter["schema"]
            assert "null" not in str(_values_of(schema, "type")), (method, path, parameter)
            assert None not in schema.get("enum", []), (method, path, parameter)
            enums += "enum" in schema
    assert enums >= 3  # status, format, state
    listed = {p["name"]: p["schema"] for p in doc["paths"]["/games"]["get"]["parameters"]}
    assert listed["status"]["type"] == "string"
    assert listed["status"]["enum"] == ["in_progress", "finished"]


async def test_every_parameter_says_what_it_is(api: Api) -> None:
    doc = await openapi(api)
    for path, method, op in operations(doc):
        for parameter in op.get("parameters", []):
            assert parameter.get("description"), (method, path, parameter["name"])


async def test_query_bounds_are_published_as_integers(api: Api) -> None:
    doc = await openapi(api)
    events = doc["paths"]["/games/{game_id}/events"]["get"]["parameters"]
    after = next(p for p in events if p["name"] == "after")["schema"]
    assert (after["minimum"], after["maximum"]) == (0, 2**53 - 1)
    assert isinstance(after["maximum"], int)


async def test_asyncapi_describes_every_stream_and_message(api: Api) -> None:
    answer = await api.client.get("/schema/asyncapi.json")
    assert answer.status_code == 200
    doc = answer.json()
    assert doc["asyncapi"].startswith("3.")
    addresses = {c["address"]: c for c in doc["channels"].values()}
    assert set(addresses) == {"/games/{game_id}/stream", "/events"}
    assert set(doc["components"]["messages"]) == {*MESSAGES, "feed_entry"}
    assert set(addresses["/events"]["messages"]) == {"feed_entry", "shutdown"}
    for operation in doc["operations"].values():
        assert operation["action"] == "receive"
        # a generator must know a stream asks for a token (the view stream: or a ticket)
        schemes = {s["$ref"].rsplit("/", 1)[1] for s in operation["security"]}
        feed = operation["channel"]["$ref"].endswith("/followEvents")
        assert schemes == ({"bearer"} if feed else {"bearer", "ticket"}), operation
    # an SSE id is text
    schemas = doc["components"]["schemas"]
    assert schemas["ViewFrameHeaders"]["properties"]["id"]["type"] == "string"
    assert schemas["FeedFrameHeaders"]["properties"]["id"]["pattern"] == "^[0-9]+:[0-9]+$"
    names = set(doc["components"]["schemas"])
    schema_refs = {r for r in refs(doc) if r.startswith("#/components/schemas/")}
    assert {r.rsplit("/", 1)[1] for r in schema_refs} <= names
    for ref in refs(doc):
        node: Any = doc
        for part in ref.removeprefix("#/").split("/"):
            node = node[part]  # every reference resolves inside the document
    # An AsyncAPI Schema's discriminator is the property's name (the OpenAPI object made
    # the AsyncAPI parser refuse the whole document); the event union keeps it.
    assert schemas["ViewMessage"]["properties"]["event"]["anyOf"][0]["discriminator"] == "type"
    assert not any(isinstance(d, dict) for d in _values_of(doc, "discriminator"))
    # HTTP bindings 0.3.0: the method and query are the operation's; a channel's is empty
    assert all("bindings" not in c for c in doc["channels"].values())
    for operation in doc["operations"].values():
        assert operation["bindings"]["http"]["method"] == "GET"
    # the server is the one the document was asked of (the OpenAPI's paths are relative)
    assert doc["servers"] == {"api": {"host": "bura.test", "protocol": "http", "pathname": "/"}}
    elsewhere = await api.client.get(
        "/schema/asyncapi.json", headers={"Host": "games.example:8443"}
    )
    assert elsewhere.json()["servers"]["api"]["host"] == "games.example:8443"


def _values_of(node: Any, key: str) -> list[Any]:
    """Every value of `key` anywhere in a JSON document."""
    if isinstance(node, list):
        return [v for item in node for v in _values_of(item, key)]
    if not isinstance(node, dict):
        return []
    found = [node[key]] if key in node else []
    return found + [v for item in node.values() for v in _values_of(item, key)]


async def test_the_reference_ui_needs_no_network(api: Api) -> None:
    for where in ("/schema/swagger", "/schema"):  # the reference, and Litestar's root
        page = await api.client.get(where)
        assert page.status_code == 200
        sources = re.findall(r"""(?:src|href)=["']([^"']+)["']""", page.text)
        assert sources and all(s.startswith("/schema/assets/") for s in sources), sources
        for source in sources:
            asset = await api.client.get(source)
            assert asset.status_code == 200 and len(asset.content) > 500, source
        assert page.text.startswith('<!DOCTYPE html><html lang="en">')  # for a screen reader
    # The embedded document is the refined one, with its examples.
    assert "not_your_turn" in page.text and "discriminator" in page.text


async def test_a_bound_of_zero_is_published(api: Api) -> None:
    # Litestar drops a bound of 0 (a falsy value); the document restores it
    doc = await openapi(api)
    dealer = doc["components"]["schemas"]["CreateGame"]["properties"]["dealer"]
    integer = next(m for m in dealer["oneOf"] if m.get("type") == "integer")
    assert (integer["minimum"], integer["maximum"]) == (0, 5)


async def test_every_operation_documents_the_refusals_any_request_may_get(api: Api) -> None:
    """408 and 431 (the connection's bounds) and 500 may answer any request; a POST whose
    body is larger than BURA_MAX_BODY_BYTES answers 413 exactly where the document says it
    may, asked with every token a game has."""
    doc = await openapi(api)
    table = await api.create()
    tokens = [OPERATOR, table.seat(0), table.watcher]
    big = b"{" + b" " * (Settings().max_body_bytes + 1) + b"}"
    answering, documenting = set(), set()
    for path, method, operation in operations(doc):
        op_id = operation["operationId"]
        documented = operation.get("responses", {})
        assert {"408", "431", "500"} <= set(documented), op_id
        for bound in ("408", "431"):  # the connection's own answers carry the request's id
            assert set(documented[bound].get("headers", {})) == {"X-Request-ID"}, op_id
        if not path.startswith("/health/"):
            # every read counts toward the rate limits but health (and /metrics, which
            # the document leaves out): documents too
            assert "429" in documented, op_id
        if "413" in documented:
            documenting.add(op_id)
        if method != "post":
            continue
        url = path.format(game_id=table.game_id, delivery_id="d1")
        for token in tokens:
            headers = {**token, "Content-Type": "application/json", "Idempotency-Key": "k1"}
            answer = await api.client.post(url, content=big, headers=headers)
            if answer.status_code == 413:
                assert answer.json()["code"] == "body_too_large"
                answering.add(op_id)
    assert answering == documenting


async def test_the_headers_answers_carry_are_documented_where_they_are_sent(api: Api) -> None:
    table = await api.create()
    answers = [
        await api.client.get("/games"),  # 401: WWW-Authenticate
        await api.client.get("/games", headers={"Authorization": "Bearer nobody"}),
        await api.client.get(f"/games/{table.game_id}", headers=table.seat(0)),
        await api.send(table, 1, {"type": "lead", "cards": ["6H"]}),  # 409
        await api.client.get("/health/live"),
    ]
    assert answers[0].headers["www-authenticate"] and answers[2].headers["x-request-id"]
    for answer in answers:
        assert not await undocumented_headers(api.client, answer), answer.request.url


async def test_the_document_is_the_same_at_every_start() -> None:
    """Replicas serve one contract: the document is made from the code alone. Litestar put
    the default of one field that holds a component (CreateGame's `rules`) on the component
    itself at some starts and not at others; no component carries a default now."""
    script = (
        "import hashlib, json\n"
        "from services.config import Settings\n"
        "from services.http.app import create_app\n"
        "from services.http.contract import refine\n"
        "doc = refine(create_app(Settings()).openapi_schema.to_schema())\n"
        "assert not [n for n, s in doc['components']['schemas'].items() if 'default' in s]\n"
        "print(hashlib.sha256(json.dumps(doc, sort_keys=True, default=str).encode()).hexdigest())\n"
    )
    digests = set()
    for _ in range(4):  # a fresh interpreter each: new ids, new hash seeds
        run = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, stdout=asyncio.subprocess.PIPE
        )
        out, _ = await run.communicate()
        assert run.returncode == 0
        digests.add(out.strip())
    assert len(digests) == 1


# What each bounded option needs beside it to be a table at all (domain/rules.py check).
_BESIDE: dict[str, tuple[int, dict[str, Any]]] = {
    "first_lead_compensation": (2, {"trumps": False}),
    "compensation": (2, {"open_seats": (0,)}),
    "target_points": (4, {"deck": 52, "teams": ((0, 2), (1, 3))}),
    "seeding_seconds": (2, {"shuffle": "seats"}),
    "time_bank_seconds": (2, {"turn_seconds": 10}),
    "abandon_seconds": (2, {"turn_seconds": 10}),
}


@pytest.mark.parametrize("option", list(RULE_BOUNDS))
def test_the_published_bounds_of_an_option_are_those_the_server_holds_it_to(
    option: str,
) -> None:
    """Every value the document admits makes a table; one step outside is `bad_option`
    naming the option."""
    seats, beside = _BESIDE.get(option, (2, {}))
    bounds = RULE_BOUNDS[option]

    def table(value: int) -> None:
        check(Rules(**{**beside, option: value}), seats)

    if "enum" in bounds:
        admitted = bounds["enum"]
        outside = sorted({v + step for v in admitted for step in (-1, 1)} - set(admitted))
    else:
        admitted = [bounds["minimum"], bounds["maximum"]]
        outside = [bounds["minimum"] - 1, bounds["maximum"] + 1]
    for value in admitted:
        table(value)
    for value in outside:
        with pytest.raises(BadOption) as refused:
            table(value)
        assert refused.value.option == option, value


async def test_a_body_the_server_does_without_is_not_required(api: Api) -> None:
    """Rematch and resume take no body at all (their fields all have defaults), and the
    document says so; every other body is required."""
    doc = await openapi(api)
    required = {
        operation["operationId"]: operation["requestBody"].get("required", False)
        for _, _, operation in operations(doc)
        if "requestBody" in operation
    }
    assert required == {
        "createGame": True,
        "sendCommand": True,
        "registerWebhook": True,
        "startRematch": False,
        "resumeGame": False,
    }
    table = await api.create(rules={"turn_seconds": 60, "on_timeout": "pause"})
    resume = await api.client.post(f"/games/{table.game_id}/resume", headers=OPERATOR)
    assert resume.status_code == 409 and resume.json()["code"] == "not_paused", resume.text
    await api.play(table, 0, {"type": "concede"})
    rematch = await api.client.post(f"/games/{table.game_id}/rematch", headers=OPERATOR)
    assert rematch.status_code == 201, rematch.text


def _resolved(doc: Doc, node: Doc) -> Doc:
    while "$ref" in node:
        node = doc["components"]["schemas"][node["$ref"].rsplit("/", 1)[1]]
    return node


async def test_every_field_a_stream_sends_is_in_its_documented_schema(api: Api) -> None:
    """A generated client keeps only the fields the schema names: the view a stream
    sends (its receipt and chain head too) and a feed entry are described whole."""
    doc = await openapi(api)
    table = await api.create()
    await api.play(table, 0, {"type": "concede"})
    stream = await api.client.get(f"/games/{table.game_id}/stream", headers=OPERATOR)
    views = [
        json.loads(line.removeprefix("data: "))
        for block in stream.text.split("\n\n")
        if "event: view" in block
        for line in block.splitlines()
        if line.startswith("data: ")
    ]
    assert views
    message = _resolved(doc, {"$ref": "#/components/schemas/ViewMessage"})
    view = _resolved(doc, message["properties"]["view"])
    for sent in views:
        assert set(sent) <= set(message["properties"])
        assert {"receipt", "chain_head"} <= set(sent["view"])
        assert set(sent["view"]) <= set(view["properties"]), set(sent["view"]) - set(
            view["properties"]
        )
    feed = await api.client.get(
        "/events", params={"follow": "false", "format": "sse", "limit": 5}, headers=OPERATOR
    )
    frame = _resolved(doc, doc["components"]["schemas"]["FeedFrame"]["oneOf"][0])
    entry = _resolved(doc, frame["properties"]["data"]["contentSchema"])
    entries = [
        json.loads(line.removeprefix("data: "))
        for line in feed.text.splitlines()
        if line.startswith("data: ")
    ]
    assert entries and all(set(e) <= set(entry["properties"]) for e in entries)


async def test_the_table_options_lists_publish_what_the_server_holds_them_to(api: Api) -> None:
    """hand_size, open_seats and teams as check() takes them: every table the document
    admits for its seats is made, one step outside is `bad_option`."""
    rules = (await openapi(api))["components"]["schemas"]["Rules"]["properties"]

    def array(schema: Doc) -> Doc:
        return next((m for m in schema.get("oneOf", []) if m.get("type") == "array"), schema)

    hands = array(rules["hand_size"])
    assert hands["items"]["enum"] == [3, 4] and (hands["minItems"], hands["maxItems"]) == (2, 6)
    check(Rules(hand_size=(4, 3)), 2)
    for outside in ((2, 3), (5, 3)):
        with pytest.raises(BadOption):
            check(Rules(hand_size=outside), 2)
    opened = array(rules["open_seats"])
    assert opened["uniqueItems"] and opened["items"]["maximum"] == 5
    check(Rules(open_seats=(0, 5)), 6)
    with pytest.raises(BadOption):
        check(Rules(open_seats=(0, 0)), 6)
    teams = array(rules["teams"])
    assert (teams["minItems"], teams["maxItems"]) == (2, 2)
    assert (teams["items"]["minItems"], teams["items"]["maxItems"]) == (2, 3)
    check(Rules(deck=52, teams=((0, 2, 4), (1, 3, 5))), 6)
    with pytest.raises(BadOption):
        check(Rules(deck=52, teams=((0,), (1,))), 2)
    count = (await openapi(api))["components"]["schemas"]["Draw"]["properties"]["count"]
    assert (count["minimum"], count["maximum"]) == (1, 52)
    # below the minimum is the rules' refusal, and the field says which
    assert "409 wrong_card_count" in count["description"]


async def test_a_host_no_url_can_carry_is_no_500(api: Api) -> None:
    """`Host: example.com:99999` named no server the document could give: building its URL
    raised, and so did the 500's handler (a plain-text `Internal Server Error`, no request
    id). The document names `localhost` for it; an unexpected failure's answer and log line
    never build the URL either."""
    for host in ("example.com:99999", "a:abc", "a:-1", "a:1:2"):
        answer = await api.client.get("/schema/asyncapi.json", headers={"Host": host})
        assert answer.status_code == 200, (host, answer.text)
        assert answer.json()["servers"]["api"]["host"] == "localhost"
    answer = await api.client.get("/schema/asyncapi.json", headers={"Host": "[::1]:8000"})
    assert answer.json()["servers"]["api"]["host"] == "[::1]:8000"

"""The published contract: Litestar's OpenAPI document refined so that generators get it
right, and the AsyncAPI document of the streams, both derived from the code so that a new
command, event, error code or stream appears in them by itself.

What the refinement adds, each step generic:
- a `discriminator` with its mapping on every union of tagged Structs (commands, events,
  the stream's messages): a union whose members all have a `const` tag property, which
  also becomes the tag's `default` (so generated models fill the constant in);
- `additionalProperties: false` on every Struct that refuses unknown fields;
- the error codes of services/http/problems.py as the enum of `ProblemDetails.code`;
- the streams (STREAMS) as `text/event-stream`, with the schema of their messages;
- a header or query parameter is never `null` (it is absent or text);
- integral bounds as integers, not floats;
- each request body's bounds and defaults as msgspec reads them (Litestar drops a bound of
  0 and a default of null), and no default on a component itself: a component is a type
  used in many places, and Litestar put the default of one field that holds it there, or
  not, from one start to the next;
- the table options' bounds that `domain.rules.check` holds them to (`RULE_BOUNDS`);
- a body that may be null as one that may be left out (not `required`);
- the headers answers carry (`X-Request-ID`, the RateLimit fields, `Retry-After`,
  `WWW-Authenticate`) on the responses that carry them;
- the webhooks the server sends (OpenAPI 3.1 `webhooks`): each type's body, with its
  `data`, and the three headers a receiver reads.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import msgspec

from domain.commands import PlayerCommand
from domain.events import EVENT_TYPES
from domain.rules import LONGEST_CLOCK, MAX_MATCH_TARGET, MAX_MULTIPLIER, MAX_STAKE
from services.app.notices import DATA_OF, WEBHOOK_OF, WEBHOOK_TYPES, Notice
from services.app.signing import TOLERANCE
from services.http.commands import KEY_MAX, KEY_PATTERN
from services.http.problems import PROBLEM_JSON, PROBLEMS
from services.http.schemas import REQUEST_EXAMPLES, CreateGame
from services.live.sse import MESSAGES

Schema = dict[str, Any]
REF = "#/components/schemas/"

# operationId -> what the stream is: routes answering text/event-stream register here.
STREAMS: dict[str, str] = {
    "streamView": "the caller's live view of one game",
}

_FRAMES = {name: f"{name.capitalize()}Frame" for name in MESSAGES}
CHECKPOINT_ID = "^[0-9]+:[0-9]+$"  # the feed's SSE id: an entry's checkpoint
FEED = "followEvents"  # the operator feed: NDJSON, or Server-Sent Events when asked


# Who may call each operation: the first line of its description. Every bearer operation
# declares the same scheme, and a 403 only says "another game, or the wrong role".
_OPERATOR = "the operator key"
_AT_TABLE = "anyone at the table: a seat's token, the spectator's, or the operator key"
_ONCE_OVER = (
    "the operator key at any time; a seat's token or the spectator's once the game is "
    "over (before: 403 `forbidden`)"
)
_ANYONE = "anyone, with no token"
WHO: dict[str, str] = {
    "createGame": _OPERATOR,
    "listGames": _OPERATOR,
    "startRematch": _OPERATOR,
    "resumeGame": _OPERATOR,
    "followEvents": _OPERATOR,
    "registerWebhook": _OPERATOR,
    "listWebhooks": _OPERATOR,
    "getWebhook": _OPERATOR,
    "deleteWebhook": _OPERATOR,
    "listDeliveries": _OPERATOR,
    "getDelivery": _OPERATOR,
    "retryDelivery": _OPERATOR,
    "sendCommand": "a seat's token (the spectator's and the operator key are refused: 403)",
    "getCommand": "the seat's token that sent the command, or the operator key; anyone "
    "else at the table is answered `unknown`, as for a key never sent",
    "getView": _AT_TABLE + " (the operator's view is the arbiter's: every hand)",
    "listEvents": _AT_TABLE + " (each event redacted for the caller)",
    "streamView": _AT_TABLE + ", or a stream ticket in `?ticket=` instead",
    "createStreamTicket": _AT_TABLE,
    "getReplay": _ONCE_OVER,
    "getAudit": _ONCE_OVER,
    "verifyDeals": _ONCE_OVER,
    "getBundle": _ONCE_OVER + "; theirs is redacted as their replay",
    "getLiveness": _ANYONE,
    "getReadiness": _ANYONE,
    "listProblems": _ANYONE,
    "getProblem": _ANYONE,
}


# What each path parameter names, wherever it appears.
PATH_PARAMETERS = {
    "game_id": "The game's id, as `POST /games` answered it (`game_id`)",
    "command_id": "The Idempotency-Key the command was sent with (URL-encoded)",
    "endpoint_id": "The webhook endpoint's id, as its registration answered it",
    "delivery_id": "The delivery's id: the body's `id` and its `Bura-Delivery` header",
    "code": "An error answer's `code` (the last segment of its `type`)",
}


def _say_who(operation: Schema) -> None:
    who = WHO.get(operation.get("operationId", ""))
    if who is not None:
        said = operation.get("description")
        operation["description"] = f"Who may call: {who}." + (f"\n\n{said}" if said else "")


# Arrays whose items are each given once (the handler refuses a repeat).
_UNIQUE = (("RegisterWebhook", "events"),)


def refine(openapi: Schema) -> Schema:
    doc = copy.deepcopy(openapi)
    schemas: Schema = doc.setdefault("components", {}).setdefault("schemas", {})
    _restore_from_msgspec(schemas)
    for schema in schemas.values():
        schema.pop("default", None)
    _bound_rules(schemas.get("Rules", {}).get("properties", {}))
    # a draw takes one card or more (0 or fewer is `wrong_card_count`, a rule's refusal)
    count = schemas.get("Draw", {}).get("properties", {}).get("count", {})
    count["minimum"] = 1
    count["description"] = (
        "Cards taken: 1, or 2 and more for a double draw (judged as a penalty). The server"
        " reads 0 or fewer as a draw of no card and refuses it, 409 wrong_card_count."
    )
    _add_stream_schemas(schemas)
    _forbid_unknown(schemas)
    for name, field in _UNIQUE:  # msgspec's extra JSON schema does not reach Litestar's
        schemas.get(name, {}).get("properties", {}).get(field, {})["uniqueItems"] = True
    code = schemas.get("ProblemDetails", {}).get("properties", {}).get("code")
    if code is not None:
        code["enum"] = sorted(PROBLEMS)
    doc["components"]["headers"] = copy.deepcopy(HEADERS)
    for _, _, operation in operations(doc):
        _answer_headers(operation)
        _say_who(operation)
        for parameter in operation.get("parameters", []):
            parameter["schema"] = _not_null(parameter.get("schema", {}))
            if parameter.get("in") == "path" and parameter.get("name") in PATH_PARAMETERS:
                parameter.setdefault("description", PATH_PARAMETERS[parameter["name"]])
            if (operation.get("operationId"), parameter.get("name")) == LOOKUP_KEY:
                # a `path` parameter takes no bounds in Litestar: the handler checks them
                parameter["schema"].update(pattern=KEY_PATTERN, minLength=1, maxLength=KEY_MAX)
        if operation.get("operationId") in STREAMS:
            _stream_response(operation)
        if operation.get("operationId") == "followEvents":
            _feed_response(operation, schemas)
        for response in operation.get("responses", {}).values():
            for media in response.get("content", {}).values():
                _name_examples(media)
        _optional_body(operation.get("requestBody", {}))
        examples = REQUEST_EXAMPLES.get(operation.get("operationId", ""), {})
        for media in operation.get("requestBody", {}).get("content", {}).values():
            if examples:
                media["examples"] = {name: {"value": v} for name, v in examples.items()}
    doc["webhooks"] = _webhooks(schemas)
    for node in _nodes(doc):
        _drop_empty_members(node)
        _discriminate(node, schemas)
        for bound in ("minimum", "maximum"):
            if isinstance(node.get(bound), float) and node[bound].is_integer():
                node[bound] = int(node[bound])
    return doc


_WEBHOOK_HEADERS = (
    (
        "Bura-Signature",
        "`t=<unix time>,v1=<hex>`: HMAC-SHA256 with the endpoint's secret over `<t>.<body>` "
        "(the raw body), signed again with a fresh `t` on every attempt. Check it before "
        f"parsing the body, and refuse a `t` more than {TOLERANCE} s from your clock.",
        "^t=[0-9]+,v1=[0-9a-f]{64}$",
    ),
    ("Bura-Event", "The webhook's type, as the body's `type`.", None),
    (
        "Bura-Delivery",
        "The delivery's id, as the body's `id`: the same on every attempt, the key to "
        "deduplicate by (a delivery can come twice).",
        None,
    ),
)


def _webhooks(schemas: Schema) -> Schema:
    """What the server POSTs to a registered endpoint, one entry a type: the body (the
    same bytes on every attempt), its `data` for that type, and the headers."""
    # `data` is a union of untagged Structs, which msgspec describes only one by one: the
    # body's schema says `data` is any value, and each type's its own
    shape = msgspec.defstruct(
        Notice.__name__,
        [
            (f.name, Any if f.name == "data" else f.type)
            if f.required
            else (f.name, f.type, f.default)
            for f in msgspec.structs.fields(Notice)
        ],
        kw_only=True,
    )
    shape.__doc__ = Notice.__doc__
    # `event` too: the event the webhook tells of, as a spectator sees it (each its own)
    told = {
        kind: [EVENT_TYPES[name] for name, of in WEBHOOK_OF.items() if of == kind]
        for kind in WEBHOOK_TYPES
    }
    _, components = msgspec.json.schema_components(
        [shape, *DATA_OF.values(), *(e for events in told.values() for e in events)],
        ref_template=REF + "{name}",
    )
    for name, schema in components.items():
        schemas.setdefault(name, schema)
    hooks: Schema = {}
    for kind in WEBHOOK_TYPES:
        events = [{"$ref": REF + e.__name__} for e in told[kind]]
        body: Schema = {
            "allOf": [
                {"$ref": REF + Notice.__name__},
                {
                    "type": "object",
                    "properties": {
                        "type": {"type": "string", "const": kind},
                        "data": {"$ref": REF + DATA_OF[kind].__name__},
                        "event": events[0] if len(events) == 1 else {"oneOf": events},
                    },
                },
            ]
        }
        hooks[kind] = {
            "post": {
                "operationId": "webhook" + "".join(w.capitalize() for w in kind.split("_")),
                "summary": f"`{kind}`, sent to each endpoint registered for it",
                "description": "Sent at least once, in each game's order, one at a time per "
                "endpoint and game, under the delivery's stable id; a 2xx within "
                "BURA_WEBHOOK_TIMEOUT_SECONDS ends it, anything else is tried again "
                "(backing off, up to BURA_WEBHOOK_MAX_ATTEMPTS). The body carries what a "
                "spectator may see, never a hidden card.",
                "parameters": [
                    {
                        "name": name,
                        "in": "header",
                        "required": True,
                        "description": text,
                        "schema": {"type": "string", **({"pattern": p} if p else {})},
                    }
                    for name, text, p in _WEBHOOK_HEADERS
                ],
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": body}},
                },
                "responses": {
                    "2XX": {"description": "Delivered: not sent again."},
                    "default": {
                        "description": "Not delivered (as no answer in time): tried again."
                    },
                },
            }
        }
    return hooks


_RATE = "when rate limits are on (BURA_RATE_LIMITS)"
HEADERS: Schema = {
    "X-Request-ID": {
        "description": "The request's id: the caller's own X-Request-ID if it sent sane text "
        "(printable ASCII, at most 200 characters), else a new one. The logs and the events a "
        "command appends carry it.",
        "schema": {"type": "string"},
    },
    "RateLimit-Policy": {
        "description": "Every policy counting this class of request, " + _RATE + ": "
        '`"<name>";q=<quota>;w=<window seconds>`, comma-separated.',
        "schema": {"type": "string"},
        "example": '"reads-token";q=600;w=10, "reads-address";q=6000;w=10',
    },
    "RateLimit": {
        "description": "The policy closest to its limit, " + _RATE + ": "
        '`"<name>";r=<requests left>;t=<seconds until its window ends>`.',
        "schema": {"type": "string"},
        "example": '"reads-token";r=597;t=8',
    },
    "Retry-After": {
        "description": "Seconds to wait before sending the request again (the same "
        "Idempotency-Key for a command).",
        "schema": {"type": "integer", "minimum": 0},
    },
    "Location": {
        "description": "Where what was made is found: a new game's view (`/games/{game_id}`), "
        "a webhook endpoint (`/webhooks/{id}`), or the stream a ticket opens (its `stream`).",
        "schema": {"type": "string", "format": "uri-reference"},
    },
    "WWW-Authenticate": {
        "description": 'The scheme the API asks for: `Bearer realm="bura"`, with '
        '`error="invalid_token"` when a token was sent and refused (RFC 6750).',
        "schema": {"type": "string"},
    },
}
# Answers given before the app sees the request (the connection's bounds): they carry the
# request's id, and no limit was counted for them.
_BEFORE_THE_APP = {"408", "431"}


def _answer_headers(operation: Schema) -> None:
    """The headers each documented answer of the operation carries."""
    answers: Schema = operation.get("responses", {})
    limited = "429" in answers
    for status, response in answers.items():
        if "$ref" in response:
            continue
        names = ["X-Request-ID"]
        if limited and status not in _BEFORE_THE_APP:
            names += ["RateLimit-Policy", "RateLimit"]
        if status == "429" or (status == "503" and PROBLEM_JSON in response.get("content", {})):
            names.append("Retry-After")
        if status == "401":
            names.append("WWW-Authenticate")
        if status == "201":
            names.append("Location")
        headers = response.setdefault("headers", {})
        for name in names:
            headers.setdefault(name, {"$ref": f"#/components/headers/{name}"})


def _name_examples(media: Schema) -> None:
    """Examples named by their summary (the error code), not `problemdetails-example-3`."""
    examples = media.get("examples")
    if isinstance(examples, dict):
        media["examples"] = {
            str(e.get("summary") or name): e for name, e in examples.items() if isinstance(e, dict)
        }


def operations(doc: Schema) -> Iterator[tuple[str, str, Schema]]:
    for path, item in doc.get("paths", {}).items():
        for method, operation in item.items():
            if method in {"get", "put", "post", "delete", "patch", "head", "options", "trace"}:
                yield path, method, operation


def _nodes(value: Any) -> Iterator[Schema]:
    if isinstance(value, dict):
        yield value
        for item in value.values():
            yield from _nodes(item)
    elif isinstance(value, list):
        for item in value:
            yield from _nodes(item)


def _tag_of(schema: Schema) -> tuple[str, str] | None:
    """The (property, value) that tags a Struct's schema: its one `const` property, and a
    required one (OpenAPI: a discriminator's property is in every member; the feed's entry
    frame leaves its `event` out on the wire)."""
    required = schema.get("required", ())
    consts = [
        (name, prop["const"])
        for name, prop in schema.get("properties", {}).items()
        if isinstance(prop, dict) and isinstance(prop.get("const"), str) and name in required
    ]
    return consts[0] if len(consts) == 1 else None


def _discriminate(node: Schema, schemas: Schema) -> None:
    for key in ("oneOf", "anyOf"):
        members = node.get(key)
        if not isinstance(members, list) or len(members) < 2 or "discriminator" in node:
            continue
        found = [m.get("$ref") for m in members if isinstance(m, dict)]
        refs = [r for r in found if isinstance(r, str) and r.startswith(REF)]
        if len(refs) != len(members):
            continue
        tags = [_tag_of(schemas.get(r.removeprefix(REF), {})) for r in refs]
        if None in tags or len({t[0] for t in tags if t}) != 1:
            continue
        values = [t[1] for t in tags if t]
        if len(set(values)) != len(values):
            continue
        prop = tags[0][0] if tags[0] else "type"
        for ref, value in zip(refs, values, strict=True):
            # The tag's value as its default: a generated model fills it in by itself.
            schemas[ref.removeprefix(REF)]["properties"][prop].setdefault("default", value)
        node["discriminator"] = {
            "propertyName": prop,
            "mapping": dict(zip(values, refs, strict=True)),
        }


def _structs() -> dict[str, list[type[msgspec.Struct]]]:
    found: dict[str, list[type[msgspec.Struct]]] = {}
    pending: list[type[msgspec.Struct]] = list(msgspec.Struct.__subclasses__())
    while pending:
        cls = pending.pop()
        pending.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in {"domain", "services"}:
            found.setdefault(cls.__name__, []).append(cls)
    return found


def _forbid_unknown(schemas: Schema) -> None:
    """A Struct that refuses unknown fields says so: `additionalProperties: false`."""
    structs = _structs()
    for name, schema in schemas.items():
        classes = structs.get(name, [])
        if classes and all(c.__struct_config__.forbid_unknown_fields for c in classes):
            schema["additionalProperties"] = False


# Request bodies whose integer bounds and defaults Litestar may drop: it skips a bound that
# is 0 (a falsy value), so `dealer >= 0` would be published as unbounded below, and a
# default of None (`dave`, `turn_seconds`). msgspec's own schema of the same types has
# every bound and default; they are copied back from it.
LOOKUP_KEY = ("getCommand", "command_id")
_BOUNDED_BODIES: tuple[Any, ...] = (CreateGame, PlayerCommand)
_BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum")


def _restore_from_msgspec(schemas: Schema) -> None:
    _, truth = msgspec.json.schema_components(_BOUNDED_BODIES, ref_template=REF + "{name}")
    for name, right in truth.items():
        published = schemas.get(name, {}).get("properties", {})
        for field, prop in right.get("properties", {}).items():
            if field not in published:
                continue
            bounds = {k: v for k, v in _integer_member(prop).items() if k in _BOUNDS}
            target = _integer_member(published[field])
            for key, value in bounds.items():
                target.setdefault(key, value)
            if "default" in prop:
                published[field].setdefault("default", prop["default"])


# The table options' bounds (domain/rules.py `check`, which refuses a value outside them
# as `bad_option` naming it): published, so that a generated client can check first.
RULE_BOUNDS: dict[str, Schema] = {
    "first_lead_compensation": {"minimum": 0, "maximum": 30},
    "compensation": {"minimum": 0, "maximum": 30},
    "stake": {"minimum": 1, "maximum": MAX_STAKE},
    "match_target": {"minimum": 1, "maximum": MAX_MATCH_TARGET},
    # a power of two
    "dave_max_multiplier": {"enum": [2**n for n in range(1, MAX_MULTIPLIER.bit_length())]},
    "target_points": {"enum": [31, 41, 51]},
    "seeding_seconds": {"minimum": 1, "maximum": LONGEST_CLOCK},
    "turn_seconds": {"minimum": 1, "maximum": LONGEST_CLOCK},
    "time_bank_seconds": {"minimum": 0, "maximum": LONGEST_CLOCK},
    "abandon_seconds": {"minimum": 1, "maximum": LONGEST_CLOCK},
}


# The lists among the table options, as `domain.rules.check` holds them: one hand of 3 or
# 4 cards per seat, distinct seats 0 to 5, two teams of 2 or 3 distinct seats. (How many
# seats a table has is the request's to say: a seat off the table is still `bad_option`.)
SEAT = {"type": "integer", "minimum": 0, "maximum": 5}
RULE_LISTS: dict[str, Schema] = {
    "hand_size": {"items": {"type": "integer", "enum": [3, 4]}, "minItems": 2, "maxItems": 6},
    "open_seats": {"items": SEAT, "uniqueItems": True, "maxItems": 6},
    "teams": {  # two teams of 2 or 3 seats each
        "items": {
            "type": "array",
            "items": SEAT,
            "uniqueItems": True,
            "minItems": 2,
            "maxItems": 3,
        },
        "minItems": 2,
        "maxItems": 2,
    },
}


def _bound_rules(properties: Schema) -> None:
    for option, bounds in RULE_BOUNDS.items():
        if option in properties:
            _integer_member(properties[option]).update(bounds)
    for option, bounds in RULE_LISTS.items():
        if option in properties:
            _array_member(properties[option]).update(copy.deepcopy(bounds))


def _array_member(schema: Schema) -> Schema:
    """The schema itself, or its array member when it is `array | null`."""
    for key in ("anyOf", "oneOf"):
        for member in schema.get(key, []):
            if isinstance(member, dict) and member.get("type") == "array":
                return member
    return schema


def _optional_body(body: Schema) -> None:
    """A body that may be null may be left out (rematch, resume): not `required`, which
    Litestar says of every body, so that a generated client need not send one."""
    for media in body.get("content", {}).values():
        schema = media.get("schema", {})
        members = schema.get("oneOf", schema.get("anyOf", [schema]))
        if any(isinstance(m, dict) and m.get("type") == "null" for m in members):
            body["required"] = False


def _integer_member(schema: Schema) -> Schema:
    """The schema itself, or its integer member when it is `integer | null`."""
    for key in ("anyOf", "oneOf"):
        for member in schema.get(key, []):
            if isinstance(member, dict) and member.get("type") == "integer":
                return member
    return schema


def _drop_empty_members(node: Schema) -> None:
    """Litestar writes the items of `Annotated[tuple[Literal[...], ...], Meta(...)]` as
    `oneOf: [<the literal>, {}]`, and the empty member admits anything: drop it."""
    members = node.get("oneOf")
    if isinstance(members, list) and {} in members and len(members) > 1:
        kept = [m for m in members if m != {}]
        if len(kept) == 1:
            del node["oneOf"]
            node.update(kept[0])
        else:
            node["oneOf"] = kept


def _not_null(schema: Schema) -> Schema:
    """`X | None` in a header or query parameter means absent, never the text "null"."""
    kinds = schema.get("type")
    if isinstance(kinds, list) and "null" in kinds:
        # an enum Litestar wrote as `["null", "string"]` with null among its values
        others = [k for k in kinds if k != "null"]
        schema = {**schema, "type": others[0] if len(others) == 1 else others}
        if isinstance(schema.get("enum"), list):
            schema["enum"] = [v for v in schema["enum"] if v is not None]
        return schema
    members = schema.get("oneOf")
    if not isinstance(members, list):
        return schema
    kept = [m for m in members if m != {"type": "null"}]
    if len(kept) != 1 or len(kept) == len(members):
        return schema
    rest = {k: v for k, v in schema.items() if k != "oneOf"}
    return {**kept[0], **rest}


def _add_stream_schemas(schemas: Schema) -> None:
    """The messages' data (services/live/sse.py) and one frame per SSE event name."""
    _, components = msgspec.json.schema_components(
        list(MESSAGES.values()), ref_template=REF + "{name}"
    )
    for name, schema in components.items():
        schemas.setdefault(name, schema)
    for event, data in MESSAGES.items():
        # An event as SSE frames it: every field is text; `data` is one line of JSON.
        frame: Schema = {
            "type": "object",
            "title": _FRAMES[event],
            "description": (data.__doc__ or "").strip(),
            "properties": {
                "event": {"type": "string", "const": event},
                "data": {
                    "type": "string",
                    "contentMediaType": "application/json",
                    "contentSchema": {"$ref": REF + data.__name__},
                },
            },
            "required": ["event", "data"],
        }
        if event == "view":
            frame["properties"]["id"] = {
                "type": "string",
                "pattern": "^[0-9]+$",
                "description": "the game version: send it back as Last-Event-ID",
            }
            frame["required"] = ["id", "event", "data"]
        schemas[_FRAMES[event]] = frame
    schemas["StreamFrame"] = {
        "title": "StreamFrame",
        "description": "One Server-Sent Events message: its `id` (the game version, on "
        "`view` messages), its `event` name and its `data` (one line of JSON). "
        "`: keep-alive` comments between messages carry nothing.",
        "oneOf": [{"$ref": REF + frame} for frame in _FRAMES.values()],
    }


def _stream_response(operation: Schema) -> None:
    """Each message of the stream is one StreamFrame: `itemSchema`, as OpenAPI 3.2 writes
    a sequential media type (no `schema` for the whole: it is an endless text, and a
    generator would try to parse it). The AsyncAPI document describes the same messages."""
    ok = operation.setdefault("responses", {}).setdefault("200", {})
    ok["content"] = {"text/event-stream": {"itemSchema": {"$ref": REF + "StreamFrame"}}}


def _feed_response(operation: Schema, schemas: Schema) -> None:
    """The operator feed is NDJSON (one FeedEntry a line) or Server-Sent Events (one
    FeedFrame a message, its `id` the entry's checkpoint and its data the entry)."""
    schemas["FeedEntryFrame"] = {
        "title": "FeedEntryFrame",
        "description": "One entry of the operator feed as a Server-Sent Events message: "
        "`id` is the entry's checkpoint and `data` the entry (one line of JSON); no `event` "
        "field (an EventSource's `message`).",
        "type": "object",
        "properties": {
            "id": {"type": "string", "pattern": CHECKPOINT_ID},
            "event": {"type": "string", "const": "message"},
            "data": {
                "type": "string",
                "contentMediaType": "application/json",
                "contentSchema": {"$ref": REF + "FeedEntry"},
            },
        },
        "required": ["id", "data"],
    }
    schemas["FeedFrame"] = {
        "title": "FeedFrame",
        "description": "One Server-Sent Events message of the operator feed: an entry, or "
        "`event: shutdown` when the server stops (reconnect with Last-Event-ID).",
        "oneOf": [{"$ref": REF + "FeedEntryFrame"}, {"$ref": REF + _FRAMES["shutdown"]}],
    }
    ok = operation.setdefault("responses", {}).setdefault("200", {})
    ok["content"] = {
        "application/x-ndjson": {"itemSchema": {"$ref": REF + "FeedEntry"}},
        "text/event-stream": {"itemSchema": {"$ref": REF + "FeedFrame"}},
    }


def _discriminated(schema: Any) -> Any:
    """`schema` with each OpenAPI discriminator (an object: `propertyName`, `mapping`) as an
    AsyncAPI Schema has it, the property's name as a string; an AsyncAPI parser refuses
    the object."""
    if isinstance(schema, list):
        return [_discriminated(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    found = {k: _discriminated(v) for k, v in schema.items()}
    tag = found.get("discriminator")
    if isinstance(tag, dict) and "propertyName" in tag:
        found["discriminator"] = tag["propertyName"]
    return found


def asyncapi(openapi: Schema) -> Schema:
    """AsyncAPI 3.0 for the streams: one channel per stream, its messages and their data,
    with every schema they need copied from the refined OpenAPI components. Its `servers`
    is the host each request asks it of (services/http/docs.py)."""
    doc = refine(openapi)
    schemas = doc["components"]["schemas"]
    channels: Schema = {}
    ops: Schema = {}
    messages: Schema = {}
    for event, data in MESSAGES.items():
        messages[event] = {
            "name": event,
            "title": f"event: {event}",
            "summary": (data.__doc__ or "").strip().split("\n")[0],
            "contentType": "application/json",
            "payload": {"$ref": REF + data.__name__},
            **(
                {"headers": {"$ref": "#/components/schemas/ViewFrameHeaders"}}
                if event == "view"
                else {}
            ),
        }
    schemas["ViewFrameHeaders"] = {
        "type": "object",
        "properties": {
            "id": {
                "type": "string",
                "pattern": "^[0-9]+$",
                "description": "SSE id: the game version (text, as every SSE field)",
            },
        },
    }
    messages["feed_entry"] = {
        "name": "message",
        "title": "an entry of the operator feed (no event field)",
        "summary": "One event of any game, in the global order, as the arbiter sees it.",
        "contentType": "application/json",
        "payload": {"$ref": REF + "FeedEntry"},
        "headers": {"$ref": "#/components/schemas/FeedFrameHeaders"},
    }
    schemas["FeedFrameHeaders"] = {
        "type": "object",
        "properties": {
            "id": {
                "type": "string",
                "pattern": CHECKPOINT_ID,
                "description": "SSE id: the entry's checkpoint (resume with Last-Event-ID)",
            },
        },
    }
    kinds = {op_id: (title, list(MESSAGES)) for op_id, title in STREAMS.items()}
    kinds[FEED] = ("every game's events, for the operator", ["feed_entry", "shutdown"])
    # who may open each: a token, or (the view stream only) a browser's stream ticket
    bearer = {"$ref": "#/components/securitySchemes/bearer"}
    ticket = {"$ref": "#/components/securitySchemes/ticket"}
    for path, _, operation in operations(doc):
        op_id = operation.get("operationId")
        if op_id not in kinds:
            continue
        title, events = kinds[op_id]
        channels[op_id] = {
            "address": path,
            "title": title,
            "description": operation.get("description", ""),
            "parameters": {
                p["name"]: {"description": p.get("description", p["name"])}
                for p in operation.get("parameters", [])
                if p.get("in") == "path"
            },
            "messages": {event: {"$ref": f"#/components/messages/{event}"} for event in events},
        }
        ops[f"receive_{op_id}"] = {
            "action": "receive",
            "channel": {"$ref": f"#/channels/{op_id}"},
            "summary": operation.get("summary", ""),
            "security": [bearer] if op_id == FEED else [bearer, ticket],
            "messages": [{"$ref": f"#/channels/{op_id}/messages/{event}"} for event in events],
            # HTTP bindings 0.3.0: the method and query are the operation's (a channel's
            # HTTP binding holds nothing)
            "bindings": {
                "http": {
                    "method": "GET",
                    "query": {
                        "type": "object",
                        "properties": {
                            p["name"]: p.get("schema", {})
                            for p in operation.get("parameters", [])
                            if p.get("in") == "query"
                        },
                    },
                    "bindingVersion": "0.3.0",
                }
            },
        }
    return {
        "asyncapi": "3.0.0",
        "info": {
            "title": f"{doc['info']['title']}: live streams",
            "version": doc["info"]["version"],
            "description": "Server-Sent Events (`text/event-stream`) of the Bura server. "
            "Open a stream with `Authorization: Bearer <token>`, or from a browser with "
            "`?ticket=` (POST /games/{game_id}/stream-tickets). Resume with the "
            "`Last-Event-ID` header (or `?after=`): every version missed comes first, none "
            "twice. The operator feed (GET /events with `format=sse` or `Accept: "
            "text/event-stream`) sends every game's events, each message's id its "
            "checkpoint. The REST API is described at /schema/openapi.json.",
        },
        "defaultContentType": "application/json",
        "channels": channels,
        "operations": ops,
        "components": {
            "messages": messages,
            "schemas": _discriminated(
                _reachable(schemas, [m["payload"] for m in messages.values()])
                | {name: schemas[name] for name in ("ViewFrameHeaders", "FeedFrameHeaders")}
            ),
            "securitySchemes": {
                "bearer": {
                    "type": "http",
                    "scheme": "bearer",
                    "description": "A seat's or the spectator's token, or the operator key "
                    "(the operator feed takes the operator key only)",
                },
                "ticket": {
                    "type": "httpApiKey",
                    "name": "ticket",
                    "in": "query",
                    "description": "A stream ticket (POST /games/{game_id}/stream-tickets): "
                    "opens one view stream once, for a browser's EventSource",
                },
            },
        },
    }


def _reachable(schemas: Schema, roots: list[Any]) -> Schema:
    kept: Schema = {}
    pending = list(roots)
    while pending:
        for node in _nodes(pending.pop()):
            ref = node.get("$ref")
            if isinstance(ref, str) and ref.startswith(REF):
                name = ref.removeprefix(REF)
                if name not in kept and name in schemas:
                    kept[name] = schemas[name]
                    pending.append(schemas[name])
    return kept

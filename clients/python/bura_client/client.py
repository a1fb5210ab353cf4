"""The client: one httpx connection pool to a Bura server, and a Seat bound to one game
and one token that sends its commands and follows its live view."""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from types import TracebackType
from typing import Any
from urllib.parse import quote

import httpx

from bura_client.errors import ApiError, OutcomeUnknown, StreamEnded, error_of
from bura_client.models import (
    JSON,
    CommandStatus,
    CreatedGame,
    Outcome,
    Recorded,
    StreamMessage,
    StreamTicket,
)
from bura_client.retries import Retries, retried, retry_after, transient
from bura_client.sse import messages

KEPT_BODIES = 256  # keys whose first body a retry repeats
# A stream with nothing to read for this long is taken as dropped (a half-open connection)
# and resumed: well above the server's keep-alive (BURA_SSE_KEEPALIVE_SECONDS, 15 s).
STREAM_READ_TIMEOUT = 45.0
# A stream that stayed open this long before it dropped was working: its drop is the first
# failure of a new run, whatever came on it (a quiet table sends only keep-alives).
HEALTHY_SECONDS = 10.0


class Client:
    """`Client(base_url)`; use it as a context manager or close() it. `retries` is a
    Retries, or the number of sends in all (`retries=4`: the first and three retries)."""

    def __init__(
        self,
        base_url: str,
        *,
        timeout: float = 10.0,
        retries: Retries | int | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        if isinstance(retries, int):
            retries = Retries(attempts=max(1, retries))
        self.retries = retries or Retries()
        self.http = httpx.Client(base_url=self.base_url, timeout=timeout, transport=transport)

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        self.http.close()

    # --- requests with the retry rules -------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        once: bool = False,
    ) -> JSON:
        """Send, retrying what is safe (bura_client.retries); the JSON answer, or ApiError.
        A command's Idempotency-Key is in `headers`, so every retry carries the same one.
        `once`: a request without one, sent again only when it cannot have been done (no
        connection was made, or a 429 or 503 that says nothing was done)."""
        return _answer(
            self.exchange(
                method, path, token=token, json=json, params=params, headers=headers, once=once
            )
        )

    def exchange(
        self,
        method: str,
        path: str,
        *,
        token: str | None = None,
        json: Any = None,
        params: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        once: bool = False,
    ) -> httpx.Response:
        """`request`'s sending and retries, with the answer as it came (a success's body
        unread as JSON: a bundle's bytes are what is checked, never decoded and encoded
        again)."""
        sent = dict(headers or {})
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        attempt = 0
        while True:
            try:
                answer = self.http.request(method, path, json=json, params=params, headers=sent)
            except httpx.TransportError as error:
                if not transient(error, once=once) or attempt + 1 >= self.retries.attempts:
                    raise
                time.sleep(self.retries.delay(attempt))
                attempt += 1
                continue
            if answer.status_code < 400:
                return answer
            problem = _problem(answer)
            if not retried(answer.status_code, problem.get("code"), once=once) or (
                attempt + 1 >= self.retries.attempts
            ):
                raise error_of(answer.status_code, problem, dict(answer.headers))
            after = retry_after(answer.headers.get("retry-after"))
            time.sleep(self.retries.delay(attempt, after))
            attempt += 1

    def keyed(self, path: str, *, token: str, json: Any, key: str) -> JSON:
        """POST under an Idempotency-Key that every retry carries. Once the retries are
        spent the error names the key as `command_id`: ApiError for an answer,
        OutcomeUnknown when none came (a request that cannot be sent as it is raises
        httpx's own error: nothing reached the server)."""
        try:
            return self.request(
                "POST", path, token=token, json=json, headers={"Idempotency-Key": key}
            )
        except ApiError as error:
            error.command_id = error.command_id or key
            raise
        except httpx.TransportError as error:
            if not transient(error):
                raise
            raise OutcomeUnknown(key, error) from error

    # --- the operator ------------------------------------------------------------------

    def create_game(
        self,
        seats: Sequence[str],
        *,
        token: str,
        rules: JSON | None = None,
        seed: str | None = None,
        dealer: int | None = None,
        deck: Sequence[str] | None = None,
        key: str | None = None,
    ) -> CreatedGame:
        """A new game (the operator key as `token`): one token per seat and a spectator's.
        Sent under an Idempotency-Key (`key`, or one made here) that every retry carries,
        so a retry answers with the game the first try made (`duplicate` set), never a
        second game. Once the retries are spent, the error carries the key as `command_id`
        (ApiError for an answer, OutcomeUnknown when none came): call again with `key=` and
        the same options to learn whether the game was made (it answers with it, or makes
        it now)."""
        body: JSON = {"seats": [{"name": name} for name in seats]}
        for option, value in (("rules", rules), ("seed", seed), ("dealer", dealer)):
            if value is not None:
                body[option] = value
        if deck is not None:
            body["deck"] = list(deck)
        key = key or f"create-{uuid.uuid4().hex}"
        return CreatedGame.of(self.keyed("/games", token=token, json=body, key=key))

    def rematch(
        self, game_id: str, *, token: str, seed: str | None = None, key: str | None = None
    ) -> CreatedGame:
        """The rematch of a finished game (the operator key as `token`): the same seats
        and rules, new tokens. Sent under an Idempotency-Key as create_game is; a second
        rematch of one game is 409 `rematch_exists`."""
        key = key or f"rematch-{uuid.uuid4().hex}"
        body = {"seed": seed} if seed is not None else None
        path = f"/games/{quote(game_id, safe='')}/rematch"
        return CreatedGame.of(self.keyed(path, token=token, json=body, key=key))

    def resume(self, game_id: str, *, token: str, verdict: str = "play_on") -> Outcome:
        """The operator's ruling on a clock paused by a timeout (`on_timeout: "pause"`):
        `play_on` (a fresh turn for the seat due) or `lose_deal`. Ruling twice is no
        second ruling: the second is 409 `not_paused`."""
        answer = self.request(
            "POST",
            f"/games/{quote(game_id, safe='')}/resume",
            token=token,
            json={"verdict": verdict},
            once=True,  # no key: a lost answer's ruling may have been made
        )
        return Outcome.of(answer, answer.get("command_id") or "")

    def games(self, *, token: str, **filters: Any) -> Iterator[JSON]:
        """Every game of the operator's list (GET /games), page after page: `status`,
        `created_since`, `updated_since` (RFC 3339) and `limit` (a page's size) as the API
        takes them."""
        params = {k: v for k, v in filters.items() if v is not None}
        while True:
            page = self.request("GET", "/games", token=token, params=params)
            yield from page["games"]
            if not page.get("next_cursor"):
                return
            params = {**params, "cursor": page["next_cursor"]}

    def seat(self, game_id: str, token: str, *, seen: bool = True) -> Seat:
        """A viewer of one game: a seat's token (which may send commands), the spectator's
        or the operator's (which may only watch)."""
        return Seat(self, game_id, token, seen=seen)


class Seat:
    """One game as one token sees it. `version` is the last version this seat saw (in a
    view, an answer or a stream message); with `seen` on, commands carry it."""

    def __init__(self, client: Client, game_id: str, token: str, *, seen: bool = True) -> None:
        self.client = client
        self.game_id = game_id
        self.token = token
        self.seen = seen
        self.version = 0
        # The bodies sent under the last keys: a retry under a key repeats its body exactly
        # (the `seen` of the first try), or the server refuses it as another command.
        self._sent: OrderedDict[str, JSON] = OrderedDict()

    @property
    def path(self) -> str:
        return f"/games/{self.game_id}"

    def _saw(self, version: int) -> None:
        self.version = max(self.version, version)

    # --- reads -------------------------------------------------------------------------

    def view(self) -> JSON:
        """The seat's view, never older than the last version this seat saw (with `seen`
        on, the read says it: another replica behind a load balancer reads the store)."""
        params = {"seen": self.version} if self.seen and self.version else None
        view = self.client.request("GET", self.path, token=self.token, params=params)
        self._saw(int(view["version"]))
        return view

    def events(self, after: int = 0) -> list[Recorded]:
        page = self.client.request(
            "GET", f"{self.path}/events", token=self.token, params={"after": after}
        )
        self._saw(int(page["version"]))
        events: list[Recorded] = page["events"]
        return events

    def replay(self, version: int | None = None) -> JSON:
        params = {"version": version} if version is not None else None
        return self.client.request("GET", f"{self.path}/replay", token=self.token, params=params)

    def audit(self) -> JSON:
        return self.client.request("GET", f"{self.path}/audit", token=self.token)

    def verify(self) -> JSON:
        return self.client.request("GET", f"{self.path}/verify", token=self.token)

    def bundle(self) -> bytes:
        """The audit bundle (GET /games/{id}/bundle), byte for byte as served: the bytes
        are what `bura verify-bundle` checks, so they are never decoded and encoded again.
        The operator's any time; a seat's once the game is over."""
        return self.client.exchange("GET", f"{self.path}/bundle", token=self.token).content

    def stream_ticket(self) -> StreamTicket:
        """A ticket for a client that cannot send Authorization (a browser's EventSource)."""
        body = self.client.request("POST", f"{self.path}/stream-tickets", token=self.token)
        return StreamTicket(body["ticket"], body["expires_in"], body["expires_at"], body["stream"])

    # --- commands ----------------------------------------------------------------------

    def send(self, command: JSON, *, key: str | None = None, seen: bool | None = None) -> Outcome:
        """Send one command (`{"type": "lead", "cards": [...]}`). The Idempotency-Key is
        `key`, or one made here, and is kept for every retry, so a retry is never a second
        move. Once the retries are spent the error carries the key: OutcomeUnknown
        (no answer came) or ApiError, each with `command_id`; send the command again with
        `key=command_id` (the same body is sent again, its `seen` included), or ask
        `lookup(command_id)`."""
        key = key or f"{uuid.uuid4().hex}"
        body = self._body(command, key, self.seen if seen is None else seen)
        try:
            answer = self.client.keyed(
                f"{self.path}/commands", token=self.token, json=body, key=key
            )
        except ApiError as error:
            if error.code == "idempotency_key_reused" and self._sent.get(key) is body:
                # what this seat kept as the key's first body is not what the server has
                # under it (another Seat's, another process's): the next send builds anew
                self._sent.pop(key, None)
            raise
        except OutcomeUnknown as unknown:
            unknown.body = dict(body)  # for a resend from another Seat, another process
            raise
        outcome = Outcome.of(answer, key)
        self._saw(outcome.version)
        return outcome

    def lookup(self, key: str) -> CommandStatus:
        """What became of the command sent under `key` (GET /games/{id}/commands/{key}):
        `applied` with its version and events, or `unknown`. The seat that sent it and the
        operator may ask."""
        status = CommandStatus.of(
            self.client.request(
                "GET", f"{self.path}/commands/{quote(key, safe='')}", token=self.token
            )
        )
        if status.version is not None:
            self._saw(status.version)
        return status

    def _body(self, command: JSON, key: str, seen: bool) -> JSON:
        first = self._sent.get(key)
        if first is not None and _same(first, command):
            return first
        body = {k: v for k, v in command.items() if k != "seen" or v is not None}
        if seen and self.version:  # a `"seen": null` (a struct's default) names none either
            body.setdefault("seen", self.version)
        if first is not None:
            # another command under a key this seat sent one with: the server refuses it
            # (422 idempotency_key_reused), and the key's first body is still the one kept
            return body
        self._sent[key] = body
        while len(self._sent) > KEPT_BODIES:
            self._sent.popitem(last=False)
        return body

    def draw(self, count: int = 1) -> Outcome:
        """Take the top card; a `count` of 2 or more is a double draw (a penalty, or a 409
        at a table that rejects faulty draws)."""
        return self.send({"type": "draw"} if count == 1 else {"type": "draw", "count": count})

    def seed(self, value: str) -> Outcome:
        """The seat's own seed for the seats' shuffle (`shuffle: "seats"`)."""
        return self.send({"type": "seed", "value": value})

    def lead(self, *cards: str) -> Outcome:
        return self.send({"type": "lead", "cards": list(cards)})

    def respond(self, *cards: str) -> Outcome:
        return self.send({"type": "respond", "cards": list(cards)})

    def declare(self, claim: str = "thirty_one") -> Outcome:
        return self.send({"type": "declare", "claim": claim})

    def dave(self) -> Outcome:
        return self.send({"type": "dave"})

    def answer_dave(self, accept: bool) -> Outcome:
        return self.send({"type": "dave_answer", "accept": accept})

    def pass_(self) -> Outcome:
        return self.send({"type": "pass"})

    def concede(self) -> Outcome:
        return self.send({"type": "concede"})

    # --- the live view -----------------------------------------------------------------

    def follow(
        self,
        last_event_id: int | None = None,
        *,
        reconnects: int = 20,
        read_timeout: float = STREAM_READ_TIMEOUT,
    ) -> Iterator[StreamMessage]:
        """The seat's live view as it changes: the current view first (or, given
        `last_event_id`, every version after it), then one message per version, until the
        game ends. A dropped connection (nothing read for `read_timeout` seconds included,
        keep-alives count), a stream that closes before `end`, or a server's `shutdown`
        reconnects with Last-Event-ID, so no version is missed and none comes twice.
        Failures in a row past `reconnects`, with backoff between them, raise: ApiError
        (RateLimited, Unavailable) for the last error answer, StreamEnded for a stream that
        kept closing early or cut after it opened, the transport error for a connection
        that failed before an answer."""
        last = last_event_id
        failures = 0
        while True:
            headers = {"Authorization": f"Bearer {self.token}", "Accept": "text/event-stream"}
            if last is not None:
                headers["Last-Event-ID"] = str(last)
            opened = time.monotonic()
            answered = False  # the stream's 200 came: a failure now is its body cut short
            try:
                with self.client.http.stream(
                    "GET",
                    f"{self.path}/stream",
                    headers=headers,
                    timeout=httpx.Timeout(10.0, read=read_timeout),
                ) as answer:
                    if answer.status_code >= 400:
                        answer.read()
                        problem = _problem(answer)
                        if not retried(answer.status_code, problem.get("code")):
                            raise error_of(answer.status_code, problem, dict(answer.headers))
                        raise _Retry(error_of(answer.status_code, problem, dict(answer.headers)))
                    answered = True
                    first = True
                    for message in messages(answer.iter_lines()):
                        if message.id is not None:
                            # the server starts over with the table as it is now when the
                            # id resumed from is past the game's version (a store restored
                            # from a backup): its first message then has a lower id
                            restarted = first and last is not None and message.id < last
                            first = False
                            if last is not None and message.id <= last and not restarted:
                                continue  # already given: never twice
                            last = message.id
                            if restarted:
                                self.version = message.id
                            self._saw(message.id)
                            failures = 0  # a new version came: the stream works
                        elif message.event == "end":
                            failures = 0
                        # (a `presence` message is no progress: a stream cut again and
                        # again, with the other seat reconnecting each time, still fails)
                        yield message
                        if message.event == "end":
                            return
                        if message.event == "shutdown":
                            break
                    else:  # closed with neither `end` nor `shutdown`: a failure
                        raise _Ended
            except (httpx.TransportError, _Retry, _Ended) as error:
                if isinstance(error, httpx.TransportError) and not transient(error):
                    raise
                if time.monotonic() - opened >= HEALTHY_SECONDS:
                    failures = 0  # it worked a while: a quiet table, not a failing stream
                failures += 1
                if failures > reconnects:
                    if isinstance(error, _Retry):
                        raise error.error from None
                    if isinstance(error, _Ended) or answered:
                        # closed early or cut (a proxy's reset): the server did answer
                        raise StreamEnded(
                            f"the stream of game {self.game_id} closed before the game's "
                            f"end {failures} times in a row"
                        ) from None
                    raise
                after = error.retry_after if isinstance(error, _Retry) else None
                time.sleep(self.client.retries.delay(min(failures, 6), after))
                continue


class _Retry(Exception):
    """An error answer worth another try; `error` is raised if none is left."""

    def __init__(self, error: ApiError) -> None:
        super().__init__("retry")
        self.error = error

    @property
    def retry_after(self) -> float | None:
        return retry_after(self.error.headers.get("retry-after"))


class _Ended(Exception):
    """A stream's body that ended with neither `end` nor `shutdown`."""


def _same(first: JSON, command: JSON) -> bool:
    """The command the key's first body sent, whatever its `seen`, and whatever the order
    or case of its cards (the server takes them as one command too)."""
    return _unseen(first) == _unseen(command)


def _unseen(body: JSON) -> JSON:
    found = {k: v for k, v in body.items() if k != "seen"}
    cards = found.get("cards")
    if isinstance(cards, list) and all(isinstance(c, str) for c in cards):
        found["cards"] = sorted(c.upper() for c in cards)
    return found


def _answer(answer: httpx.Response) -> JSON:
    """A success's JSON object; ApiError for anything else (an HTML page of a portal or a
    proxy, a redirect not followed), never a JSON decoding error deep in the caller."""
    try:
        body = answer.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        return body
    kind = answer.headers.get("content-type", "no type")
    detail = f"answered {answer.status_code} with {kind}, not a JSON object of the Bura API"
    raise ApiError(answer.status_code, {"code": "error", "detail": detail}, dict(answer.headers))


def _problem(answer: httpx.Response) -> JSON:
    """An error answer's problem details; anything else (a proxy's page, JSON that is no
    object) is told by its status alone, and retried as that status is."""
    try:
        body = answer.json()
    except ValueError:
        return {"code": "error", "detail": answer.text[:200]}
    if isinstance(body, dict):
        return body
    return {"code": "error", "detail": str(body)[:200]}

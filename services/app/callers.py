"""Who is calling: the operator (the arbiter's full view), a seat, or a spectator; and the
secret tokens that say so. Only SHA-256 hashes of the tokens are stored."""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
from collections import OrderedDict
from typing import Literal

import msgspec

from domain.state import Game
from domain.views import ARBITER, SPECTATOR, Viewer
from infra.ports.tokens import SeatTokens
from services.app.errors import Forbidden, Unauthorized

Role = Literal["operator", "seat", "spectator"]

# What a game id may look like (games are created with hex ids). Anything else names no
# game, and some text (a NUL) cannot even be looked up in PostgreSQL: refuse it first.
GAME_ID = re.compile(r"[0-9A-Za-z_-]{1,64}")


class Caller(msgspec.Struct, frozen=True):
    role: Role
    seat: int | None = None

    @property
    def viewer(self) -> Viewer:
        if self.role == "operator":
            return ARBITER
        if self.seat is None:
            return SPECTATOR
        return self.seat

    def may_review(self, game: Game) -> bool:
        """Replay, audit and verification open to the operator at once, and to everyone at
        the table (seats and spectator) once the game is over; what each then sees is
        what docs/rules.md lets it see (a closed-discard game keeps its face-down cards)."""
        return self.role == "operator" or game.finished

    def review(self, game: Game) -> None:
        if not self.may_review(game):
            raise Forbidden("this opens to the players when the game is over")


OPERATOR = Caller("operator")


def token_hash(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Seating:
    """Issues a game's tokens and tells who a token is. A game's token hashes never change,
    so they are cached (bounded: the oldest game is dropped first)."""

    def __init__(self, tokens: SeatTokens, operator_key: str, cache: int = 4096) -> None:
        self.tokens = tokens
        self.operator_key = operator_key
        self._cache: OrderedDict[str, list[bytes]] = OrderedDict()
        self._cache_size = cache

    def game_for(self, key: str) -> str:
        """The id of the game the operator creates under an Idempotency-Key: the same for
        every retry of it, on every replica, for as long as the operator key is the same;
        and nothing of the key can be read from it."""
        return self._keyed(b"game", key.encode())[:16].hex()

    def seal(self, purpose: str, text: str) -> str:
        """A tag on `text` that only a server with this operator key makes (an opaque
        cursor's, so that one this server did not give is refused): 16 hex digits."""
        return self._keyed(purpose.encode(), text.encode())[:8].hex()

    def _keyed(self, purpose: bytes, *parts: bytes) -> bytes:
        message = b"\0".join((b"bura", purpose, *parts))
        return hmac.new(self.operator_key.encode(), message, hashlib.sha256).digest()

    async def issue(
        self, game_id: str, seats: int, *, keyed: bool = False
    ) -> tuple[list[str], str]:
        """One token per seat and the spectator's, each prefixed with the game id (so that
        a token used on the wrong game can be told from a bad one). Random; or, for a game
        created under an Idempotency-Key (`keyed`), derived from the operator key and the
        game id, so that a retry answers with the same tokens while the store still holds
        nothing but their hashes."""
        if keyed:
            tokens = [self.keyed_token(game_id, seat) for seat in range(seats + 1)]
        else:
            tokens = [f"{game_id}.{secrets.token_urlsafe(24)}" for _ in range(seats + 1)]
        hashes = [token_hash(t) for t in tokens]
        await self.tokens.save(game_id, hashes)
        # as stored: the game's first commands here need not read them back
        self._keep(game_id, hashes)
        return tokens[:-1], tokens[-1]

    def keyed_token(self, game_id: str, seat: int) -> str:
        """Seat `seat`'s token (the spectator's after the last seat) of a game created
        under an Idempotency-Key: as long and as unguessable as a random one to anyone
        without the operator key, who has every seat's token from the creation anyway."""
        secret = self._keyed(b"token", game_id.encode(), str(seat).encode())[:24]
        return f"{game_id}.{base64.urlsafe_b64encode(secret).decode()}"

    def _keep(self, game_id: str, hashes: list[bytes]) -> None:
        self._cache[game_id] = hashes
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def is_operator(self, token: str) -> bool:
        return hmac.compare_digest(token.encode(), self.operator_key.encode())

    async def seat_of(self, game_id: str, token: str) -> int | None:
        """The seat a token plays (-1 for the spectator token), or None."""
        if not GAME_ID.fullmatch(game_id):
            return None
        hashes = self._cache.get(game_id)
        if hashes is None:
            hashes = await self.tokens.hashes(game_id)
            if hashes:
                self._keep(game_id, hashes)
        digest = token_hash(token)
        found = None
        for index, stored in enumerate(hashes):
            if hmac.compare_digest(stored, digest):
                found = index
        if found is None:
            return None
        return -1 if found == len(hashes) - 1 else found

    async def operator(self, token: str | None) -> Caller:
        """The operator, or Unauthorized (an unknown token) / Forbidden (a player's)."""
        if token is None:
            raise Unauthorized("send 'Authorization: Bearer <operator key>'", no_token=True)
        if self.is_operator(token):
            return OPERATOR
        if await self.seat_of(token.partition(".")[0], token) is None:
            raise Unauthorized("unknown token")
        raise Forbidden("only the operator key may do this")

    async def caller(self, token: str | None, game_id: str) -> Caller:
        """Who the token is at this game: 401 for an unknown token, 403 for another game's."""
        if token is None:
            raise Unauthorized(
                "send 'Authorization: Bearer <operator key or seat token>'", no_token=True
            )
        if self.is_operator(token):
            return OPERATOR
        owner, dot, _ = token.partition(".")
        if dot and owner != game_id:
            # Only say "wrong game" for a token that is real for its own game.
            if await self.seat_of(owner, token) is not None:
                raise Forbidden("this token belongs to another game")
            raise Unauthorized("unknown token")
        seat = await self.seat_of(game_id, token)
        if seat is None:
            raise Unauthorized("unknown token")
        if seat == -1:
            return Caller("spectator")
        return Caller("seat", seat)

"""Request bodies and bounds of the API, decoded strictly at the edge."""

from __future__ import annotations

from typing import Annotated

import msgspec

from domain.rules import Rules
from domain.vocabulary import PauseVerdict

# Versions are bigint in the stores: a larger number is no version, refuse it at the edge.
LAST_VERSION = 2**62


class SeatSpec(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    name: Annotated[str, msgspec.Meta(min_length=1, max_length=64)]


class CreateGame(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seats: Annotated[list[SeatSpec], msgspec.Meta(min_length=2, max_length=6)]
    rules: Rules = Rules()
    seed: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None
    dealer: Annotated[int, msgspec.Meta(ge=0, le=5)] | None = None
    deck: Annotated[list[str], msgspec.Meta(max_length=52)] | None = None


class RematchBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    seed: Annotated[str, msgspec.Meta(min_length=1, max_length=256)] | None = None


class EndPauseBody(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    verdict: PauseVerdict = "play_on"

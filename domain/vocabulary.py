"""The game's closed vocabularies: every value a phase, claim, reason or rule may take.

They are Literal types, so msgspec refuses any other value when decoding and the OpenAPI
document lists them as enums."""

from __future__ import annotations

from typing import Literal

# What the table waits for within a deal ("over" once the deal has ended).
Phase = Literal["dealing", "lead", "respond", "draw", "dave_answer", "over"]
# The phase as a view shows it: the game's end replaces the last deal's "over".
# "seeding": a seat-shuffled deal waits for the seats' seeds (`shuffle: "seats"`).
ViewPhase = Literal[
    "seeding", "dealing", "lead", "respond", "draw", "dave_answer", "over", "finished"
]
# What a seat due to act must do now.
Due = Literal["seed", "lead", "respond", "draw", "dave_answer"]
Status = Literal["in_progress", "finished"]
ViewerKind = Literal["seat", "spectator", "arbiter"]

Claim = Literal["thirty_one", "bura", "four_aces"]
Combination = Literal["bura", "three_aces", "molodka"]
PenaltyRule = Literal["double_draw", "extra_card", "out_of_turn_draw"]
# What an audit finding is about: a faulty draw, or a false claim.
FindingRule = Literal[
    "double_draw", "extra_card", "out_of_turn_draw", "false_declaration", "timeout", "abandoned"
]
# Why a deal (and a game) ended.
Reason = Literal[
    "thirty_one",
    "bura",
    "four_aces",
    "false_declaration",
    "double_draw",
    "extra_card",
    "out_of_turn_draw",
    "conceded",
    "dave_declined",
    "no_claim",
    "most_points",
    "timeout",
    "abandoned",
]
DealerBy = Literal["lot", "operator", "winner", "same_dealer"]
CompensationWhy = Literal["open_seat", "first_lead"]

# The table's clock (docs/rules.md §13): what happens when a seat's time runs out, which
# clock ran out (its turn time and bank, or its absence), and the operator's ruling on a pause.
OnTimeout = Literal["lose_deal", "auto_play", "pause"]
ClockKind = Literal["turn", "abandon"]
PauseVerdict = Literal["play_on", "lose_deal"]

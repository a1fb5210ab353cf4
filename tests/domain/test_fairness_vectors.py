"""docs/fairness.md §8: the published test vectors hold for the server's own code and for the
page's reference implementation, so a third party who reproduces them checks the server."""

from __future__ import annotations

from typing import Any

import pytest

from domain.cards import deck
from domain.chain import GENESIS, Row, canonical, check_chain, link, receipt, receipt_key
from domain.shuffle import (
    commitment,
    deal_seed,
    draw_lot,
    seated_deal_seed,
    seed_commitment,
    shuffled,
)
from tests.domain.vectors import block, reference, vectors

VECTORS = vectors()
REFERENCE = reference()


@pytest.mark.parametrize("case", VECTORS["server"], ids=lambda c: f"deal{c['deal']}")
def test_the_servers_shuffle_gives_the_published_deck(case: dict[str, Any]) -> None:
    seed = deal_seed(case["game_seed"], case["deal"])
    dealt = shuffled(seed, deck(case["pack"]))
    assert (seed, list(dealt), commitment(seed, dealt)) == (
        case["deal_seed"], case["deck"], case["commitment"]
    )  # fmt: skip
    ref = REFERENCE
    seed = ref["server_seed"](case["game_seed"], case["deal"])
    dealt = ref["shuffled"](seed, ref["pack"](case["pack"]))
    assert (seed, dealt, ref["commitment"](seed, dealt)) == (
        case["deal_seed"], case["deck"], case["commitment"]
    )  # fmt: skip


@pytest.mark.parametrize("case", VECTORS["seats"], ids=lambda c: f"deal{c['deal']}")
def test_the_seats_shuffle_gives_the_published_deck(case: dict[str, Any]) -> None:
    server = deal_seed(case["game_seed"], case["deal"])
    mixed = seated_deal_seed(server, case["seeds"], case["deal"])
    dealt = shuffled(mixed, deck(case["pack"]))
    assert (server, seed_commitment(server), mixed) == (
        case["server_seed"], case["server_commitment"], case["deal_seed"]
    )  # fmt: skip
    assert (list(dealt), commitment(mixed, dealt)) == (case["deck"], case["commitment"])
    ref = REFERENCE
    server = ref["server_seed"](case["game_seed"], case["deal"])
    mixed = ref["seats_deal_seed"](server, case["seeds"], case["deal"])
    dealt = ref["shuffled"](mixed, ref["pack"](case["pack"]))
    assert ref["sha256_hex"](server) == case["server_commitment"] and mixed == case["deal_seed"]
    assert (dealt, ref["commitment"](mixed, dealt)) == (case["deck"], case["commitment"])


def test_the_lot_gives_the_published_dealers() -> None:
    for case in VECTORS["lot"]:
        assert draw_lot(case["game_seed"], case["seats"]) == case["dealer"]
        assert REFERENCE["dealer_by_lot"](case["game_seed"], case["seats"]) == case["dealer"]


def test_the_chain_gives_the_published_hashes() -> None:
    chain = VECTORS["chain"]
    previous, mine, rows = GENESIS, bytes(32), []
    for case in chain["rows"]:
        fields = (chain["stream_id"], case["version"], case["type"], case["schema_version"],
                  case["data"].encode(), case["command_id"], case["actor"],
                  case["correlation_id"], case["recorded_at"])  # fmt: skip
        record = canonical(*fields)
        assert record.hex() == case["canonical"]
        previous = link(previous, record)
        assert previous.hex() == case["hash"]
        mine = REFERENCE["row_hash"](
            mine, {**case, "stream_id": chain["stream_id"], "data": case["data"].encode()}
        )
        assert mine == previous
        rows.append(
            Row(
                stream_id=chain["stream_id"],
                version=case["version"],
                type=case["type"],
                schema_version=case["schema_version"],
                data=case["data"].encode(),
                command_id=case["command_id"],
                actor=case["actor"],
                correlation_id=case["correlation_id"],
                recorded_at=case["recorded_at"],
                hash=previous,
            )
        )
    assert check_chain(chain["stream_id"], rows).ok
    assert check_chain(chain["stream_id"], rows).head == chain["rows"][-1]["hash"]


def test_a_receipt_is_the_published_one() -> None:
    case = VECTORS["receipt"]
    head = bytes.fromhex(case["head"])
    assert head.hex() == VECTORS["chain"]["rows"][-1]["hash"]
    assert receipt_key(case["game_seed"]).hex() == case["key"]
    assert receipt(receipt_key(case["game_seed"]), head) == case["receipt"]
    assert REFERENCE["receipt"](case["game_seed"], head) == case["receipt"]


def test_the_reference_implementation_is_a_few_lines() -> None:
    code = [
        line
        for line in block("7. Reference implementation", "python").splitlines()
        if line.strip() and not line.lstrip().startswith("#")
    ]
    assert len(code) <= 60

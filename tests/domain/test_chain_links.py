"""A store hashes an append's rows with chain.links: it must give exactly the chain that
link(previous, canonical(row)) defines, row after row, for any rows."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from domain.chain import GENESIS, canonical, link, links

texts = st.text(max_size=40)
maybe_texts = st.none() | texts
events = st.tuples(texts, st.integers(1, 10_000), st.binary(max_size=300))


@given(
    previous=st.just(GENESIS) | st.binary(min_size=32, max_size=32),
    stream_id=texts,
    first_version=st.integers(1, 10**12),
    rows=st.lists(events, min_size=1, max_size=6),
    command_id=maybe_texts,
    actor=st.none() | st.integers(0, 5),
    correlation_id=maybe_texts,
    recorded_at=st.integers(0, 2**62),
)
def test_an_appends_links_are_the_chain_row_by_row(
    previous: bytes,
    stream_id: str,
    first_version: int,
    rows: list[tuple[str, int, bytes]],
    command_id: str | None,
    actor: int | None,
    correlation_id: str | None,
    recorded_at: int,
) -> None:
    expected, head = [], previous
    for version, (type, schema_version, data) in enumerate(rows, first_version):
        head = link(
            head,
            canonical(stream_id, version, type, schema_version, data, command_id, actor,
                      correlation_id, recorded_at),
        )  # fmt: skip
        expected.append(head)
    made = links(
        previous, stream_id, first_version, rows, command_id, actor, correlation_id,
        recorded_at,
    )  # fmt: skip
    assert made == expected

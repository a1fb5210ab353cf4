"""The decoder's words for a refused text, told as the README tells them."""

from services.http.commands import KEY_MAX, KEY_PATTERN, KEY_WORDS
from services.wording import in_words


def test_a_field_worded_whole_is_told_the_same_for_its_pattern_and_its_bounds() -> None:
    """The Idempotency-Key's words say its pattern and its length bounds: one wording for
    every way to miss them, whichever the decoder met first."""
    for message in (
        f"Expected `str` matching regex {KEY_PATTERN!r}",
        f"Expected `str` of length <= {KEY_MAX}",
        "Expected `str` of length >= 1",
    ):
        assert in_words(message, "idempotency-key") == KEY_WORDS


def test_any_other_field_is_told_its_pattern_in_words_and_its_bounds_generically() -> None:
    assert in_words(f"Expected `str` matching regex {KEY_PATTERN!r}", "note") == KEY_WORDS
    assert in_words("Expected `str` of length <= 256", "description") == "at most 256 characters"
    assert in_words("Expected `str` of length >= 1", "name") == "at least 1 character"
    # a message about no text's pattern or length is left as it is, whatever the field
    assert in_words("Expected `int`, got `str`", "idempotency-key") == "Expected `int`, got `str`"

"""What a refused value should have been, in words. The decoder quotes a field's pattern
(``Expected `str` matching regex '^[!-~]{16,256}$'``) and its length bounds in its own
terms; a 400 says them as the README does. Each pattern is registered with its words where
it is defined (`worded`), so that a new one cannot be left out of a list kept elsewhere."""

from __future__ import annotations

import re

from domain.commands import SEED_PATTERN

_WORDS: dict[str, str] = {}  # pattern -> what it asks for
_FIELDS: dict[str, str] = {}  # a field whose words also tell its length bounds -> words

_MATCHING = re.compile(r"^Expected `str` matching regex (?P<quoted>.+)$", re.DOTALL)
_LENGTH = re.compile(r"^Expected `str` of length (?P<bound><=|>=) (?P<count>[0-9]+)$")


def worded(pattern: str, words: str, *, field: str | None = None) -> str:
    """The pattern, registered with what it asks for in words. With `field` (the name a
    400 keys it by), the words also tell that field's length bounds: every way to miss
    them is told in the same words."""
    _WORDS[pattern] = words
    if field is not None:
        _FIELDS[field] = words
    return pattern


def words_for(pattern: str) -> str | None:
    """What the pattern asks for in words, if it was registered."""
    return _WORDS.get(pattern)


def in_words(message: str, key: str = "") -> str:
    """A decoder's message about a text in words where it quotes a registered pattern or a
    length bound; any other message as it is. `key`: the field refused, whose own words
    (see `worded`) say either."""
    if key in _FIELDS and (_MATCHING.match(message) or _LENGTH.match(message)):
        return _FIELDS[key]
    if found := _MATCHING.match(message):
        for pattern, words in _WORDS.items():
            if found["quoted"] == repr(pattern):  # as the decoder quotes it
                return words
        return message
    if found := _LENGTH.match(message):
        count = int(found["count"])
        characters = "character" if count == 1 else "characters"
        most = "at most" if found["bound"] == "<=" else "at least"
        return f"{most} {count} {characters}"
    return message


# PostgreSQL's text cannot hold a NUL: text that is stored or looked up admits any other
NO_NUL = worded("^[^\x00]*$", "any characters but NUL")
# the domain's (it imports nothing of the services), as its field's description words it
worded(SEED_PATTERN, "1 to 128 printable ASCII characters (space to ~)")

"""How the `bura` command line fails: one line on stderr and an exit code that says why."""

from __future__ import annotations

OK = 0
FAILED = 1  # the thing asked did not hold: a verification failed, an import was refused
USAGE = 2  # a bad argument or setting
UNAVAILABLE = 3  # the store cannot be reached or opened
NOT_FOUND = 4  # no such game or file
UNEXPECTED = 70  # a failure bura did not foresee (a bug): one line still, BSD's EX_SOFTWARE
BROKEN_PIPE = 141  # the reader of the output went away (`| head`): 128 + SIGPIPE, as a shell says


class CliError(Exception):
    def __init__(self, message: str, exit_code: int = FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code


def shown(text: str) -> str:
    """An argument as a message may print it: bytes that are no UTF-8 (which Python hands
    over as lone surrogates) and characters that cannot be seen, escaped."""
    try:
        raw = text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate no byte makes
        return ascii(text)[1:-1]
    return raw if raw.isprintable() else ascii(raw)[1:-1]

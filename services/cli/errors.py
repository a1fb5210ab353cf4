"""How the `bura` command line fails: one line on stderr and an exit code that says why."""

from __future__ import annotations

OK = 0
FAILED = 1  # the thing asked did not hold: a verification failed, an import was refused
USAGE = 2  # a bad argument or setting
UNAVAILABLE = 3  # the store cannot be reached or opened
NOT_FOUND = 4  # no such game or file


class CliError(Exception):
    def __init__(self, message: str, exit_code: int = FAILED) -> None:
        super().__init__(message)
        self.exit_code = exit_code

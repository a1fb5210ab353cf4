"""How the domain says no: a table that cannot be set up (BadSetup, the caller's input is
wrong), or a command that breaks a rule of play (RuleViolation)."""


class RuleViolation(Exception):
    """A command breaks a rule; `code` is stable and becomes the API's 409 body."""

    version: int | None = None  # the game's version the refusal was judged on, once known

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class TableChanged(RuleViolation):
    """A command carried the version its player saw, and the game is no longer there."""

    def __init__(self, seen: int, version: int) -> None:
        super().__init__(
            "table_changed",
            f"the command was sent on version {seen}, the game is at version {version}: "
            "look at the table again",
        )
        self.seen = seen
        self.version = version


class BadSetup(ValueError):
    """A new game cannot be set up as asked: a bad option, card, deck or dealer. `code` is
    stable and becomes the API's 400 body; `option` names the table option at fault."""

    code = "bad_setup"

    def __init__(self, detail: str, *, code: str | None = None, option: str | None = None) -> None:
        super().__init__(f"{option}: {detail}" if option else detail)
        self.detail = detail
        self.option = option
        if code is not None:
            self.code = code


class BadOption(BadSetup):
    """A table option is unknown, out of range, or contradicts another one."""

    code = "bad_option"

    def __init__(self, option: str, detail: str) -> None:
        super().__init__(detail, option=option)


class BadCard(BadSetup):
    """Text that is not a card of the notation `10H`, `AS`, `QD`."""

    code = "bad_card"

"""The one way the domain says no."""


class RuleViolation(Exception):
    """A command breaks a rule; `code` is stable and becomes the API's 409 body."""

    def __init__(self, code: str, detail: str) -> None:
        super().__init__(f"{code}: {detail}")
        self.code = code
        self.detail = detail


class BadOption(ValueError):
    """A table option is unknown, out of range, or contradicts another one."""

    def __init__(self, option: str, detail: str) -> None:
        super().__init__(f"{option}: {detail}")
        self.option = option
        self.detail = detail


class BadCard(ValueError):
    """Text that is not a card of the notation `10H`, `AS`, `QD`."""

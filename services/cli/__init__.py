"""The `bura` command line."""

from services.cli.main import main

__all__ = ["main"]

"""The operator's command line: `bura serve | demo | migrate | simulate | replay | audit |
verify | export | verify-bundle | import | play`. A failure is one line on stderr and an exit code
(services/cli/errors.py)."""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import sys
from collections.abc import Callable, Sequence
from typing import NoReturn

import msgspec

from domain.evolve import RecordBroken
from infra.ports.events import LAST_VERSION, Conflict, StoreUnavailable
from services import config
from services.app.bundle_check import Kept
from services.cli import records
from services.cli.errors import (
    BROKEN_PIPE,
    FAILED,
    NOT_FOUND,
    UNAVAILABLE,
    UNEXPECTED,
    USAGE,
    CliError,
)
from services.cli.progress import Progress


def _kept(field: str) -> Callable[[str], Kept]:
    """VERSION:HEX, as an answer of the server gave a version and its head or receipt."""

    def read(text: str) -> Kept:
        version, _, value = text.partition(":")
        number = _whole_version(version, text)
        if len(value) != 64 or not all(c in "0123456789abcdefABCDEF" for c in value):
            raise argparse.ArgumentTypeError(f"{text!r}: after VERSION:, 64 hex digits")
        if field == "hash":
            return Kept(number, hash=value)
        return Kept(number, receipt=value)

    return read


def _kept_option(parser: argparse.ArgumentParser, field: str, then: str) -> None:
    """--head VERSION:HASH or --receipt VERSION:RECEIPT, repeatable: what was kept from an
    answer of the server, and what must then hold of the file."""
    if field == "hash":
        flag, metavar, what = (
            "--head",
            "VERSION:HASH",
            "a chain head kept from an answer (the arbiter's `chain_head`)",
        )
    else:
        flag, metavar, what = (
            "--receipt",
            "VERSION:RECEIPT",
            "a `receipt` kept from an answer at VERSION",
        )
    parser.add_argument(
        flag,
        action="append",
        default=[],
        type=_kept(field),
        metavar=metavar,
        help=f"{what}: {then} (repeatable)",
    )


def _version(text: str) -> int:
    """--version: a version of the record, counted from 1, in digits only."""
    return _whole_version(text, text)


def _whole_version(digits: str, given: str) -> int:
    """A VERSION in digits, 1 to the last version the API takes (2^53 - 1, as a JSON
    number holds exactly); `given`: the argument it came in, for the message."""
    significant = digits.lstrip("0")  # read only once its length is known: no huge int
    if not (digits.isascii() and digits.isdigit()) or not significant:
        raise argparse.ArgumentTypeError(f"{given!r}: VERSION is a whole number above 0")
    if len(significant) > len(str(LAST_VERSION)) or int(significant) > LAST_VERSION:
        raise argparse.ArgumentTypeError(f"{given!r}: VERSION is at most {LAST_VERSION}")
    return int(significant)


class _Parser(argparse.ArgumentParser):
    """argparse, failing as every other failure of `bura` does: one line on stderr
    (`bura replay: ...`), exit 2; `--help` is left whole."""

    def error(self, message: str) -> NoReturn:
        self.exit(USAGE, f"{self.prog}: {message}\n")


# Options whose value may start with '-' (`--receipt -3:...`, refused for its VERSION):
# argparse would take such a value for an option and say only "expected one argument".
_DASHED_VALUES = ("--receipt", "--head", "--version")


def _joined(argv: Sequence[str]) -> list[str]:
    """`--receipt -3:HEX` as `--receipt=-3:HEX`, so that argparse hands the value over."""
    out: list[str] = []
    at = 0
    while at < len(argv):
        arg = argv[at]
        if arg == "--":
            out += argv[at:]
            break
        if arg in _DASHED_VALUES and at + 1 < len(argv) and argv[at + 1][:1] == "-":
            following = argv[at + 1]
            if following != "--" and not following.startswith("--"):
                out.append(f"{arg}={following}")
                at += 2
                continue
        out.append(arg)
        at += 1
    return out


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="bura",
        description="The Bura server's command line: the service, its store and its records.",
        epilog="Exit codes: 0 done; 1 the thing asked did not hold (a verification failed, an "
        "import was refused); 2 a bad argument or setting; 3 the store cannot be reached or "
        "opened; 4 no such game or file; 70 a failure bura did not foresee; 141 the reader "
        "of the output went away. A failure is one line on stderr.",
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the HTTP API")
    dem = sub.add_parser("demo", help="run the HTTP API with a game ready against a bot")
    dem.add_argument("--name", default="player", help="your seat's name")
    dem.add_argument("--bot", choices=["greedy", "random"], default="greedy")
    dem.add_argument("--seed", default=None, help="the game's shuffle seed (a repeatable deal)")
    sub.add_parser("migrate", help="apply the SQL migrations to BURA_DATABASE_URL")
    sim = sub.add_parser("simulate", help="play bot games and print a summary")
    sim.add_argument(
        "--games", type=int, default=200, metavar="N", help="games to play (default 200)"
    )
    sim.add_argument("--seats", type=int, default=2, metavar="S", help="seats (default 2)")
    sim.add_argument(
        "--seed", type=int, default=1, metavar="K", help="the bots' random seed (default 1)"
    )
    sim.add_argument(
        "--bot", choices=["random", "greedy"], default="random", help="the bot (default random)"
    )
    rep = sub.add_parser("replay", help="print the table of a game at a version")
    rep.add_argument("game")
    rep.add_argument(
        "--version", type=_version, metavar="N", help="a version of the record, from 1"
    )
    rep.add_argument("--json", action="store_true", help="the table as JSON (the replay's view)")
    aud = sub.add_parser("audit", help="print each penalty and false declaration with evidence")
    aud.add_argument("game")
    aud.add_argument("--json", action="store_true", help="the findings as JSON")
    ver = sub.add_parser(
        "verify", help="check a game's hash chain and every deal against its commitments"
    )
    ver.add_argument("game")
    exp = sub.add_parser("export", help="write a game's audit bundle (or, --jsonl, its events)")
    exp.add_argument("game")
    exp.add_argument("--out", default=None, help="the file (default GAME.bura.json or .jsonl)")
    exp.add_argument(
        "--jsonl", action="store_true", help="the events as JSON Lines (also: --out X.jsonl)"
    )
    vb = sub.add_parser(
        "verify-bundle", help="check an audit bundle offline: chain, deals, replay, findings"
    )
    vb.add_argument("file")
    _kept_option(vb, "hash", "the bundle's row at VERSION must have that hash")
    _kept_option(vb, "receipt", "it must be the bundle's")
    imp = sub.add_parser("import", help="load an audit bundle or a JSON Lines export")
    imp.add_argument("file")
    imp.add_argument(
        "--unverified",
        action="store_true",
        help="import JSON Lines that hold no hashes (nothing proves them the record)",
    )
    _kept_option(
        imp, "hash", "the file's row at VERSION must have that hash, so a file cut short is refused"
    )
    bot = sub.add_parser("play", help="play one seat with a bot, over the public API")
    bot.add_argument(
        "--url",
        default="http://127.0.0.1:8000",
        help="the server (default: %(default)s; BURA_PORT is not read)",
    )
    bot.add_argument("--game", required=True, help="the game id")
    bot.add_argument("--token", required=True, help="the seat's token")
    bot.add_argument("--bot", choices=["greedy", "random"], default="greedy")
    bot.add_argument("--seed", type=int, default=1, help="the random bot's seed")
    bot.add_argument(
        "--no-seen",
        dest="seen",
        action="store_false",
        help="do not send the version acted on (`seen`), for a server without it",
    )
    return parser


def _run_alone(args: argparse.Namespace) -> int:
    """The commands that need no store and read no setting: bots in-process, or a bot
    playing a server over its public API."""
    if args.command == "simulate":
        from services.cli.simulate import print_summary, simulate

        try:
            summary = simulate(
                args.games, args.seats, args.seed, args.bot, Progress("simulate", args.games)
            )
        except ValueError as e:
            raise CliError(str(e), USAGE) from None
        print_summary(summary)
        return 0
    if args.command == "play":
        from services.cli import play

        return play.main(args.url, args.game, args.token, args.bot, args.seed, args.seen)
    raise CliError(f"unknown command {args.command}", USAGE)


def _run(args: argparse.Namespace, settings: config.Settings) -> int:
    match args.command:
        case "serve":
            from services.http.server import serve

            return serve(settings)
        case "demo":
            from services.cli.demo import demo

            return demo(settings, args.name, args.bot, args.seed)
        case "migrate":
            if not settings.database_url:
                raise CliError("BURA_DATABASE_URL is not set (SQLite migrates itself)", USAGE)
            from infra.postgres.migrate import migrate

            applied = asyncio.run(migrate(settings.database_url))
            print("applied: " + (", ".join(applied) if applied else "nothing, up to date"))
            return 0
        case "replay":
            return asyncio.run(records.cmd_replay(settings, args.game, args.version, args.json))
        case "audit":
            return asyncio.run(records.cmd_audit(settings, args.game, args.json))
        case "verify":
            return asyncio.run(records.cmd_verify(settings, args.game))
        case "export":
            # JSON Lines when asked for, or when the file is named so
            jsonl = args.jsonl or (args.out or "").endswith(".jsonl")
            default = f"{args.game}.{'jsonl' if jsonl else 'bura.json'}"
            out = default if args.out is None else args.out  # "" is refused, not defaulted
            return asyncio.run(records.cmd_export(settings, args.game, out, jsonl))
        case "import":
            return asyncio.run(records.cmd_import(settings, args.file, args.unverified, args.head))
    raise CliError(f"unknown command {args.command}", USAGE)


# What each kind of failure says, and its exit code: never a traceback.
_FAILURES: tuple[tuple[type[BaseException], int, Callable[[BaseException], str]], ...] = (
    (CliError, FAILED, str),
    (config.ConfigError, USAGE, lambda e: f"bad setting: {e}"),
    (StoreUnavailable, UNAVAILABLE, lambda e: f"the event store is unavailable: {e}"),
    (Conflict, FAILED, lambda e: f"the store already holds other events: {e}"),
    (FileNotFoundError, NOT_FOUND, lambda e: f"no such file: {getattr(e, 'filename', e)}"),
    (OSError, FAILED, str),
    (msgspec.DecodeError, FAILED, lambda e: f"cannot read: {e}"),
    (
        RecordBroken,
        FAILED,
        lambda e: f"the game's record is broken: {e}; `bura verify` names the row at fault",
    ),
)


def _said(error: BaseException) -> tuple[str, int]:
    """What a failure says and its exit code. One that nothing here foresaw is a bug: it
    is still one line (its traceback only when BURA_TRACEBACK is set), exit UNEXPECTED."""
    for kind, code, say in _FAILURES:
        if isinstance(error, kind):
            return say(error), error.exit_code if isinstance(error, CliError) else code
    from services.bootstrap import refusal

    why = refusal(error)
    if why is not None:
        return why, UNAVAILABLE
    return (
        f"unexpected error (a bug in bura; BURA_TRACEBACK=1 shows where): "
        f"{type(error).__name__}: {error}",
        UNEXPECTED,
    )


def _check_host(settings: config.Settings) -> None:
    """BURA_HOST must name an address to listen on, as bind() will resolve it: one that
    is none is a bad setting (2), not a port already taken (1)."""
    try:
        socket.getaddrinfo(settings.host, settings.port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError) as e:
        why = getattr(e, "strerror", None) or e
        raise config.ConfigError(
            f"BURA_HOST={settings.host!r} is no address to listen on: {why}"
        ) from None


def _pipe_gone() -> int:
    """The reader of stdout went away (`bura replay G | head -1`): say nothing, as the
    tools of a shell do, with 128 + SIGPIPE, which no reader takes for a failed check;
    stdout goes to /dev/null, so that the interpreter's last flush finds nowhere to fail."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):  # no real stdout (a test's capture): nothing to flush
        pass
    return BROKEN_PIPE


def main(argv: Sequence[str] | None = None) -> int:
    args, rest = _parser().parse_known_args(_joined(sys.argv[1:] if argv is None else argv))
    if rest:  # said by the command it was given to, as its other usage errors are
        _Parser(prog=f"bura {args.command}").error(f"unrecognized arguments: {' '.join(rest)}")
    try:
        if args.command == "verify-bundle":  # the file alone: no setting, no store
            code = records.cmd_verify_bundle(args.file, [*args.head, *args.receipt])
        elif args.command in ("play", "simulate"):  # a client, bots: no server setting
            code = _run_alone(args)
        else:
            settings = config.load()
            from services.bootstrap import check_stores

            check_stores(settings)  # a malformed URL is a bad setting for every command
            if args.command in ("serve", "demo"):
                _check_host(settings)
            code = _run(args, settings)
        sys.stdout.flush()  # a reader gone shows here, not at the interpreter's exit
        return code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return _pipe_gone()
    except Exception as error:
        said, code = _said(error)
        if os.environ.get("BURA_TRACEBACK"):
            import traceback

            traceback.print_exc()
        print(f"bura {args.command}: {said}", file=sys.stderr)
        return code


if __name__ == "__main__":
    raise SystemExit(main())

"""One way every ``farm`` command ends: its body returns an exit code, errors map to SPEC's codes.

Library code raises ``FarmError`` and never prints; here it becomes one line on stderr and the
exit code it carries (2 bad input, 3 runtime error, …). Ctrl-C is 130; an unexpected exception
prints its traceback and exits 3. Every command, ``farm worker`` included, goes through
``run_command`` (arq's ``check_health() -> int`` shape: bodies return, this exits).
"""

from __future__ import annotations

import contextlib
import os
import sys
import traceback
from collections.abc import Callable
from typing import NoReturn

import click

from farm.cli.pipes import guard_standard_streams
from farm.errors import ExitCode, FarmError


def _print_error(exc: FarmError, *, verbose: bool) -> None:
    if verbose:
        traceback.print_exc()
    prefix = "farm: error" if exc.exit_code == ExitCode.INPUT_ERROR else "farm: runtime error"
    message = exc.message
    click.echo(f"{prefix}: {message}" if "\n" not in message else f"{prefix}:\n{message}", err=True)


def warn(line: str) -> None:
    """A warning on stderr (``farm: warning: …``): what a command goes on after."""
    click.echo(f"farm: warning: {line}", err=True)


def _refused_for_memory(exc: BaseException | None) -> bool:
    # by name: importing redis here would slow every command down
    for _ in range(10):
        if exc is None:
            return False
        if type(exc).__name__ == "OutOfMemoryError" or "OOM command not allowed" in str(exc):
            return True
        exc = exc.__cause__ or exc.__context__
    return False


def run_command(body: Callable[[], int | None], *, verbose: bool = False) -> NoReturn:
    """Run a command body and exit with the code it returns, or the one its error maps to."""
    guard_standard_streams()  # `farm … | head`: a closed stdout changes neither the files nor the code
    try:
        code = body()
    except FarmError as exc:
        _print_error(exc, verbose=verbose)
        sys.exit(int(exc.exit_code))
    except BrokenPipeError:  # `farm … | head`: the reader left; that is not a failure of ours
        with contextlib.suppress(OSError):
            sys.stdout = open(os.devnull, "w")  # noqa: SIM115 - silence the interpreter's flush at exit
        sys.exit(int(ExitCode.OK))
    except KeyboardInterrupt:
        click.echo("farm: interrupted", err=True)
        sys.exit(int(ExitCode.INTERRUPTED))
    except Exception as exc:
        if _refused_for_memory(exc):  # a full Redis: one clear line, not a traceback (README: Sizing Redis)
            click.echo(f"farm: runtime error: Redis refused writes: OOM ({exc}); raise maxmemory or free keys "
                       "(README: Sizing Redis)", err=True)
            sys.exit(int(ExitCode.RUNTIME_ERROR))
        traceback.print_exc()
        click.echo("farm: runtime error: unexpected failure (traceback above)", err=True)
        sys.exit(int(ExitCode.RUNTIME_ERROR))
    sys.exit(int(code or 0))


__all__ = ["run_command"]

"""What every long ``simms`` command shares: a progress line on stderr, Ctrl-C as cancel."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TypeVar

from engine.analyses.run import AnalysisCancelled, RunOptions
from engine.distributed import STALL_TIMEOUT
from engine.io import load_library
from engine.search import CancelToken, SearchProgress

__all__ = [
    "ProgressPrinter",
    "add_command",
    "add_run_options",
    "cancel_on_interrupt",
    "read_spectra",
    "run_in_thread",
    "run_options",
    "teller",
]

T = TypeVar("T")


class ProgressPrinter:
    """A one-line progress bar on stderr (plain lines when stderr is no terminal)."""

    def __init__(self, quiet: bool, what: str = "", hits: bool = True) -> None:
        self.quiet, self.what, self.hits = quiet, what, hits
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def __call__(self, p: SearchProgress) -> None:
        now = time.monotonic()
        if self.quiet or (now - self.last < (0.1 if self.tty else 5.0) and p.fraction < 1):
            return
        self.last = now
        width = 30
        bar = "#" * int(width * p.fraction)
        left = "" if p.seconds_left == float("inf") else f", {p.seconds_left:.0f} s left"
        what = f"{self.what}: " if self.what else ""
        hits = f", {p.hits} hits" if self.hits else ""
        line = (
            f"[{bar:<{width}}] {100 * p.fraction:5.1f}%  {what}{p.pairs_done:.3g}/"
            f"{p.pairs_total:.3g} pairs, {p.pairs_per_second:.3g} pairs/s{left}{hits}"
        )
        sys.stderr.write(("\r" + line) if self.tty else line + "\n")
        sys.stderr.flush()

    def done(self) -> None:
        if self.tty and not self.quiet and self.last:
            sys.stderr.write("\n")
        self.last = 0.0


@contextmanager
def cancel_on_interrupt(
    token: CancelToken,
    say,
    message: str = "interrupted: stopping; the hits found so far are being written",
):
    """Ctrl-C (SIGINT) cancels the work instead of raising, until the output is written.

    A process started with SIGINT ignored (a shell's ``&``, ``nohup``) keeps
    ignoring it, as Python itself does.
    """

    def handler(signum, frame) -> None:
        if not token.cancelled:
            say(message)
        token.cancel()

    if (
        threading.current_thread() is not threading.main_thread()
        or signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    ):
        yield  # signals reach only the main thread, and none is wanted if ignored
        return
    previous = signal.signal(signal.SIGINT, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def add_command(sub, name: str, about: str) -> argparse.ArgumentParser:
    """Add the subcommand ``name`` to the subparsers ``sub``.

    ``about`` is its one-line help, then, after a blank line, its description
    (reflowed, as argparse reflows it).
    """
    summary, _, description = about.partition("\n\n")
    return sub.add_parser(name, help=summary, description=" ".join(description.split()))


def add_dask_options(parser: argparse.ArgumentParser) -> None:
    """The Dask options of a subcommand.

    ``--dask ADDRESS`` / ``--dask-local N``, ``--dask-timeout S`` (to reach the
    scheduler) and ``--dask-stall-timeout S`` (``args.dask_stall_timeout``: a worker
    without a heartbeat this long is treated as lost).
    """
    d = parser.add_mutually_exclusive_group()
    d.add_argument("--dask", metavar="ADDRESS", help="run on the Dask cluster at tcp://HOST:PORT")
    d.add_argument(
        "--dask-local", type=int, metavar="N", help="start a local Dask cluster of N workers"
    )
    parser.add_argument(
        "--dask-timeout", type=float, default=10.0, help="seconds to reach --dask [10]"
    )
    parser.add_argument(
        "--dask-stall-timeout",
        type=_seconds,
        default=STALL_TIMEOUT,
        metavar="SECONDS",
        help="treat a Dask worker without a heartbeat for this long (stopped, swapping, "
        f"stuck) as lost and redo its tasks on the others [{STALL_TIMEOUT:g}]",
    )


def add_run_options(parser: argparse.ArgumentParser) -> None:
    """``--backend``, the Dask options, ``--no-cache`` and ``-q/--quiet`` of a subcommand."""
    parser.add_argument("--backend", choices=["auto", "cpu", "cuda"], default="auto")
    add_dask_options(parser)
    parser.add_argument("--no-cache", action="store_true", help="do not use the library cache")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")


@contextmanager
def run_options(
    args: argparse.Namespace, say: Callable[[str], None], **progress: object
) -> Iterator[RunOptions]:
    """How an analysis runs from the shell: ``--backend``, the Dask client, Ctrl-C as cancel.

    Progress goes to a :class:`ProgressPrinter` (``progress``: its ``what`` and
    ``hits``), the run's ``on_progress``.  The client (``--dask`` /
    ``--dask-local``) is closed when the block ends; Ctrl-C inside it cancels the
    run's token, so the analysis raises :class:`~engine.analyses.AnalysisCancelled`
    (the progress line is ended first) and nothing is written.
    """
    token = CancelToken()
    printer = ProgressPrinter(args.quiet, **progress)
    with (
        dask_client(args) as client,
        cancel_on_interrupt(token, say, "interrupted: stopping; nothing is written"),
    ):
        try:
            yield RunOptions(
                backend=args.backend, client=client, on_progress=printer, on_message=say,
                cancel_token=token, stall_timeout=args.dask_stall_timeout,
            )  # fmt: skip
        except AnalysisCancelled:
            printer.done()
            raise


def teller(quiet: bool) -> Callable[[str], None]:
    """``say(message)``: ``simms: message`` on stderr, or nothing when ``quiet``."""
    if quiet:
        return lambda message: None
    return lambda message: print(f"simms: {message}", file=sys.stderr)


def read_spectra(path: str, args: argparse.Namespace, say: Callable[[str], None], **kwargs):
    """The spectra of ``path`` (through the library cache unless ``--no-cache``), said first."""
    say(f"reading {path}")
    return load_library(path, cache=not args.no_cache, **kwargs)


def _seconds(text: str) -> float:
    """A positive number of seconds, for argparse."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected seconds > 0, not {text!r}")
    return value


@contextmanager
def dask_client(args):
    """The Dask client that ``args`` ask for (None without ``--dask``), closed at the end."""
    if not (getattr(args, "dask", None) or getattr(args, "dask_local", None)):
        yield None
        return
    from engine.distributed import open_client, shutdown

    client = open_client(args.dask, n_local=args.dask_local, timeout=args.dask_timeout)
    try:
        yield client
    finally:
        shutdown(client)


def run_in_thread(work: Callable[[], T], name: str = "simms-work") -> T:
    """``work()`` run in a worker thread while this thread only waits; its result or error.

    The main thread stays free to handle a Ctrl-C at once (see
    :func:`cancel_on_interrupt`) while numba kernels run in the worker.
    """
    result: list = []
    failure: list[BaseException] = []

    def target() -> None:
        try:
            result.append(work())
        except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
            failure.append(exc)

    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    while thread.is_alive():
        thread.join(0.2)
    if failure:
        raise failure[0]
    return result[0]

"""Children the tests interrupt start as a command typed in a terminal starts."""

from __future__ import annotations

import signal


def as_from_a_terminal() -> None:
    """``preexec_fn``: SIGINT's default action in the child, even when pytest itself was
    started with SIGINT ignored (``&``, nohup), which a child would inherit."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)

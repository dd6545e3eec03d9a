"""Ctrl-C and SIGTERM: stop cleanly, with the exit status a shell expects (130, 143).

While :func:`stop_on_signals` is active the first signal raises :class:`Stopped` in the
main thread, wherever it is waiting; the code that catches it ends the workers, removes
its temporary files (their ``with`` blocks do) and writes the report of what finished.
Further signals are ignored meanwhile, so a second Ctrl-C cannot cut that short.
"""

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(Exception):
    """The user stopped the run (Ctrl-C or SIGTERM)."""

    def __init__(self, signum):
        super().__init__(f"stopped by {signal.Signals(signum).name}")
        self.signum = signum
        self.records = None  # a folder's: the records of the files that finished ...
        self.unfinished = []  # ... and the inputs that did not

    @property
    def exit_status(self):
        return 128 + self.signum  # 130 for SIGINT, 143 for SIGTERM, as a shell reports them


@contextmanager
def stop_on_signals():
    """Turn SIGINT and SIGTERM into :class:`Stopped` (in the main thread only: signals
    can only be handled there; elsewhere this does nothing)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum, _frame):
        for each in SIGNALS:
            signal.signal(each, signal.SIG_IGN)
        raise Stopped(signum)

    previous = {each: signal.signal(each, stop) for each in SIGNALS}
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)

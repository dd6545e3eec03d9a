"""Ctrl-C and SIGTERM: stop cleanly, with the exit status a shell expects (130, 143).

While :func:`stop_on_signals` is active the first signal raises :class:`Stopped` in the
main thread, wherever it is waiting; the code that catches it ends the workers, removes
its temporary files (their ``with`` blocks do) and writes the report of what finished.
Further signals are ignored meanwhile, so a second Ctrl-C cannot cut that short.

Blender itself is started (``import bpy``) with both signals held back
(:func:`import_blender`): one that came in while Blender's start ran its Python code
raised KeyboardInterrupt in there, which Blender either swallowed (the run went on as if
never stopped) or was left half started, its exit then a segmentation fault (-11) instead
of 130. Held, the signal arrives as soon as Blender is up, and stops the run like any other.
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
def held_signals():
    """SIGINT and SIGTERM that come in during the block are only noted, and raised again
    once it ends (to whatever handles them then). Handlers, not a signal mask: a signal
    sent to the process may land on any thread (numpy's own, Blender's), and Python runs
    its handler in the main thread all the same. Main thread only, as signals are."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    noted = []
    previous = {each: signal.signal(each, lambda signum, _frame: noted.append(signum)) for each in SIGNALS}
    try:
        yield
    finally:
        for each, handler in previous.items():
            signal.signal(each, handler)
        if noted:
            signal.raise_signal(noted[0])


def import_blender():
    """``bpy``, imported with Ctrl-C and SIGTERM held until Blender has started."""
    with held_signals():
        import bpy
    return bpy


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

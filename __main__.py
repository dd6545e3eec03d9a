"""``python -m foot_lock``: the command line (see :mod:`.cli`)."""

from .cli import run

if __name__ == "__main__":
    run()

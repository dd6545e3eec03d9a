"""``--scheduler``: a folder's files as tasks on a Dask distributed cluster, one task per file.

Each task runs the local pool's one-file runner (:func:`.batch.run_worker`) on the worker
that takes it: the file is fixed in its own Blender process there, with the same
``--timeout``, the same atomic output and the same record as on this machine. The records
come back as the tasks finish, so the progress lines and the report are a local run's.

The workers must see the inputs and outputs at the same paths as this machine (a shared
file system) and have the ``bpy`` wheel and Foot Lock installed. ``local:N`` starts a Dask
cluster of N single-threaded workers inside this process instead.

A task whose worker is lost (killed, out of memory, its machine gone) is run once more;
lost again, it is reported and not tried a third time. Dask itself re-runs such a task up
to its scheduler's ``allowed-failures`` times, or gives up at once (``KilledWorker``); so
each task counts its own starts, in the scheduler's metadata under the task's key (which
the scheduler drops with the task), and this side submits again after ``KilledWorker``.

Stopping (Ctrl-C, SIGTERM) cancels the tasks and kills this run's worker processes on
every Dask worker, whose partial outputs the runner removes.

Dask and ``distributed`` are optional: they are imported only here, only when asked for.
"""

import threading
from functools import partial
from uuid import uuid4

from .batch import Workers, run_worker
from .errors import ClipError
from .farm import INSTALL, LOCAL_PREFIX
from .report import FileRecord
from .resume import stamp, stamped

ATTEMPTS = 2  # a task whose worker is lost is retried once

# On a Dask worker: the worker processes of each run, so that a stop ends only that run's.
_RUNS = {}
_RUNS_LOCK = threading.Lock()


def cluster_records(address, pairs, options, timeout, late):
    """Fix each ``(source, target)`` as a task on the cluster at ``address``; yields the
    records as the tasks finish. Closed early, it cancels the rest and kills what runs;
    the records of tasks that finished meanwhile go to the list ``late``."""
    distributed = _import_distributed()
    run = _Run(uuid4().hex, options, timeout, distributed.KilledWorker)
    with _connect(distributed, address) as client:
        tasks = {run.submit(client, source, target): (source, target, 0) for source, target in pairs}
        finished = distributed.as_completed(tasks)
        try:
            for future in finished:
                record = run.record_of(client, future, tasks.pop(future), tasks, finished)
                if record is not None:
                    yield record
        finally:
            if tasks:  # stopped, or this generator closed early: nothing more may start
                late += [f.result() for f in tasks if f.status == "finished" and f.result() is not None]
                client.cancel(list(tasks), force=True)
            # Kill what still runs. A worker that cannot be reached has lost its processes anyway.
            client.run(_stop_run, run.run_id, on_error="ignore")


def _import_distributed():
    try:
        import distributed
    except ImportError as error:
        raise ClipError(f"--scheduler needs Dask and distributed ({error}): {INSTALL}") from error
    return distributed


def _connect(distributed, address):
    """A client of the scheduler at ``address``, or of a new local cluster for ``local:N``."""
    try:
        if address.startswith(LOCAL_PREFIX):
            # Threads, not processes: each task starts its own Blender process anyway, and
            # worker processes would have to import Foot Lock under its package name.
            cluster = distributed.LocalCluster(
                n_workers=int(address[len(LOCAL_PREFIX):]), threads_per_worker=1, processes=False,
                dashboard_address=None,
            )
            return _ClusterClient(distributed.Client(cluster), cluster)
        return distributed.Client(address, timeout="20s")
    except OSError as error:  # an unreachable scheduler is a TimeoutError, an OSError
        raise ClipError(f"cannot reach the Dask scheduler at {address}: {error}") from error


class _ClusterClient:
    """A client that also closes the local cluster it talks to."""

    def __init__(self, client, cluster):
        self.client, self.cluster = client, cluster

    def __enter__(self):
        return self.client

    def __exit__(self, *exc):
        self.client.close()
        self.cluster.close()


class _Run:
    """One batch on the cluster: submits its tasks, and again after a lost worker."""

    def __init__(self, run_id, options, timeout, killed_worker):
        self.run_id, self.options, self.timeout = run_id, options, timeout
        self.killed_worker = killed_worker  # distributed's exception for a task that lost its workers

    def submit(self, client, source, target, earlier_attempts=0):
        return client.submit(cluster_task, self.run_id, source, target, self.options, self.timeout,
                             earlier_attempts, key=f"foot-lock-{self.run_id}-{uuid4().hex}", pure=False)

    def record_of(self, client, future, task, tasks, finished):
        """The record a finished task gave, or None when it was submitted again."""
        source, target, earlier_attempts = task
        if future.status == "finished":
            return future.result()
        if future.status == "cancelled":  # by someone else: the scheduler restarted, the client was closed
            return _failed(source, target, self.options, "the Dask task was cancelled")
        error = future.exception()
        if not isinstance(error, self.killed_worker):
            return _failed(source, target, self.options, f"the Dask task failed: {error!r}")
        attempts = earlier_attempts + client.get_metadata(future.key, 0)  # + its starts under this key
        if attempts >= ATTEMPTS:
            return _failed(source, target, self.options, _lost_message(attempts))
        again = self.submit(client, source, target, attempts)
        tasks[again] = (source, target, attempts)
        finished.add(again)
        return None


def _failed(source, target, options, error):
    """The record of a file that was not fixed, and whose input was not read: no hash."""
    return stamp(FileRecord(str(source), str(target), error=error), None, options)


def _lost_message(attempts):
    return f"its Dask worker was lost {attempts} times (killed, out of memory or its machine gone): not retried"


# --- on a Dask worker -------------------------------------------------------------------


def cluster_task(run_id, source, target, options, timeout, earlier_attempts):
    """One file on a Dask worker: :func:`.batch.run_worker` there, unless it lost its
    worker :data:`ATTEMPTS` times already."""
    attempts = earlier_attempts + _count_start()
    if attempts > ATTEMPTS:
        return _failed(source, target, options, _lost_message(attempts - 1))
    return stamped(source, options, partial(run_worker, source, target, options, timeout, _workers_of(run_id)))


def _count_start():
    """How many times the running task has been started, this start included."""
    from distributed import get_client, get_worker

    client, key = get_client(), get_worker().get_current_task()
    starts = client.get_metadata(key, 0) + 1
    client.set_metadata(key, starts)
    return starts


def _workers_of(run_id):
    with _RUNS_LOCK:
        return _RUNS.setdefault(run_id, Workers())


def _stop_run(run_id):
    """On every Dask worker (``client.run``): kill the processes of the run ``run_id``, and
    start no more (its stopped :class:`~.batch.Workers` stays, for a task that starts late)."""
    _workers_of(run_id).stop()

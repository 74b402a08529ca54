"""The same exact search, scaled out over a Dask cluster.

The library is split into shards: by precursor m/z ranges when a precursor
tolerance is set (a query block then only visits the shards its window
touches), evenly otherwise.  Each shard is prepared once on a worker and stays
in that worker's store (keyed by the library's content hash, the shard's range,
the preprocessing and powers), with its peak index and, on a GPU worker, its
device copy: a later search of the same library sends and prepares nothing
(the client asks the workers what they hold).  A shard a worker lacks is read
from the library's cache file when the worker can read it, else sent once.
Queries go out in blocks sized by a measured task cost model (:mod:`.cost`: a
fixed cost per task against a cost per pair), as tasks ``(shard, block) ->
each query's top-N within the shard`` (merged on the worker, so only that
travels); the client merges each block's top-N over its shards and streams the
final hits of a block as soon as all its shards are done, with progress and
cancellation as in :class:`engine.search.SearchJob`.

Hits are identical to the single-process search: every pair is scored by the
same kernel on the same arrays, and top-N ties are broken by the library index.

Faults: tasks are pure and keyed per (shard, block); Dask recomputes the tasks
(and the shard) of a worker lost mid-search on another worker, and the client
counts each (shard, block) once, so no hit is lost or duplicated.  When every
worker is lost, the job waits ``grace_period`` seconds for one to (re)join and
then raises :class:`ClusterLostError`, as it does at once when the connection to
the scheduler is lost; the hits streamed before stay valid.  A worker that stops
answering (no heartbeat for ``stall_timeout`` seconds: stopped, swapping, stuck
on a dead mount) is treated as lost the same way, and ignored if it comes back;
one that does not answer the search's first questions within ``min(stall_timeout,
10 s)`` (frozen before the search started) is left out from the start.

Dask is optional (``pip install 'simms-desktop[dask]'``); this module imports it
only when used.

Example
-------
>>> from engine import search                                # doctest: +SKIP
>>> from engine.distributed import connect                   # doctest: +SKIP
>>> client = connect("tcp://10.0.0.5:8786")                  # doctest: +SKIP
>>> hits = search(queries, library, client=client, top_n=5)  # doctest: +SKIP
"""

from engine.distributed.cluster import (
    GRACE_PERIOD,
    ClusterError,
    ClusterLostError,
    connect,
    describe,
    local_cluster,
    open_client,
    shutdown,
)
from engine.distributed.job import DaskSearchJob
from engine.distributed.watch import STALL_TIMEOUT

__all__ = [
    "GRACE_PERIOD",
    "STALL_TIMEOUT",
    "ClusterError",
    "ClusterLostError",
    "DaskSearchJob",
    "connect",
    "describe",
    "local_cluster",
    "open_client",
    "shutdown",
]

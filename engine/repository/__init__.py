"""Repository-scale exact search: many files in memory-mappable shards on disk.

:class:`Repository` is built once from spectrum files (one record per spectrum
with its file, position in the file and dataset), stored as shards of
float32 m/z and per-spectrum scaled uint16 intensities, sorted by precursor
m/z within each ion mode, appended to file by file, and searched shard by
shard with the engine's own exact search (locally, or on a Dask cluster);
hits come with a per-file / per-dataset summary.
"""

from engine.repository.repository import DEFAULT_SHARD_SPECTRA, Repository
from engine.repository.search import RepositoryProgress, RepositorySearchJob
from engine.repository.store import Shard

__all__ = [
    "DEFAULT_SHARD_SPECTRA",
    "Repository",
    "RepositoryProgress",
    "RepositorySearchJob",
    "Shard",
]

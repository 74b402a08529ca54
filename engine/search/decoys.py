"""Decoy spectra for target-decoy q-values: deterministic, kept with their library.

Two schemes make one decoy per library spectrum (both searched in the same pass as
the library, appended to it; :func:`target_decoy_library`):

* ``"fragments"``: the spectrum's precursor m/z, ion mode and intensities, its
  fragments replaced by m/z drawn at random from every fragment of the library's
  spectra of the same ion mode that lies below its precursor (the "naive" decoys of
  Scheubert et al. 2017, Nat. Commun. 8:1494).  Peaks within 1.6 Da of the
  precursor (the precursor ion and its isotopes) stay as they are.
* ``"shifted"``: the spectrum as it is, its precursor m/z moved up by
  :data:`PRECURSOR_SHIFT` Da: a real spectrum of another compound, offered to
  queries of a precursor it does not have.

The draws come from ``numpy.random.default_rng(seed)``: the same library gives
the same decoys in every run and on every machine.
"""

from __future__ import annotations

import numpy as np

from engine.library import SpectrumLibrary
from engine.memo import derived

__all__ = ["DECOY_PREFIX", "PRECURSOR_SHIFT", "decoy_library", "target_decoy_library"]

#: Decoy ids are the library id with this prefix.
DECOY_PREFIX = "DECOY_"
#: Da added to the precursor m/z by the ``"shifted"`` scheme (no common neutral loss).
PRECURSOR_SHIFT = 10.0
#: Peaks this close below the precursor m/z are kept by the ``"fragments"`` scheme.
NEAR_PRECURSOR = 1.6


def decoy_library(library: SpectrumLibrary, scheme: str, *, seed: int = 0) -> SpectrumLibrary:
    """One decoy spectrum per spectrum of ``library``, in the same order.

    Parameters
    ----------
    library : SpectrumLibrary
        The target library.
    scheme : {"fragments", "shifted"}
        See the module's description.
    seed : int, default 0
        Seed of the random draws (``"fragments"``).

    Returns
    -------
    SpectrumLibrary
        Decoys with ids ``DECOY_<id>``, name ``decoy``, no structure.
    """
    if scheme == "shifted":
        mz, intensity, offsets = library.mz, library.intensity, library.offsets
        precursor = library.precursor_mz + PRECURSOR_SHIFT
    elif scheme == "fragments":
        mz, intensity, offsets = _drawn_fragments(library, seed)
        precursor = library.precursor_mz
    else:
        raise ValueError(f"no decoy spectra for scheme {scheme!r} (fragments or shifted)")
    n = len(library)
    ids = np.array([DECOY_PREFIX + str(i) for i in library.metadata["id"]], dtype=object)
    return SpectrumLibrary(
        mz=mz, intensity=intensity, offsets=offsets, precursor_mz=precursor,
        charge=library.charge, ion_mode=library.ion_mode,
        metadata={"id": ids, "name": np.full(n, "decoy", dtype=object)},
    )  # fmt: skip


def target_decoy_library(
    library: SpectrumLibrary, scheme: str, *, seed: int = 0
) -> SpectrumLibrary:
    """``library`` followed by its decoys (spectrum ``len(library) + i`` is the decoy of ``i``).

    Built once per library object, scheme and seed and kept with the library (with
    it, the decoys' prepared peaks and precursor order are kept for later searches).
    """

    def build() -> SpectrumLibrary:
        decoys = decoy_library(library, scheme, seed=seed)
        n_target = library.n_peaks
        return SpectrumLibrary(
            mz=np.concatenate([library.mz, decoys.mz]),
            intensity=np.concatenate([library.intensity, decoys.intensity]),
            offsets=np.concatenate([library.offsets, decoys.offsets[1:] + n_target]),
            precursor_mz=np.concatenate([library.precursor_mz, decoys.precursor_mz]),
            charge=np.concatenate([library.charge, decoys.charge]),
            ion_mode=np.concatenate([library.ion_mode, decoys.ion_mode]),
            metadata={
                "id": np.concatenate([library.metadata["id"], decoys.metadata["id"]]),
            },
        )

    budget = 8 * (library.mz.nbytes + library.intensity.nbytes) + (1 << 20)
    return derived(library, ("target_decoy", scheme, seed), build, budget=budget)


def _drawn_fragments(
    library: SpectrumLibrary, seed: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(mz, intensity, offsets)`` of the ``"fragments"`` decoys (see the module)."""
    rng = np.random.default_rng(seed)
    counts = np.diff(library.offsets)
    owner = np.repeat(np.arange(len(library)), counts)
    mz = np.array(library.mz, dtype=np.float64)
    precursor = library.precursor_mz[owner]
    limit = np.where(np.isfinite(precursor), precursor - NEAR_PRECURSOR, np.inf)
    replace = mz < limit
    mode = library.ion_mode[owner]
    for m in np.unique(mode):
        pool = np.sort(mz[mode == m])
        rows = np.flatnonzero(replace & (mode == m))
        eligible = np.searchsorted(pool, limit[rows], side="left")  # pool peaks below the limit
        drawn = np.floor(rng.random(len(rows)) * eligible).astype(np.int64)
        usable = eligible > 0
        mz[rows[usable]] = pool[drawn[usable]]
    order = np.lexsort((mz, owner))
    mz, intensity, owner = mz[order], library.intensity[order], owner[order]
    repeated = np.zeros(len(mz), dtype=bool)  # the same m/z drawn twice for one spectrum
    repeated[1:] = (owner[1:] == owner[:-1]) & (mz[1:] == mz[:-1])
    mz, intensity, owner = mz[~repeated], intensity[~repeated], owner[~repeated]
    offsets = np.zeros(len(library) + 1, dtype=np.int64)
    np.cumsum(np.bincount(owner, minlength=len(library)), out=offsets[1:])
    return mz, np.array(intensity, dtype=np.float64), offsets

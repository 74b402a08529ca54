"""Consensus spectra: one spectrum per cluster from the peaks its members share."""

from __future__ import annotations

import numpy as np

from engine.library import SpectrumLibrary

__all__ = ["consensus_spectra"]


def consensus_spectra(
    spectra: SpectrumLibrary,
    labels: np.ndarray,
    representatives: np.ndarray,
    *,
    tolerance: float = 0.02,
    min_fraction: float = 0.5,
) -> SpectrumLibrary:
    """The consensus spectrum of each cluster (as MS-Cluster and msCRUSH make them).

    Method: every member's peaks are scaled to its base peak (1.0) and pooled
    per cluster; sorted by m/z, peaks no more than ``tolerance`` apart join one
    consensus peak (a chain of such gaps is one peak).  A consensus peak is kept
    when it holds peaks of at least ``min_fraction`` of the cluster's members;
    its m/z is the intensity-weighted mean of its peaks, its intensity their
    sum divided by the number of members (the mean over members, 0 for a member
    without it).  A singleton's consensus is its own spectrum, scaled.

    Parameters
    ----------
    spectra : SpectrumLibrary
        The clustered spectra (peaks as in the file).
    labels : ndarray of int
        Cluster of each spectrum, 0 .. n_clusters - 1.
    representatives : ndarray of int
        Each cluster's representative, whose metadata and precursor the
        consensus spectrum takes.
    tolerance : float
        m/z gap (Da) within which peaks are one consensus peak.
    min_fraction : float
        Share of members a consensus peak needs, in (0, 1].

    Returns
    -------
    SpectrumLibrary
        One spectrum per cluster, in cluster order.
    """
    if not 0 < min_fraction <= 1:
        raise ValueError(f"min_fraction must be in (0, 1], not {min_fraction}")
    labels = np.asarray(labels, dtype=np.int64)
    n_clusters = len(representatives)
    size = np.bincount(labels, minlength=n_clusters)
    counts = spectra.peak_counts
    owner = np.repeat(np.arange(len(spectra)), counts)
    base = np.zeros(len(spectra))
    nonempty = counts > 0
    base[nonempty] = np.maximum.reduceat(spectra.intensity, spectra.offsets[:-1][nonempty])
    intensity = spectra.intensity / base[owner] if len(owner) else spectra.intensity.copy()
    cluster = labels[owner]
    order = np.lexsort((spectra.mz, cluster))
    mz, intensity, cluster, owner = (
        spectra.mz[order],
        intensity[order],
        cluster[order],
        owner[order],
    )
    new_peak = np.ones(len(mz), dtype=bool)
    new_peak[1:] = (cluster[1:] != cluster[:-1]) | (np.diff(mz) > tolerance)
    group = np.cumsum(new_peak) - 1
    n_groups = int(group[-1]) + 1 if len(group) else 0
    group_cluster = cluster[new_peak]
    # members with a peak in each group (a member may bring several peaks)
    pairs = np.unique(group * len(spectra) + owner)
    members = np.bincount(pairs // len(spectra), minlength=n_groups) if len(pairs) else np.zeros(0)
    total = np.bincount(group, intensity, minlength=n_groups)
    weighted = np.bincount(group, intensity * mz, minlength=n_groups)
    need = np.ceil(min_fraction * size[group_cluster] - 1e-9)
    keep = members >= need
    out_mz = weighted[keep] / total[keep]
    out_intensity = total[keep] / size[group_cluster[keep]]
    per_cluster = np.bincount(group_cluster[keep], minlength=n_clusters)
    offsets = np.zeros(n_clusters + 1, dtype=np.int64)
    np.cumsum(per_cluster, out=offsets[1:])
    reps = spectra.subset(representatives)
    return reps.with_peaks(out_mz.astype(np.float64), out_intensity.astype(np.float64), offsets)

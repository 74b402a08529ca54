"""Near-duplicate and conflicting library entries, from the exact all-vs-all search."""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

import numpy as np

from engine.analyses.run import RunOptions, self_search
from engine.api import as_library, parameters_with
from engine.library import SpectrumLibrary
from engine.params import SearchParameters

__all__ = [
    "PAIR_KINDS",
    "QC_DEFAULTS",
    "LibraryQC",
    "compound_keys",
    "deduplicate",
    "duplicate_groups",
    "library_qc",
]

#: What makes two library entries "the same spectrum" unless told otherwise.
#:
#: * the fragments only: peaks within 1.6 Da of the precursor m/z are left out
#:   (the window Flash entropy search cleans away: the intact precursor ion and
#:   its isotopes).  An unfragmented precursor says nothing about structure, yet
#:   it dominates low-energy spectra: with it, any two compounds of one ion (and
#:   profile-like precursor clusters) score a cosine near 1.  On MassBank this
#:   turns 4,364 "conflicts" into 2,996 (``benchmarks/RESULTS.md``);
#: * greedy cosine (matchms ``CosineGreedy``) >= 0.95 on those peaks: a
#:   re-deposited or re-exported record scores 1.0; re-measurements, and
#:   neighbouring collision energies of a stable ion, whose fragments barely
#:   change, score >= 0.95 too and add nothing to a search (on MassBank 93 % of
#:   the duplicate pairs found differ in their recorded collision energy);
#: * fragments within 0.02 Da, precursors within 0.01 Da: the identity-search
#:   tolerances, several times the m/z accuracy of the high-resolution
#:   instruments that dominate today's libraries (< 5 ppm, 0.005 Da at m/z
#:   1000), and nominal-mass records still agree exactly with each other; two
#:   ions 0.01 Da apart have different elemental compositions;
#: * at least 3 matched fragment peaks: one or two shared peaks give a cosine
#:   near 1 between any two compounds of the same ion, which is no evidence of
#:   a duplicate or of a conflict (with raw peaks and 1 matched peak allowed,
#:   14,088 of MassBank's 18,452 "conflicts" had only 1 or 2);
#: * same ion mode.
QC_DEFAULTS: dict[str, object] = {
    "mode": "custom",
    "score": "cosine",
    "tolerance": 0.02,
    "precursor_tolerance": 0.01,
    "precursor_unit": "Da",
    "match_ion_mode": True,
    "threshold": 0.95,
    "min_matches": 3,
    "preprocess": '[["remove_precursor_peaks", {"tolerance": 1.6}]]',
}

#: Kinds of near-identical pairs: the same compound, different compounds, or unknown.
PAIR_KINDS = ("duplicate", "conflict", "unverified")


def compound_keys(library: SpectrumLibrary) -> tuple[np.ndarray, np.ndarray]:
    """Each spectrum's compound, as far as its record tells.

    Returns
    -------
    key : ndarray of object
        The InChIKey's first block (the constitution; stereoisomers share it),
        upper case; for a record without an InChIKey, ``"name:"`` and its name
        in lower case; ``""`` when it has neither.
    from_inchikey : ndarray of bool
        True where the key is an InChIKey block.
    """
    inchikey = np.char.upper(np.char.strip(library.metadata["inchikey"].astype(str)))
    block = np.array([k.split("-")[0] for k in inchikey], dtype=object)
    from_inchikey = np.array([len(b) == 14 and b.isalpha() for b in block], dtype=bool)
    names = np.char.lower(np.char.strip(library.metadata["name"].astype(str)))
    by_name = np.where(names != "", np.char.add("name:", names), "").astype(object)
    key = np.where(from_inchikey, block, by_name).astype(object)
    return key, from_inchikey


@dataclass(frozen=True, eq=False)
class LibraryQC:
    """The near-identical pairs of a library, and its duplicate groups.

    Attributes
    ----------
    library : SpectrumLibrary
    params : SearchParameters
        What "near-identical" meant (score, tolerances, threshold, min matches).
    pairs : ndarray of int64, shape (n_pairs, 2)
        Near-identical spectrum pairs, lower index first, sorted.
    score, matches : ndarray
        Each pair's score and matched peaks.
    kind : ndarray of object
        Each pair's kind (:data:`PAIR_KINDS`): ``duplicate`` (the same compound:
        same InChIKey first block, or same name where neither has an InChIKey),
        ``conflict`` (InChIKey first blocks differ) or ``unverified`` (the
        records do not tell: a key missing on one side, or different names
        without InChIKeys).
    group : ndarray of int64, shape (n_spectra,)
        Each spectrum's duplicate group, numbered from 1; -1 for spectra in no
        group (:func:`duplicate_groups`: a representative and its duplicates).
    representatives : ndarray of int64, shape (n_groups,)
        The spectrum each group keeps (group ``g`` at position ``g - 1``).
    """

    library: SpectrumLibrary
    params: SearchParameters
    pairs: np.ndarray
    score: np.ndarray
    matches: np.ndarray
    kind: np.ndarray
    group: np.ndarray
    representatives: np.ndarray

    def __repr__(self) -> str:
        counts = self.counts()
        return (
            f"<LibraryQC of {counts['spectra']} spectra: {counts['duplicate_groups']} duplicate "
            f"groups, {counts['conflicting_pairs']} conflicting pairs>"
        )

    def keep(self) -> np.ndarray:
        """True for every spectrum a de-duplicated library keeps."""
        keep = self.group < 0
        keep[self.representatives] = True
        return keep

    def counts(self) -> dict[str, int]:
        """Summary counts: spectra, pairs of each kind, groups, spectra a de-duplication drops."""
        sizes = np.bincount(self.group[self.group > 0])
        return {
            "spectra": len(self.library),
            "near_identical_pairs": len(self.pairs),
            "duplicate_pairs": int((self.kind == "duplicate").sum()),
            "duplicate_groups": int((sizes > 0).sum()),
            "spectra_in_duplicate_groups": int(sizes.sum()),
            "redundant_spectra": int(sizes.sum() - (sizes > 0).sum()),
            "conflicting_pairs": int((self.kind == "conflict").sum()),
            "spectra_in_conflicts": len(np.unique(self.pairs[self.kind == "conflict"])),
            "unverified_pairs": int((self.kind == "unverified").sum()),
        }

    def deduplicated(self) -> SpectrumLibrary:
        """The library without its redundant copies (one spectrum kept per duplicate group)."""
        return self.library.subset(np.flatnonzero(self.keep()))


def library_qc(
    library: SpectrumLibrary | str | os.PathLike,
    params: SearchParameters | None = None,
    *,
    run: RunOptions | None = None,
    **keywords: object,
) -> LibraryQC:
    """Find near-duplicate and conflicting entries of a spectral library.

    Every pair of spectra whose precursors agree is scored by the engine's exact
    search; pairs scoring at least the threshold with enough matched peaks are
    near-identical, and :func:`compound_keys` tells duplicates from conflicts.

    Parameters
    ----------
    library : SpectrumLibrary or path
    params : SearchParameters, optional
        Default :data:`QC_DEFAULTS` (cosine >= 0.95 on the fragments, >= 3 matched
        peaks, fragments 0.02 Da, precursors 0.01 Da, same ion mode).
    run : RunOptions, optional
        Where and how the all-vs-all search runs.
    **keywords
        Fields of :class:`RunOptions` (``backend="cpu"``), then of
        :class:`SearchParameters` (``threshold=0.9``, ...).

    Returns
    -------
    LibraryQC

    Raises
    ------
    AnalysisCancelled
        When the cancel token was cancelled.
    """
    run = RunOptions.take(keywords, run)
    if params is None:
        params = parameters_with(None, {**QC_DEFAULTS, **keywords}, "library_qc")
    else:
        params = parameters_with(params, keywords, "library_qc")
    params = dataclasses.replace(params, top_n=0)
    library = as_library(library)
    hits, _ = self_search(library, params, run)
    pairs, rows = _unordered_pairs(hits.query_index, hits.library_index, len(library))
    kind = _pair_kinds(library, pairs)
    group, representatives = duplicate_groups(pairs[kind == "duplicate"], len(library))
    return LibraryQC(
        library=library, params=params, pairs=pairs, score=hits.score[rows],
        matches=hits.matches[rows], kind=kind, group=group,
        representatives=representatives,
    )  # fmt: skip


def _unordered_pairs(q: np.ndarray, l: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Each pair of spectra once, lower index first, sorted, and the hit that gives it.

    Of a pair found both ways, the hit with the lower index as query.
    """
    low, high = np.minimum(q, l), np.maximum(q, l)
    rows = np.lexsort((q, high, low))  # (low, high), lower query first
    key = low[rows] * n + high[rows]
    first = np.ones(len(rows), dtype=bool)
    first[1:] = key[1:] != key[:-1]
    rows = rows[first]
    return np.stack([low[rows], high[rows]], axis=1).astype(np.int64), rows


def _pair_kinds(library: SpectrumLibrary, pairs: np.ndarray) -> np.ndarray:
    """Each pair's kind (:data:`PAIR_KINDS`), from the compounds the records name."""
    keys, from_inchikey = compound_keys(library)
    a, b = pairs[:, 0], pairs[:, 1]
    both_inchikey = from_inchikey[a] & from_inchikey[b]
    neither = ~from_inchikey[a] & ~from_inchikey[b]
    same = (keys[a] == keys[b]) & (keys[a] != "")
    kind = np.full(len(pairs), "unverified", dtype=object)
    kind[same & (both_inchikey | neither)] = "duplicate"
    kind[both_inchikey & ~same] = "conflict"
    return kind


def duplicate_groups(pairs: np.ndarray, n_spectra: int) -> np.ndarray:
    """Groups of duplicates, each a representative and duplicates it stands for.

    Greedy cover: the spectrum with the most duplicates (ties: the lower index)
    becomes a representative and takes its duplicates not yet taken as its
    group; then the next spectrum not yet taken, and so on (a spectrum whose
    duplicates were all taken stays in no group, and in the library).  So every spectrum
    of a group is a duplicate of its representative itself, not only through a
    chain of others (single linkage would put a spectrum and a quite different
    one in one group through intermediates, and de-duplication would drop it
    for a spectrum it does not resemble); the representative is each group's
    one de-duplication keeps.

    Returns
    -------
    group : ndarray of int64, shape (n_spectra,)
        Group number from 1 (in the order representatives were chosen), -1
        outside groups.
    representatives : ndarray of int64, shape (n_groups,)
        Each group's representative.
    """
    pairs = np.asarray(pairs, dtype=np.int64).reshape(-1, 2)
    both = np.concatenate([pairs, pairs[:, ::-1]])
    both = both[np.lexsort((both[:, 1], both[:, 0]))]
    starts = np.searchsorted(both[:, 0], np.arange(n_spectra + 1))
    degree = np.diff(starts)
    group = np.full(n_spectra, -1, dtype=np.int64)
    taken = np.zeros(n_spectra, dtype=bool)
    number = 0
    representatives = []
    for i in np.lexsort((np.arange(n_spectra), -degree)):
        if taken[i] or degree[i] == 0:
            continue
        members = both[starts[i] : starts[i + 1], 1]
        members = members[~taken[members]]
        taken[i] = True
        if not len(members):
            continue  # its duplicates all stand for others already: it stays, in no group
        number += 1
        group[i] = number
        group[members] = number
        taken[members] = True
        representatives.append(i)
    return group, np.asarray(representatives, dtype=np.int64)


def deduplicate(
    library: SpectrumLibrary | str | os.PathLike, qc: LibraryQC | None = None, **kwargs: object
) -> SpectrumLibrary:
    """``library`` with one spectrum kept per duplicate group (the first in file order).

    Conflicting and unverified pairs are left alone: they need a curator.
    ``kwargs`` go to :func:`library_qc` when no ``qc`` is given.
    """
    if qc is None:
        qc = library_qc(library, **kwargs)
    return qc.deduplicated()

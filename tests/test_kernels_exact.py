"""Exactness of the CPU greedy-cosine kernels against matchms 0.33 on real spectra."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from engine.kernels import (
    SearchOptions,
    SpectrumSet,
    cosine_greedy_pair,
    dense_block,
    modified_cosine_pair,
    prepare_weights,
    search_block,
)
from engine.kernels.greedy import SCRATCH_SIZE
from tests.references import CosineGreedy, ModifiedCosineGreedy, Spectrum  # noqa: E402

DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"


# --------------------------------------------------------------------------- #
# data
# --------------------------------------------------------------------------- #
def _read_mgf(path: Path) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """Tiny MGF reader for the test data (peaks and PEPMASS only)."""
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8") as fh:
        text = fh.read()
    out = []
    for block in text.split("BEGIN IONS")[1:]:
        body = block.split("END IONS", 1)[0]
        prec = np.nan
        peaks = []
        for line in body.splitlines():
            if line[:1].isdigit():
                peaks.append(line)
            elif line.startswith("PEPMASS="):
                prec = float(line[8:].split()[0])
        arr = np.array(" ".join(peaks).split(), dtype=np.float64).reshape(-1, 2)
        arr = arr[:, :2]
        out.append((arr[:, 0].copy(), arr[:, 1].copy(), prec))
    return out


def _csr(spectra):
    mz = np.concatenate([s[0] for s in spectra]) if spectra else np.empty(0)
    it = np.concatenate([s[1] for s in spectra]) if spectra else np.empty(0)
    off = np.zeros(len(spectra) + 1, dtype=np.int64)
    np.cumsum([s[0].size for s in spectra], out=off[1:])
    prec = np.array([s[2] for s in spectra], dtype=np.float64)
    return mz, it, off, prec


@pytest.fixture(scope="module")
def massbank() -> list[tuple[np.ndarray, np.ndarray, float]]:
    return _read_mgf(DATA / "massbank_ms2.mgf.gz")


@pytest.fixture(scope="module")
def real_spectra(massbank) -> list[tuple[np.ndarray, np.ndarray, float]]:
    """~56 real spectra: the largest and the most densely spaced MassBank spectra,
    random MassBank ones, and pesticides.mgf (GNPS)."""
    lib = massbank
    sizes = np.array([s[0].size for s in lib])
    largest = list(np.argsort(sizes, kind="stable")[::-1][:8])
    spacing = np.array([np.median(np.diff(s[0])) if s[0].size >= 40 else np.inf for s in lib])
    densest = [i for i in np.argsort(spacing, kind="stable")[:20] if i not in largest][:8]
    rng = np.random.default_rng(20240611)
    rand = [int(i) for i in rng.choice(len(lib), 20, replace=False)]
    chosen = list(dict.fromkeys([*largest, *densest, *rand]))
    spectra = [lib[i] for i in chosen]
    pest = _read_mgf(DATA / "pesticides.mgf")
    spectra += pest[::4]  # 19 GNPS spectra
    assert max(s[0].size for s in spectra) == 2210
    return spectra


def _mm(spec) -> Spectrum:
    return Spectrum(
        mz=spec[0],
        intensities=spec[1],
        metadata={"precursor_mz": spec[2]},
        metadata_harmonization=False,
    )


def _all_vs_all(spectra, tol, mzp, ip, modified):
    mz, it, off, prec = _csr(spectra)
    w, norm = prepare_weights(mz, it, off, mzp, ip)
    n = len(spectra)
    spectra = SpectrumSet(mz, w, off, norm, prec)
    return dense_block(spectra, spectra, 0, n, 0, n, tolerance=tol, modified=modified)


def _compare(spectra, pairs, tol, mzp, ip, modified):
    """Returns (n pairs, max |diff|, match mismatches) of dense_block vs matchms."""
    scores, matches = _all_vs_all(spectra, tol, mzp, ip, modified)
    sim = (ModifiedCosineGreedy if modified else CosineGreedy)(
        tolerance=tol, mz_power=mzp, intensity_power=ip
    )
    objs = [_mm(s) for s in spectra]
    max_diff = 0.0
    bad_matches = 0
    for ref, qry in pairs:
        r = sim.pair(objs[ref], objs[qry])
        # dense_block: row = query, column = library (= matchms reference)
        max_diff = max(max_diff, abs(float(r["score"]) - scores[qry, ref]))
        bad_matches += int(r["matches"]) != matches[qry, ref]
    return len(pairs), max_diff, bad_matches


# --------------------------------------------------------------------------- #
# exactness vs matchms on real data
# --------------------------------------------------------------------------- #
@pytest.mark.parametrize(
    ("tol", "mzp", "ip"),
    [(0.1, 0.0, 1.0), (0.01, 0.0, 1.0), (1.0, 0.0, 1.0), (0.1, 1.0, 0.5), (1.0, 3.0, 0.6)],
)
@pytest.mark.slow
def test_cosine_all_pairs_match_matchms(real_spectra, tol, mzp, ip):
    n = len(real_spectra)
    pairs = [(a, b) for a in range(n) for b in range(n)]
    npairs, max_diff, bad = _compare(real_spectra, pairs, tol, mzp, ip, False)
    print(
        f"cosine tol={tol} mz_power={mzp} intensity_power={ip}: {npairs} pairs, "
        f"max|diff|={max_diff:.2e}, match mismatches={bad}"
    )
    assert max_diff <= 1e-6
    assert bad == 0


@pytest.mark.parametrize(("tol", "mzp", "ip"), [(0.1, 0.0, 1.0), (1.0, 1.0, 0.5)])
def test_modified_cosine_all_pairs_match_matchms(real_spectra, tol, mzp, ip):
    n = len(real_spectra)
    pairs = [(a, b) for a in range(n) for b in range(n)]
    npairs, max_diff, bad = _compare(real_spectra, pairs, tol, mzp, ip, True)
    print(
        f"modified tol={tol} mz_power={mzp} intensity_power={ip}: {npairs} pairs, "
        f"max|diff|={max_diff:.2e}, match mismatches={bad}"
    )
    assert max_diff <= 1e-6
    assert bad == 0


@pytest.mark.slow
def test_pair_functions_equal_matchms(real_spectra):
    sel = real_spectra[:6] + real_spectra[-4:]
    cg = CosineGreedy(tolerance=0.5)
    mc = ModifiedCosineGreedy(tolerance=0.5)
    for a in sel:
        for b in sel:
            s, m = cosine_greedy_pair(a[0], a[1], b[0], b[1], tolerance=0.5)
            r = cg.pair(_mm(a), _mm(b))
            assert abs(s - float(r["score"])) <= 1e-12 and m == int(r["matches"])
            s, m = modified_cosine_pair(a[0], a[1], a[2], b[0], b[1], b[2], tolerance=0.5)
            r = mc.pair(_mm(a), _mm(b))
            assert abs(s - float(r["score"])) <= 1e-12 and m == int(r["matches"])


# --------------------------------------------------------------------------- #
# synthetic adversarial cases
# --------------------------------------------------------------------------- #
def _check_synthetic(spectra, tol, mzp=0.0, ip=1.0):
    n = len(spectra)
    pairs = [(a, b) for a in range(n) for b in range(n)]
    for modified in (False, True):
        _, max_diff, bad = _compare(spectra, pairs, tol, mzp, ip, modified)
        assert max_diff <= 1e-9
        assert bad == 0
    for a, b in pairs[:: max(1, len(pairs) // 40)]:
        s, m = cosine_greedy_pair(
            spectra[a][0],
            spectra[a][1],
            spectra[b][0],
            spectra[b][1],
            tolerance=tol,
            mz_power=mzp,
            intensity_power=ip,
        )
        r = CosineGreedy(tol, mzp, ip).pair(_mm(spectra[a]), _mm(spectra[b]))
        assert abs(s - float(r["score"])) <= 1e-9 and m == int(r["matches"])


def test_ties_equal_intensities_and_duplicate_mz():
    rng = np.random.default_rng(7)
    spectra = []
    for _ in range(14):
        k = int(rng.integers(1, 40))
        mz = np.sort(np.round(rng.uniform(100, 110, k), 1))  # duplicates and grid ties
        inten = rng.choice([1.0, 2.0, 4.0], k)  # many equal products
        spectra.append((mz, inten, float(rng.uniform(200, 205))))
    spectra.append((np.array([100.0, 100.0, 100.0]), np.array([1.0, 1.0, 1.0]), 200.0))
    spectra.append((np.array([100.0, 100.05, 100.1]), np.array([1.0, 1.0, 1.0]), 200.1))
    _check_synthetic(spectra, 0.1)
    _check_synthetic(spectra, 0.2, 1.0, 0.5)


def test_dense_component_exceeds_scratch():
    rng = np.random.default_rng(11)
    spectra = []
    for _ in range(6):
        k = int(rng.integers(200, 600))
        mz = np.sort(rng.uniform(300, 310, k))  # ~50 peaks per Da
        inten = rng.choice([1.0, 3.0, 5.0, 7.0], k)
        spectra.append((mz, inten, float(rng.uniform(400, 401))))
    # a single component holds thousands of candidates at tol = 1.0
    _check_synthetic(spectra, 1.0)
    _check_synthetic(spectra, 0.05)
    mz = spectra[0][0]
    assert np.count_nonzero(np.abs(mz[:, None] - spectra[1][0][None, :]) <= 1.0) > SCRATCH_SIZE


def test_empty_and_disjoint_spectra():
    e = np.empty(0)
    assert cosine_greedy_pair(e, e, [100.0], [1.0]) == (0.0, 0)
    assert cosine_greedy_pair([100.0], [1.0], [200.0], [1.0]) == (0.0, 0)
    assert modified_cosine_pair([100.0], [1.0], 150.0, [200.0], [1.0], 250.0) == (1.0, 1)
    spectra = [(e, e, 100.0), (np.array([100.0]), np.array([2.0]), np.nan)]
    mz, it, off, prec = _csr(spectra)
    w, norm = prepare_weights(mz, it, off)
    both = SpectrumSet(mz, w, off, norm, prec)
    s, m = dense_block(both, both, 0, 2, 0, 2, modified=True)
    assert s.tolist() == [[0.0, 0.0], [0.0, 1.0]] and m.tolist() == [[0, 0], [0, 1]]


def test_invalid_input_raises():
    with pytest.raises(ValueError):
        cosine_greedy_pair([2.0, 1.0], [1.0, 1.0], [1.0], [1.0])
    with pytest.raises(ValueError):
        cosine_greedy_pair([1.0, 2.0], [1.0], [1.0], [1.0])
    with pytest.raises(ValueError):
        cosine_greedy_pair([1.0], [1.0], [1.0], [1.0], tolerance=-1.0)
    with pytest.raises(ValueError):
        modified_cosine_pair([1.0], [1.0], np.nan, [1.0], [1.0], 100.0)


# --------------------------------------------------------------------------- #
# search_block vs brute force
# --------------------------------------------------------------------------- #
def _brute_hits(scores, matches, qp, lp, q0, l0, ptol, ppm, min_matches, threshold, top_n):
    rows = []
    for r in range(scores.shape[0]):
        hits = []
        for c in range(scores.shape[1]):
            if ptol > 0:
                t = ptol * 1e-6 * qp[q0 + r] if ppm else ptol
                if not abs(qp[q0 + r] - lp[l0 + c]) <= t:
                    continue
            if matches[r, c] >= max(1, min_matches) and scores[r, c] >= threshold:
                hits.append((-scores[r, c], l0 + c, matches[r, c]))
        hits.sort()
        if top_n > 0:
            hits = hits[:top_n]
        rows += [(q0 + r, li, -ns, m) for ns, li, m in hits]
    return rows


@pytest.mark.parametrize(
    ("ptol", "ppm", "min_matches", "threshold", "top_n", "modified"),
    [
        (0.0, False, 0, 0.0, 0, False),
        (0.0, False, 3, 0.2, 0, False),
        (0.0, False, 0, 0.0, 5, False),
        (2.0, False, 2, 0.1, 3, False),
        (20.0, True, 0, 0.0, 0, True),
        (50.0, True, 1, 0.05, 4, True),
        (0.0, False, 0, 0.3, 2, False),
        (0.0, False, 0, 0.0, 1, False),
        (500.0, True, 4, 0.0, 3, False),
    ],
)
@pytest.mark.slow
@pytest.mark.parametrize("prune", [True, False])
def test_search_block_equals_brute_force(
    real_spectra, ptol, ppm, min_matches, threshold, top_n, modified, prune
):
    lib = real_spectra
    qry = real_spectra[5:30] + [(np.array([100.0]), np.array([1.0]), np.nan)]
    lmz, lit, loff, lprec = _csr(lib)
    qmz, qit, qoff, qprec = _csr(qry)
    qprec[3] = lprec[12] + 1e-4  # make precursor windows non-trivial
    lw, lnorm = prepare_weights(lmz, lit, loff)
    qw, qnorm = prepare_weights(qmz, qit, qoff)
    q0, q1, l0, l1 = 2, len(qry), 3, len(lib) - 1
    queries = SpectrumSet(qmz, qw, qoff, qnorm, qprec)
    library = SpectrumSet(lmz, lw, loff, lnorm, lprec)
    scores, matches = dense_block(
        queries, library, q0, q1, l0, l1, tolerance=0.1, modified=modified
    )
    options = SearchOptions(0.1, modified, ptol, ppm, min_matches, threshold, top_n)
    qi, li, sc, mt = search_block(queries, library, q0, q1, l0, l1, options, prune=prune)
    assert qi.dtype == np.int64 and li.dtype == np.int64
    assert sc.dtype == np.float64 and mt.dtype == np.int32
    got = list(zip(qi.tolist(), li.tolist(), sc.tolist(), mt.tolist(), strict=True))
    want = _brute_hits(
        scores, matches, qprec, lprec, q0, l0, ptol, ppm, min_matches, threshold, top_n
    )
    assert got == want
    assert len(got) > 0


def test_dense_block_equals_pair_function(real_spectra):
    spectra = real_spectra[10:40]
    scores, matches = _all_vs_all(spectra, 0.05, 0.0, 1.0, False)
    mscores, mmatches = _all_vs_all(spectra, 0.05, 0.0, 1.0, True)
    for q in range(0, len(spectra), 3):
        for l in range(len(spectra)):
            a, b = spectra[l], spectra[q]
            assert cosine_greedy_pair(a[0], a[1], b[0], b[1], tolerance=0.05) == (
                scores[q, l],
                matches[q, l],
            )
            assert modified_cosine_pair(a[0], a[1], a[2], b[0], b[1], b[2], tolerance=0.05) == (
                mscores[q, l],
                mmatches[q, l],
            )


@pytest.mark.parametrize(
    ("threshold", "top_n", "ptol"), [(0.0, 10, 0.0), (0.6, 0, 0.0), (0.0, 3, 5.0)]
)
@pytest.mark.slow
def test_pruned_search_equals_brute_force_on_massbank(massbank, threshold, top_n, ptol):
    """The bound-pruned search returns exactly the brute-force hits (real ties included)."""
    mz, it, off, prec = _csr(massbank)
    w, norm = prepare_weights(mz, it, off)
    nl = len(massbank)
    for q0 in (0, 31000):  # two blocks of 30 consecutive queries
        spectra = SpectrumSet(mz, w, off, norm, prec)
        options = SearchOptions(0.1, False, ptol, False, 0, threshold, top_n)
        args = (spectra, spectra, q0, q0 + 30, 0, nl, options)
        a = search_block(*args, prune=True)
        b = search_block(*args, prune=False)
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)
        assert a[0].size > 0

"""Real libraries at real scale: a 1.5 M-spectrum library built from MassBank.

The library is ``--replicas`` copies of ``massbank_ms2.mgf.gz`` (28 copies:
1,522,920 spectra, 43 M peaks): copy 0 is the file itself, every other copy has
each peak's m/z and the precursor m/z moved by a normal jitter (``--jitter``,
0.002 Da) and each intensity multiplied by a log-normal noise (σ 0.1), so scores
stay realistic (a query still finds its compound, but not 28 identical hits).
Queries: the 1,000 MassBank queries (the first 100 for the "100 queries" runs),
and ten jittered copies of them for the 10,000-query run.

Measures, and prints one table:

* building the library in memory, saving it as a cache entry (``.npz``) and
  loading that entry in a fresh process (time and peak memory of that process);
* optionally (``--mgf``) the cold load of the same library written as MGF, in a
  fresh process;
* CPU search (and GPU where present, ``--backend``): 100 queries in identity
  mode, first search (prepares the library) and again on the resident library,
  with the time to first hits; 10,000 queries, cosine 0.02 Da with a ±0.5 Da
  precursor window, on the resident library.

Run from the repository root::

    python benchmarks/bench_scale.py [--data ../shared/data] [--replicas 28] [--mgf]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import engine  # noqa: E402
from engine.io import read_library  # noqa: E402
from engine.library import SpectrumLibrary  # noqa: E402


def replicate(lib: SpectrumLibrary, replicas: int, jitter: float, seed: int) -> SpectrumLibrary:
    """``replicas`` copies of ``lib``, all but the first with m/z jitter and intensity noise."""
    rng = np.random.default_rng(seed)
    counts = np.diff(lib.offsets)
    owner = np.repeat(np.arange(len(lib)), counts)
    mz_parts, int_parts, prec_parts = [], [], []
    for r in range(replicas):
        mz, intensity, precursor = lib.mz, lib.intensity, lib.precursor_mz
        if r:
            mz = np.abs(mz + rng.normal(0.0, jitter, mz.shape))
            intensity = intensity * rng.lognormal(0.0, 0.1, intensity.shape)
            precursor = precursor + rng.normal(0.0, jitter, precursor.shape)
            order = np.lexsort((mz, owner))  # keep each spectrum's peaks sorted by m/z
            mz, intensity = mz[order], intensity[order]
        mz_parts.append(mz)
        int_parts.append(intensity)
        prec_parts.append(precursor)
    offsets = np.concatenate([[0], np.cumsum(np.tile(counts, replicas), dtype=np.int64)]).astype(
        np.int64
    )
    metadata = {k: np.tile(v, replicas) for k, v in lib.metadata.items()}
    ids = metadata["id"]
    n = len(lib)
    for r in range(1, replicas):
        ids[r * n : (r + 1) * n] = [f"{i}~r{r}" for i in lib.metadata["id"]]
    return SpectrumLibrary(
        mz=np.concatenate(mz_parts),
        intensity=np.concatenate(int_parts),
        offsets=offsets,
        precursor_mz=np.concatenate(prec_parts),
        charge=np.tile(lib.charge, replicas),
        ion_mode=np.tile(lib.ion_mode, replicas),
        metadata=metadata,
    )


def write_mgf(lib: SpectrumLibrary, path: Path) -> None:
    """The library as MGF (peaks and the fields searches use; benchmark only)."""
    with open(path, "w", encoding="utf-8") as fh:
        for i in range(len(lib)):
            mz, intensity = lib.peaks(i)
            mode = {1: "positive", -1: "negative"}.get(int(lib.ion_mode[i]), "")
            head = (
                f"BEGIN IONS\nTITLE={lib.metadata['title'][i]}\nPEPMASS={lib.precursor_mz[i]:.6f}\n"
                f"IONMODE={mode}\nSPECTRUMID={lib.metadata['id'][i]}\n"
                f"NAME={lib.metadata['name'][i]}\nINCHIKEY={lib.metadata['inchikey'][i]}\n"
            )
            peaks = "\n".join(f"{m:.6f}\t{v:.6g}" for m, v in zip(mz, intensity, strict=True))
            fh.write(f"{head}{peaks}\nEND IONS\n\n")


#: Peak memory of the process running it, in GB.  ``VmHWM`` belongs to the process's
#: own memory map; ``ru_maxrss`` of a child started with vfork + exec starts at the
#: parent's peak (Linux keeps the old map's high-water mark across exec), so it
#: would report this benchmark's own memory, not the child's.
_PEAK_GB = (
    "def _peak_gb():\n"
    "    try:\n"
    "        for line in open('/proc/self/status'):\n"
    "            if line.startswith('VmHWM:'):\n"
    "                return int(line.split()[1]) * 1024 / 1e9\n"
    "    except OSError:\n"
    "        pass\n"
    "    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6\n"
)


def in_fresh_process(code: str) -> tuple[float, float]:
    """Run ``code`` (which prints its seconds) in a new interpreter: (seconds, peak RSS GB)."""
    script = (
        "import resource, sys, time\n"
        f"sys.path.insert(0, {str(ROOT)!r})\n{code}\n{_PEAK_GB}"
        "print(_peak_gb())\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.split()
    return float(out[-2]), float(out[-1])


def timed_search(queries, library, params, backend) -> tuple[float, float, int]:
    """Seconds, seconds to the first hits, and hits of one streamed search."""
    start = time.perf_counter()
    job = engine.search_job(queries, library, params, backend=backend, keep_hits=False)
    first, hits = None, 0
    for chunk in job:
        if first is None and len(chunk):
            first = time.perf_counter() - start
        hits += len(chunk)
    return time.perf_counter() - start, first or float("nan"), hits


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--replicas", type=int, default=28)
    ap.add_argument("--jitter", type=float, default=0.002, help="m/z jitter (Da, normal σ)")
    ap.add_argument("--backend", default="cpu", help="cpu, cuda or both (cpu,cuda)")
    ap.add_argument("--mgf", action="store_true", help="also time a cold MGF load")
    ap.add_argument("--work", type=Path, help="folder for the files (default: a temp folder)")
    args = ap.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="simms-scale-"))
    work.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, str]] = []

    massbank = read_library(args.data / "massbank_ms2.mgf.gz")
    query_file = read_library(args.data / "massbank_ms2_queries.mgf.gz")
    t = time.perf_counter()
    library = replicate(massbank, args.replicas, args.jitter, seed=1)
    peak_gb = (library.mz.nbytes + library.intensity.nbytes) / 1e9
    rows.append(
        (
            f"build {len(library):,} spectra, {library.n_peaks:,} peaks ({peak_gb:.2f} GB)",
            f"{time.perf_counter() - t:.1f} s",
        )
    )
    npz = work / "library.npz"
    t = time.perf_counter()
    library.save(npz)
    rows.append(
        (
            f"save as a cache entry ({npz.stat().st_size / 1e9:.2f} GB)",
            f"{time.perf_counter() - t:.1f} s",
        )
    )
    sec, rss = in_fresh_process(
        "from engine.library import SpectrumLibrary\n"
        f"t = time.perf_counter(); lib = SpectrumLibrary.load({str(npz)!r})\n"
        "print(time.perf_counter() - t)"
    )
    rows.append(("cached load (fresh process)", f"{sec:.2f} s, peak RSS {rss:.2f} GB"))
    if args.mgf:
        mgf = work / "library.mgf"
        t = time.perf_counter()
        write_mgf(library, mgf)
        rows.append(
            (f"write MGF ({mgf.stat().st_size / 1e9:.2f} GB)", f"{time.perf_counter() - t:.0f} s")
        )
        sec, rss = in_fresh_process(
            "from engine.io import read_library\n"
            f"t = time.perf_counter(); lib = read_library({str(mgf)!r})\n"
            "print(time.perf_counter() - t)"
        )
        rows.append(
            (
                "cold MGF load (fresh process)",
                f"{sec:.1f} s = {len(library) / sec:.3g} spectra/s, peak RSS {rss:.2f} GB",
            )
        )

    q100 = query_file.subset(np.arange(100))
    q10k = replicate(query_file, 10, args.jitter, seed=2)
    identity = engine.SearchParameters(top_n=10)
    window = engine.SearchParameters(
        mode="custom", tolerance=0.02, precursor_tolerance=0.5, top_n=10
    )
    for backend in args.backend.split(","):
        sec, first, hits = timed_search(q100, library, identity, backend)
        rows.append(
            (
                f"{backend}: 100 queries, identity, first search (prepares)",
                f"{sec:.2f} s, first hits {first:.2f} s, {hits} hits",
            )
        )
        sec, first, hits = timed_search(q100, library, identity, backend)
        rows.append(
            (
                f"{backend}: 100 queries, identity, resident library",
                f"{sec:.2f} s, first hits {first:.2f} s, {hits} hits",
            )
        )
        timed_search(q100, library, window, backend)  # prepares the cosine weights
        sec, first, hits = timed_search(q10k, library, window, backend)
        rows.append(
            (
                f"{backend}: 10,000 queries, cosine ±0.5 Da, resident",
                f"{sec:.2f} s, first hits {first:.2f} s, {hits} hits",
            )
        )
    rows.append(
        (
            "peak RSS of this process",
            f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f} GB",
        )
    )

    print(f"\n{'run':58s} result")
    for name, result in rows:
        print(f"{name:58s} {result}")
    if args.work is None:
        for f in work.iterdir():
            f.unlink()
        os.rmdir(work)


if __name__ == "__main__":
    main()

"""Cold loads of MSP and library JSON (GNPS, MoNA): ours next to matchms's loaders.

MassBank (default ``../shared/data/massbank_ms2.mgf.gz``, 54,390 spectra) is read
once and written, into a work folder (not part of the project), as

* an MSP in the NIST style, by matchms's ``save_as_msp(style="nist")``
  (``NAME:``/``PRECURSORMZ:``/``Num Peaks:`` and one ``m/z<TAB>intensity`` line per peak);
* a GNPS library JSON (a list of flat records with ``peaks_json`` as a JSON string,
  as the GNPS library downloads have it), by a small writer below;
* a MoNA JSON export (``compound``/``metaData`` lists of ``{name, value}`` and
  ``spectrum`` as ``"m/z:intensity m/z:intensity ..."``), by a small writer below.

Each file is then loaded cold (no library cache: read, hashed, decoded and parsed
every time) by ``engine.read_library`` (its default, fast, path and
``parser="reference"``, the line-by-line reader every fast path is checked
against), best of ``--repeats``, and by matchms's ``load_from_msp`` /
``load_from_json`` (one run; matchms has no MoNA JSON reader).  The spectra
counts and the peaks (after sorting by m/z) of ours and of matchms are compared,
and the table is printed with wall and CPU seconds, spectra/s and the load
average.  Usage::

    python benchmarks/bench_load_formats.py [--file PATH] [--work DIR] [--repeats 3]
                                            [--formats msp,gnps,mona] [--skip-matchms]
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT))

from engine.io import read_library  # noqa: E402
from engine.library import SpectrumLibrary  # noqa: E402

FILES = {"msp": "massbank.msp", "gnps": "massbank_gnps.json", "mona": "massbank_mona.json"}


def _text(library: SpectrumLibrary, key: str, i: int) -> str:
    column = library.metadata.get(key)
    return "" if column is None else str(column[i])


def write_msp(library: SpectrumLibrary, path: Path) -> None:
    """The library as a NIST-style MSP, written by matchms's ``save_as_msp``."""
    from matchms import Spectrum
    from matchms.exporting import save_as_msp

    keys = ("name", "adduct", "formula", "smiles", "inchi", "inchikey", "instrument_type")
    keys += ("instrument", "collision_energy", "spectrum_id")
    spectra = []
    for i in range(len(library)):
        mz, intensity = library.peaks(i)
        meta = {k: _text(library, k, i) for k in keys if _text(library, k, i)}
        meta["compound_name"] = meta.pop("name", "")
        meta["precursor_mz"] = float(library.precursor_mz[i])
        meta["ionmode"] = {1: "positive", -1: "negative"}.get(int(library.ion_mode[i]), "")
        meta["charge"] = int(library.charge[i])
        spectra.append(
            Spectrum(mz=mz, intensities=intensity, metadata=meta, metadata_harmonization=False)
        )
    save_as_msp(spectra, str(path), mode="w", style="nist", write_peak_comments=False)


def write_gnps_json(library: SpectrumLibrary, path: Path) -> None:
    """The library as a GNPS library JSON (flat records, ``peaks_json`` a JSON string)."""
    records = []
    for i in range(len(library)):
        mz, intensity = library.peaks(i)
        peaks = [[float(a), float(b)] for a, b in zip(mz, intensity, strict=True)]
        records.append(
            {
                "spectrum_id": _text(library, "id", i),
                "source_file": "massbank_ms2.mgf",
                "ms_level": "2",
                "library_membership": "MASSBANK",
                "peaks_json": json.dumps(peaks, separators=(",", ":")),
                "splash": _text(library, "splash", i),
                "Compound_Name": _text(library, "name", i),
                "Ion_Source": "LC-ESI",
                "Instrument": _text(library, "instrument", i),
                "Adduct": _text(library, "adduct", i),
                "Precursor_MZ": repr(float(library.precursor_mz[i])),
                "Charge": str(int(library.charge[i])),
                "Smiles": _text(library, "smiles", i) or "N/A",
                "INCHI": _text(library, "inchi", i) or "N/A",
                "Ion_Mode": {1: "Positive", -1: "Negative"}.get(int(library.ion_mode[i]), "N/A"),
                "InChIKey_smiles": _text(library, "inchikey", i),
                "Formula_smiles": _text(library, "formula", i),
            }
        )
    path.write_text(json.dumps(records), encoding="utf-8")


def write_mona_json(library: SpectrumLibrary, path: Path) -> None:
    """The library as a MoNA JSON export (``spectrum`` as ``"m/z:intensity ..."``)."""

    def entry(name: str, value: object, category: str = "none") -> dict:
        return {
            "category": category,
            "computed": False,
            "hidden": False,
            "name": name,
            "value": value,
        }

    records = []
    for i in range(len(library)):
        mz, intensity = library.peaks(i)
        peaks = " ".join(f"{float(a)!r}:{float(b)!r}" for a, b in zip(mz, intensity, strict=True))
        compound_meta = [entry("molecular formula", _text(library, "formula", i))]
        if _text(library, "smiles", i):
            compound_meta.append(entry("SMILES", _text(library, "smiles", i)))
        meta = [
            entry("ms level", "MS2", "mass spectrometry"),
            entry("precursor type", _text(library, "adduct", i), "mass spectrometry"),
            entry("precursor m/z", float(library.precursor_mz[i]), "mass spectrometry"),
            entry("instrument", _text(library, "instrument", i)),
            entry("instrument type", _text(library, "instrument_type", i)),
            entry("collision energy", _text(library, "collision_energy", i), "mass spectrometry"),
        ]
        if library.ion_mode[i]:
            mode = "positive" if library.ion_mode[i] > 0 else "negative"
            meta.append(entry("ionization mode", mode, "mass spectrometry"))
        records.append(
            {
                "compound": [
                    {
                        "inchi": _text(library, "inchi", i),
                        "inchiKey": _text(library, "inchikey", i),
                        "metaData": compound_meta,
                        "names": [
                            {"computed": False, "name": _text(library, "name", i), "score": 0}
                        ],
                    }
                ],
                "id": _text(library, "id", i),
                "metaData": meta,
                "score": {"score": 0.0},
                "spectrum": peaks,
                "splash": {"splash": _text(library, "splash", i)},
                "tags": [{"ruleBased": False, "text": "MassBank"}],
            }
        )
    path.write_text(json.dumps(records), encoding="utf-8")


def _cpu() -> float:
    """CPU seconds of this process and of its children that ended (a reader may fork)."""
    times = os.times()
    return times.user + times.system + times.children_user + times.children_system


def _best(function, repeats: int) -> tuple[float, float, object]:
    """Best wall seconds of ``repeats`` runs, that run's CPU seconds, and the result."""
    best, cpu, result = float("inf"), float("nan"), None
    for _ in range(repeats):
        result = None  # the previous run's library is freed before, not inside, the timing
        start, start_cpu = time.perf_counter(), _cpu()
        result = function()
        seconds = time.perf_counter() - start
        if seconds < best:
            best, cpu = seconds, _cpu() - start_cpu
    return best, cpu, result


def _load_avg() -> str:
    try:
        return Path("/proc/loadavg").read_text().split()[0]
    except OSError:
        return "-"


def _matchms_load(kind: str, path: Path) -> list:
    import matchms.importing as importing

    logging.getLogger("matchms").setLevel(logging.ERROR)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if kind == "msp":
            return list(importing.load_from_msp(str(path)))
        return list(importing.load_from_json(str(path)))


def same_peaks(library: SpectrumLibrary, spectra: list) -> int:
    """Number of spectra whose peaks (sorted by m/z) differ from matchms's; -1 if counts differ."""
    if len(spectra) != len(library):
        return -1
    differ = 0
    for i, spectrum in enumerate(spectra):
        mz, intensity = library.peaks(i)
        order = np.argsort(spectrum.peaks.mz, kind="stable")
        theirs_mz = np.asarray(spectrum.peaks.mz, dtype=np.float64)[order]
        theirs_int = np.asarray(spectrum.peaks.intensities, dtype=np.float64)[order]
        if not (np.array_equal(mz, theirs_mz) and np.array_equal(intensity, theirs_int)):
            differ += 1
    return differ


def same_library(a: SpectrumLibrary, b: SpectrumLibrary) -> bool:
    """Peaks and per-spectrum arrays bit for bit, metadata and report equal."""
    for name in ("mz", "intensity", "offsets", "precursor_mz", "charge", "ion_mode"):
        if getattr(a, name).tobytes() != getattr(b, name).tobytes():
            return False
    columns_equal = list(a.metadata) == list(b.metadata) and all(
        a.metadata[k].tolist() == b.metadata[k].tolist() for k in a.metadata
    )
    return columns_equal and a.report == b.report


def main() -> None:
    """Write the files (once per work folder), time the loads and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--file", type=Path, default=DATA / "massbank_ms2.mgf.gz")
    parser.add_argument("--work", type=Path, default=None, help="folder for the converted files")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--formats", default="msp,gnps,mona")
    parser.add_argument("--skip-matchms", action="store_true")
    args = parser.parse_args()
    work = args.work or Path(tempfile.gettempdir()) / "simms_bench_formats"
    work.mkdir(parents=True, exist_ok=True)

    source = None
    writers = {"msp": write_msp, "gnps": write_gnps_json, "mona": write_mona_json}
    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    for kind in formats:
        path = work / FILES[kind]
        if not path.exists():
            source = source or read_library(args.file)
            start = time.perf_counter()
            writers[kind](source, path)
            print(f"wrote {path.name} in {time.perf_counter() - start:.1f} s", flush=True)

    rows = []
    for kind in formats:
        path = work / FILES[kind]
        size = path.stat().st_size / 1e6
        load = _load_avg()
        fast_s, fast_cpu, fast = _best(lambda p=path: read_library(p), args.repeats)
        ref_s, ref_cpu, ref = _best(
            lambda p=path: read_library(p, parser="reference"), args.repeats
        )
        equal = "yes" if same_library(fast, ref) else "NO"
        n = len(fast)
        rows.append(
            (kind, size, f"ours (best of {args.repeats})", fast_s, fast_cpu, n, load, equal)
        )
        rows.append(
            (
                kind,
                size,
                f"ours, reference parser (best of {args.repeats})",
                ref_s,
                ref_cpu,
                len(ref),
                load,
                "-",
            )
        )
        if not args.skip_matchms and kind != "mona":
            load = _load_avg()
            start, start_cpu = time.perf_counter(), _cpu()
            spectra = _matchms_load(kind, path)
            seconds, cpu = time.perf_counter() - start, _cpu() - start_cpu
            differ = same_peaks(fast, spectra)
            check = "count differs" if differ < 0 else f"{differ} spectra differ"
            loader = "load_from_msp" if kind == "msp" else "load_from_json"
            rows.append(
                (kind, size, f"matchms {loader} (1 run)", seconds, cpu, len(spectra), load, check)
            )

    print(f"{args.file.name} converted; {os.cpu_count()} CPUs")
    print(
        "| file | MB | method | seconds | CPU seconds | spectra | spectra/s "
        "| spectra per CPU s | load avg | check |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for kind, size, name, seconds, cpu, count, load, check in rows:
        print(
            f"| {FILES[kind]} | {size:.0f} | {name} | {seconds:.3f} | {cpu:.3f} | {count:,} "
            f"| {count / seconds:,.0f} | {count / cpu:,.0f} | {load} | {check} |"
        )
    print("check: ours = fast path equal to the reference parser (arrays, metadata, report);")
    print("matchms = spectra whose peaks, sorted by m/z, differ from ours.")


if __name__ == "__main__":
    main()

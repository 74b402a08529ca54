"""Load every spectrum file of matchms's test data with our reader and with matchms's loader.

Usage::

    python benchmarks/compare_matchms_testdata.py --testdata DIR

``DIR`` is the ``tests/testdata`` folder of the matchms repository (not part of this
project).  For each spectrum file (MSP/MSL, JSON, mzML, mzXML, MGF) the table shows
how many spectra each side reads, whether the peaks are identical (m/z and intensity
arrays after sorting by m/z; our reader drops zero-intensity peaks on purpose and
reports that as a repair) and, for each difference, the import report's reason.
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
import warnings
from pathlib import Path

import numpy as np

from engine.io import SpectrumFileError, read_library

#: File suffix -> name of the matchms loader that reads it.
LOADERS = {
    ".msp": "load_from_msp",
    ".msl": "load_from_msp",
    ".json": "load_from_json",
    ".mzml": "load_from_mzml",
    ".mzxml": "load_from_mzxml",
    ".mgf": "load_from_mgf",
}


def _matchms_spectra(path: Path) -> list:
    import matchms.importing as importing

    logging.getLogger("matchms").setLevel(logging.ERROR)
    loader = getattr(importing, LOADERS[path.suffix.lower()])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return list(loader(str(path)))


def _sorted_peaks(mz: np.ndarray, intensity: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(mz, kind="stable")
    return np.asarray(mz, dtype=np.float64)[order], np.asarray(intensity, dtype=np.float64)[order]


def _kept_records(lib) -> list[int] | None:
    """Record number of each spectrum, where every record is either kept or skipped."""
    if lib.source.format in ("mzml", "mzxml"):  # other MS levels are neither
        return None
    skipped = {issue.record for issue in lib.report.skipped}
    kept = [r for r in range(1, lib.report.records + 1) if r not in skipped]
    return kept if len(kept) == len(lib) else None


def compare_file(path: Path) -> dict:
    """One row of the table: counts, peak identity and the reasons for differences."""
    row: dict = {"file": path.name, "format": "-", "ours": "-", "matchms": "-", "why": []}
    try:
        theirs = _matchms_spectra(path)
        row["matchms"] = len(theirs)
    except Exception as exc:  # noqa: BLE001 - the table reports any failure
        theirs = None
        row["matchms"] = f"error: {type(exc).__name__}"
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            lib = read_library(path)
    except SpectrumFileError as exc:
        row["ours"] = 0 if "no valid spectra" in exc.reason else "error"
        row["identical"] = "- (no spectra)" if theirs == [] and row["ours"] == 0 else "no"
        row["why"].append(f"ours: {exc.reason}")
        return row
    row["format"], row["ours"] = lib.source.format, len(lib)
    if theirs is None:
        row["identical"] = "no"
        return row
    if len(theirs) != len(lib):
        row["identical"] = "no (count)"
        row["why"] += [str(issue) for issue in lib.report.skipped]
        return row
    records = _kept_records(lib)
    repairs = {issue.record: issue.reason for issue in lib.report.repaired}
    verdict = "yes"
    for i, spectrum in enumerate(theirs):
        ref_mz, ref_int = _sorted_peaks(spectrum.peaks.mz, spectrum.peaks.intensities)
        mz, intensity = lib.peaks(i)
        if np.array_equal(mz, ref_mz) and np.array_equal(intensity, ref_int):
            continue
        record = records[i] if records else None
        reason = repairs.get(record, "") if record else ""
        keep = ref_int > 0
        explained = (
            np.array_equal(mz, ref_mz[keep])
            and np.array_equal(intensity, ref_int[keep])
            and "zero" in reason
        )
        where = f"spectrum {i + 1} (record {record})" if record else f"spectrum {i + 1}"
        if explained:
            verdict = "yes, after repairs" if verdict == "yes" else verdict
            dropped = [part for part in reason.split("; ") if "zero" in part]
            row["why"].append(f"{where}: {dropped[0]}; matchms keeps them")
        else:
            verdict = "no"
            row["why"].append(f"{where}: peaks differ ({reason or 'no report entry'})")
    row["identical"] = verdict
    return row


def main(argv: list[str] | None = None) -> int:
    """Print the comparison table; exit status 1 when a difference is unexplained."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--testdata", required=True, type=Path, help="matchms tests/testdata")
    parser.add_argument("--json", action="store_true", help="print rows as JSON lines")
    args = parser.parse_args(argv)
    files = sorted(
        p for p in args.testdata.iterdir() if p.suffix.lower() in LOADERS and p.is_file()
    )
    rows = [compare_file(p) for p in files]
    if args.json:
        for row in rows:
            print(json.dumps(row))
    else:
        print(
            "| file | read as | spectra ours | spectra matchms | peaks identical | differences "
            "(our import report) |"
        )
        print("|---|---|---|---|---|---|")
        for row in rows:
            print(
                f"| {row['file']} | {row['format']} | {row['ours']} | {row['matchms']} "
                f"| {row['identical']} | {'; '.join(row['why'])} |"
            )
    unexplained = [r for r in rows if r["identical"].startswith("no") and not r["why"]]
    unexplained += [r for r in rows if any("peaks differ" in w for w in r["why"])]
    return 1 if unexplained else 0


if __name__ == "__main__":
    sys.exit(main())

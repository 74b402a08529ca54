"""Write the format test files of this folder from five real spectra.

Run from the repository root (needs ``../shared/data``)::

    PYTHONPATH=. python tests/data/formats/make_files.py

Sources: ``pesticides.mgf`` spectra 1 and 6 (GNPS, negative mode) and ``sample.msp``
records 3-5 (MassBank HBM4EU, CC0, positive mode).  Each file holds the same five
spectra (numbers written with ``repr``, so they read back exactly), except
``golm.msp``, which holds them at nominal mass as GOLM does (m/z rounded, the
largest intensity kept per nominal m/z).  ``sample.mzXML`` adds one MS1 survey
scan per polarity (the precursors, intensity 1000) around the nested MS2 scans.
"""

from __future__ import annotations

import base64
import json
import zlib
from pathlib import Path

import numpy as np

from engine.io import read_library

HERE = Path(__file__).resolve().parent
DATA = HERE.parents[2].parent / "shared" / "data"
#: (file, 0-based spectrum index) of the five source spectra.
SOURCES = [
    ("pesticides.mgf", 0),
    ("pesticides.mgf", 5),
    ("sample.msp", 2),
    ("sample.msp", 3),
    ("sample.msp", 4),
]
FIELDS = ("id", "name", "smiles", "inchi", "inchikey", "formula", "adduct")


def source_spectra() -> list[dict]:
    """The five spectra as plain dicts (peaks, precursor, ion mode, metadata)."""
    out = []
    for name, index in SOURCES:
        lib = read_library(DATA / name)
        record = lib.record(index)
        mz, intensity = lib.peaks(index)
        spectrum = {k: str(record.get(k, "")) for k in FIELDS}
        spectrum.update(
            mz=[float(x) for x in mz],
            intensity=[float(x) for x in intensity],
            precursor=float(lib.precursor_mz[index]),
            ion_mode=record["ion_mode"],
            instrument=str(record.get("instrument") or record.get("source_instrument", "")),
        )
        out.append(spectrum)
    return out


def nominal(mz: list[float], intensity: list[float]) -> tuple[list[int], list[float]]:
    """Peaks at nominal mass: the largest intensity per rounded m/z."""
    best: dict[int, float] = {}
    for m, i in zip(mz, intensity, strict=True):
        key = int(np.rint(m))
        best[key] = max(best.get(key, 0.0), i)
    keys = sorted(best)
    return keys, [best[k] for k in keys]


def _msp_head(s: dict, *, upper: bool = False) -> list[str]:
    pairs = [
        ("Name", s["name"]),
        ("DB#", s["id"]),
        ("InChIKey", s["inchikey"]),
        ("SMILES", s["smiles"]),
        ("Formula", s["formula"]),
        ("Precursor_type", s["adduct"]),
        ("PrecursorMZ", repr(s["precursor"])),
        ("Ion_mode", s["ion_mode"]),
        ("Instrument", s["instrument"]),
    ]
    return [f"{k.upper() if upper else k}: {v}" for k, v in pairs if v]


def write_msp_flavours(spectra: list[dict]) -> None:
    nist, massbank, riken, mona, golm, loose = [], [], [], [], [], []
    for n, s in enumerate(spectra):
        peaks = list(zip(s["mz"], s["intensity"], strict=True))
        count = f"Num Peaks: {len(peaks)}"
        # NIST: one peak per line, some with a quoted annotation; two Synon lines
        nist += _msp_head(s)[:1] + ["Synon: $:00in-source", f"Synon: spectrum {n + 1}"]
        nist += _msp_head(s)[1:] + [count]
        nist += [
            f'{m!r} {i!r} "p{k}"' if k % 3 == 0 else f"{m!r} {i!r}"
            for k, (m, i) in enumerate(peaks)
        ] + [""]
        # MassBank export: "m/z int;" pairs, three per line
        massbank += _msp_head(s) + [count]
        massbank += [
            " ".join(f"{m!r} {i!r};" for m, i in peaks[k : k + 3]) for k in range(0, len(peaks), 3)
        ] + [""]
        # RIKEN / MS-DIAL: upper-case keys, NAME not first, tab-separated peaks
        head = _msp_head(s, upper=True)
        riken += head[2:] + head[:2] + [f"NUM PEAKS: {len(peaks)}"]
        riken += [f"{m!r}\t{i!r}" for m, i in peaks] + [""]
        # MoNA export: ion mode and SMILES only inside Comments
        comments = f'"SMILES={s["smiles"]}" "ionization mode={s["ion_mode"]}" "ms level=MS2"'
        mona += [line for line in _msp_head(s) if not line.startswith(("Ion_mode", "SMILES"))] + [
            f"Comments: {comments}",
            count,
        ]
        mona += [f"{m!r} {i!r}" for m, i in peaks] + [""]
        # GOLM: nominal masses, "m/z:int" pairs, five per line
        gm, gi = nominal(s["mz"], s["intensity"])
        golm += _msp_head(s)[:1] + [f"Synon: METB N: {s['name']}", "Synon: RI: 986,12"]
        golm += _msp_head(s)[1:] + [f"Num Peaks: {len(gm)}"]
        golm += [
            " ".join(f"{m}:{i!r}" for m, i in zip(gm[k : k + 5], gi[k : k + 5], strict=True))
            for k in range(0, len(gm), 5)
        ] + [""]
        # missing (even records) or wrong (odd records) Num Peaks; no blank lines between
        wrong = [] if n % 2 == 0 else [f"Num Peaks: {len(peaks) + 7}"]
        loose += _msp_head(s) + wrong + [f"{m!r}\t{i!r}" for m, i in peaks]
    files = {
        "nist.msp": nist,
        "massbank.msp": massbank,
        "riken.msp": riken,
        "mona.msp": mona,
        "golm.msp": golm,
        "loose_num_peaks.msp": loose,
    }
    for name, lines in files.items():
        (HERE / name).write_text("\n".join(lines) + "\n", encoding="utf-8")


def write_json(spectra: list[dict]) -> None:
    gnps, mona = [], []
    for s in spectra:
        polarity = s["ion_mode"].capitalize()
        gnps.append(
            {
                "spectrum_id": s["id"],
                "ms_level": "2",
                "peaks_json": json.dumps(
                    [[m, i] for m, i in zip(s["mz"], s["intensity"], strict=True)]
                ),
                "Compound_Name": s["name"],
                "Ion_Source": "LC-ESI",
                "Instrument": s["instrument"],
                "Adduct": s["adduct"] or "N/A",
                "Precursor_MZ": repr(s["precursor"]),
                "Charge": "1",
                "Smiles": s["smiles"] or "N/A",
                "INCHI": s["inchi"] or "N/A",
                "Ion_Mode": polarity,
                "InChIKey_smiles": s["inchikey"],
                "Formula_smiles": s["formula"],
            }
        )
        compound_meta = [
            {"category": "none", "computed": False, "name": "SMILES", "value": s["smiles"]},
            {"category": "none", "computed": False, "name": "InChIKey", "value": s["inchikey"]},
            {"computed": True, "name": "molecular formula", "value": s["formula"]},
        ]
        meta = [
            {"category": "mass spectrometry", "name": "ms level", "value": "MS2"},
            {"category": "focused ion", "name": "precursor m/z", "value": s["precursor"]},
            {"category": "focused ion", "name": "precursor type", "value": s["adduct"]},
            {"category": "mass spectrometry", "name": "ionization mode", "value": s["ion_mode"]},
            {"category": "none", "name": "instrument", "value": s["instrument"]},
        ]
        mona.append(
            {
                "id": s["id"],
                "compound": [
                    {
                        "inchi": s["inchi"],
                        "names": [{"name": s["name"], "score": 0}],
                        "metaData": [m for m in compound_meta if m["value"]],
                    }
                ],
                "metaData": [m for m in meta if m["value"] != ""],
                "spectrum": " ".join(
                    f"{m!r}:{i!r}" for m, i in zip(s["mz"], s["intensity"], strict=True)
                ),
            }
        )
    for name, records in (("gnps.json", gnps), ("mona.json", mona)):
        (HERE / name).write_text(json.dumps(records, indent=1) + "\n", encoding="utf-8")


def _peaks(mz: list[float], intensity: list[float], compress: bool) -> str:
    pairs = np.empty(2 * len(mz), dtype=">f8")
    pairs[0::2], pairs[1::2] = mz, intensity
    raw = pairs.tobytes()
    data = zlib.compress(raw) if compress else raw
    kind = f'compressionType="zlib" compressedLen="{len(data)}"' if compress else ""
    text = base64.b64encode(data).decode()
    return f'<peaks precision="64" byteOrder="network" contentType="m/z-int" {kind}>{text}</peaks>'


def write_mzxml(spectra: list[dict]) -> None:
    lines = [
        '<?xml version="1.0" encoding="ISO-8859-1"?>',
        '<mzXML xmlns="http://sashimi.sourceforge.net/schema_revision/mzXML_3.2">',
        f' <msRun scanCount="{len(spectra) + 2}">',
    ]
    num = 0
    for polarity in ("-", "+"):
        group = [s for s in spectra if (s["ion_mode"] == "negative") == (polarity == "-")]
        num += 1
        survey = sorted(s["precursor"] for s in group)
        lines.append(
            f'  <scan num="{num}" msLevel="1" peaksCount="{len(survey)}" polarity="{polarity}" '
            f'retentionTime="PT{60 * num}S" centroided="1">'
        )
        lines.append("   " + _peaks(survey, [1000.0] * len(survey), compress=False))
        for s in group:
            num += 1
            lines += [
                f'   <scan num="{num}" msLevel="2" peaksCount="{len(s["mz"])}" '
                f'polarity="{polarity}" retentionTime="PT{60 * num}S" collisionEnergy="35">',
                f'    <precursorMz precursorIntensity="1000" precursorCharge="1">'
                f"{s['precursor']!r}</precursorMz>",
                "    " + _peaks(s["mz"], s["intensity"], compress=num % 2 == 0),
                "   </scan>",
            ]
        lines.append("  </scan>")
    lines += [" </msRun>", "</mzXML>"]
    (HERE / "sample.mzXML").write_text("\n".join(lines) + "\n", encoding="ISO-8859-1")


if __name__ == "__main__":
    spectra = source_spectra()
    write_msp_flavours(spectra)
    write_json(spectra)
    write_mzxml(spectra)

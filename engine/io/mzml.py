"""mzML reader (MS2 scans only) built on :mod:`pyteomics.mzml`.

Every ``<spectrum>`` element counts as a record (record numbers are 1-based
positions in the file); scans with an MS level other than 2 are passed over
without an issue, and without decoding their arrays (a large profile MS1 scan
costs nothing).  Binary arrays are decoded per spectrum, so a corrupt base64 or
zlib array skips that spectrum alone.  A file whose XML breaks part-way keeps
the spectra read before the break, and the break is reported as a skipped record.
"""

from __future__ import annotations

import io
import math
import re

from lxml import etree
from pyteomics import mzml as _mzml
from pyteomics.auxiliary import PyteomicsError

from engine.io._build import LibraryBuilder
from engine.io._xml import array_limit, capped_reader, decoded_peaks, first_line, refuse_doctype

__all__ = ["read_mzml_bytes"]

_ROOT_RE = re.compile(rb"<(?:indexedmzML|mzML)[\s>]")


def read_mzml_bytes(data: bytes, builder: LibraryBuilder) -> None:
    """mzML ``data`` (the uncompressed file) into ``builder``, MS2 spectra only.

    Raises :class:`SpectrumFileError` for a DOCTYPE (see :func:`refuse_doctype`).
    """
    refuse_doctype(data, _ROOT_RE, builder.path, "mzML")
    record = 0
    reader = _mzml.MzML(
        io.BytesIO(data), use_index=False, read_schema=False, decode_binary=False, huge_tree=True
    )
    capped = capped_reader(reader, "defaultArrayLength")
    iterator = iter(reader)
    while True:
        try:
            spectrum = next(iterator)
        except StopIteration:
            break
        except (etree.XMLSyntaxError, PyteomicsError, ValueError, KeyError) as exc:
            builder.skip(
                record + 1, "", f"XML broken here, rest of file not read ({first_line(exc)})"
            )
            break
        record += 1
        if spectrum.get("ms level") != 2:
            continue
        try:
            capped.limit = array_limit(spectrum.get("defaultArrayLength"), 8)  # float64
            _add(spectrum, record, builder)
        except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
            title = str(spectrum.get("spectrum title", "") or spectrum.get("id", ""))
            builder.skip(record, title, f"unreadable spectrum ({first_line(exc)})")
    builder.records = record


def _add(spectrum: dict, record: int, builder: LibraryBuilder) -> None:
    native_id = str(spectrum.get("id", ""))
    title = str(spectrum.get("spectrum title", "")) or native_id
    precursor, charge = math.nan, 0
    try:
        precursors = spectrum["precursorList"]["precursor"]
        ion = precursors[0]["selectedIonList"]["selectedIon"][0]
        precursor = float(ion.get("selected ion m/z", math.nan))
        charge = int(ion.get("charge state", 0) or 0)
    except (KeyError, IndexError, TypeError, ValueError, OverflowError):
        pass
    ion_mode = 1 if "positive scan" in spectrum else -1 if "negative scan" in spectrum else 0
    arrays = spectrum.get("m/z array"), spectrum.get("intensity array")
    missing, corrupt = "no m/z or intensity array", "corrupt binary array"
    peaks = decoded_peaks(arrays, record, title, builder, missing, corrupt)
    if peaks is None:
        return
    metadata = {"id": native_id, "title": title, "ms_level": "2"}
    scans = spectrum.get("scanList", {}).get("scan") or [{}]
    if "scan start time" in scans[0]:
        metadata["scan_start_time"] = str(float(scans[0]["scan start time"]))
    if "filter string" in scans[0]:
        metadata["filter_string"] = str(scans[0]["filter string"])
    builder.add(record, *peaks, precursor, charge, ion_mode, metadata)

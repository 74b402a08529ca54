"""mzXML reader (MS2 scans only) built on :mod:`pyteomics.mzxml`.

pyteomics' own iterator stops for good at the first scan whose attributes do not
convert (``msLevel="x"``) and loses the scans it had queued, so the scans are
walked here with lxml's ``iterparse`` (no DTD, no entities, no network) and each
``<scan>`` element is converted by pyteomics' ``MzXML`` parser: its attribute
schema, base64 and zlib decoding.  Every ``<scan>`` counts as a record, numbered
by its position in the file (nested MS2 scans inside their MS1 scan included);
scans with an MS level other than 2 are passed over without an issue and without
decoding their peaks.  A scan that fails is skipped alone with its reason; XML
that breaks part-way keeps the scans read before the break.  Processed elements
are removed from the tree, so memory stays within one MS1 scan and its children.
"""

from __future__ import annotations

import binascii
import io
import math
import re
import zlib

from lxml import etree
from pyteomics import mzxml as _mzxml

from engine.io._build import LibraryBuilder
from engine.io._xml import array_limit, capped_reader, decoded_peaks, first_line, refuse_doctype

__all__ = ["read_mzxml_bytes"]

_ROOT_RE = re.compile(rb"<mzXML[\s>]")


def read_mzxml_bytes(data: bytes, builder: LibraryBuilder) -> None:
    """Parse mzXML ``data`` into ``builder`` as :func:`engine.io.mzml.read_mzml_bytes` does mzML."""
    refuse_doctype(data, _ROOT_RE, builder.path, "mzXML")
    converter = _converter()
    record = 0
    open_scans: list[int] = []
    events = etree.iterparse(
        io.BytesIO(data),
        events=("start", "end"),
        tag="{*}scan",
        huge_tree=True,
        resolve_entities=False,
        load_dtd=False,
        no_network=True,
        remove_comments=True,
    )
    try:
        for event, element in events:
            if event == "start":
                record += 1
                open_scans.append(record)
                continue
            number = open_scans.pop()
            _read_scan(element, number, converter, builder)
            _forget(element, nested=bool(open_scans))
    except etree.XMLSyntaxError as exc:
        # the scan last started, while still open, else the one that was starting
        where = record if open_scans and open_scans[-1] == record else record + 1
        builder.skip(where, "", f"XML broken here, rest of file not read ({first_line(exc)})")
    builder.records = record


def _converter() -> _mzxml.MzXML:
    """pyteomics' mzXML parser, used only to convert single ``<scan>`` elements."""
    reader = _mzxml.MzXML(
        io.BytesIO(b'<mzXML xmlns="http://sashimi.sourceforge.net/schema_revision/mzXML_3.2"/>'),
        use_index=False,
        read_schema=False,
        decode_binary=False,
    )
    capped = capped_reader(reader, "peaksCount")
    reader._simms_zlib = capped  # noqa: SLF001 - our own attribute on our own instance
    return reader


def _forget(element: etree._Element, *, nested: bool) -> None:
    """Drop a processed scan so the tree never grows with the file."""
    parent = element.getparent()
    if nested and parent is not None:
        parent.remove(element)  # the enclosing scan still needs its own <peaks>
        return
    element.clear(keep_tail=True)
    while element.getprevious() is not None:
        del parent[0]


def _read_scan(
    element: etree._Element, record: int, converter: _mzxml.MzXML, builder: LibraryBuilder
) -> None:
    num = element.get("num", "")
    title = f"scan {num}" if num else ""
    level = element.get("msLevel")
    try:
        if level is None or int(level) != 2:
            return
    except ValueError:
        builder.skip(record, title, f"unreadable msLevel {level[:20]!r}")
        return
    peaks = element.find("{*}peaks")
    if peaks is None or not (peaks.text or "").strip():
        builder.skip(record, title, "no peaks" if peaks is not None else "no <peaks> element")
        return
    try:
        converter._simms_zlib.limit = array_limit(element.get("peaksCount"), 16)  # noqa: SLF001
        info = converter._get_info_smart(element)  # noqa: SLF001 - pyteomics' scan conversion
        info.pop("scan", None)
        _add(info, record, title, builder)
    except (binascii.Error, zlib.error) as exc:
        builder.skip(record, title, f"corrupt peaks ({first_line(exc)})")
    except KeyError as exc:
        builder.skip(record, title, f"unreadable scan (no {exc.args[0]!r} given)")
    except Exception as exc:  # noqa: BLE001 - a record's failure is a report line
        builder.skip(record, title, f"unreadable scan ({first_line(exc)})")


def _add(info: dict, record: int, title: str, builder: LibraryBuilder) -> None:
    precursor, charge = math.nan, 0
    try:
        first = info["precursorMz"][0]
        if isinstance(first, dict):
            precursor = float(first.get("precursorMz", math.nan))
            charge = int(first.get("precursorCharge", 0) or 0)
        else:  # a <precursorMz> without attributes comes as its bare text
            precursor = float(first)
    except (KeyError, IndexError, TypeError, ValueError, OverflowError):
        pass
    polarity = str(info.get("polarity", "")).strip()
    ion_mode = 1 if polarity == "+" else -1 if polarity == "-" else 0
    arrays = info.get("m/z array"), info.get("intensity array")
    peaks = decoded_peaks(arrays, record, title, builder, "no <peaks> element", "corrupt peaks")
    if peaks is None:
        return
    num = str(info.get("num", ""))
    metadata = {"id": num, "title": title, "ms_level": "2", "scan_number": num}
    if "retentionTime" in info:
        metadata["scan_start_time"] = str(float(info["retentionTime"]))
    if "collisionEnergy" in info:
        metadata["collision_energy"] = str(info["collisionEnergy"])
    builder.add(record, *peaks, precursor, charge, ion_mode, metadata)

"""Arrays of an uncompressed ``.npz`` file mapped from disk instead of copied.

A million-spectrum library's cache entry holds about a gigabyte of arrays;
``numpy.load`` copies each member out of the zip (seconds), while mapping the
stored members costs nothing until a page is read, and the pages then come
straight from the operating system's file cache.  Used for read-only arrays
only: the mapping is read-only, and a file is replaced (renamed over), never
rewritten in place, so a mapping stays valid for as long as it is used.

:func:`save_npz_aligned` writes such files with every array's data at a
64-byte boundary of the file (zip extra-field padding, as ``zipalign`` does),
so the maps are aligned for the kernels' vector loads; ``numpy.savez`` leaves
members at any byte, and numba compiles a slow path for an unaligned array.
A member found unaligned (an older file) is copied, never mapped.
"""

from __future__ import annotations

import io
import struct
import zipfile
from collections.abc import Mapping
from typing import BinaryIO

import numpy as np

__all__ = ["ALIGNMENT", "load_npz_mapped", "save_npz_aligned"]

_LOCAL_HEADER = 30  # bytes of a zip local file header before its name and extra field
_ZIP64_EXTRA = 20  # the ZIP64 sizes zipfile adds to a local header opened with force_zip64
_PADDING_ID = 0xD935  # extra-field id of alignment padding (the one zipalign uses)
#: Byte boundary of every array's data in a file written by :func:`save_npz_aligned`.
ALIGNMENT = 64


def save_npz_aligned(fh: BinaryIO, arrays: Mapping[str, np.ndarray]) -> None:
    """Write ``arrays`` as an uncompressed ``.npz`` to ``fh`` (a new file, at offset 0).

    ``numpy.load`` reads the file as any ``.npz``; each array's data starts at a
    multiple of :data:`ALIGNMENT` bytes of the file (``.npy`` headers are
    multiples of 64 bytes, and each member's local zip header is padded to end
    on that boundary).  Object arrays are refused.
    """
    with zipfile.ZipFile(fh, "w", zipfile.ZIP_STORED, allowZip64=True) as archive:
        for name, value in arrays.items():
            array = np.ascontiguousarray(value)
            if array.dtype.hasobject:
                raise ValueError(f"{name}: object arrays are not written")
            header = io.BytesIO()
            np.lib.format.write_array_header_1_0(
                header, np.lib.format.header_data_from_array_1_0(array)
            )
            info = zipfile.ZipInfo(f"{name}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_STORED
            used = _LOCAL_HEADER + len(info.filename.encode()) + 4 + _ZIP64_EXTRA
            pad = -(fh.tell() + used) % ALIGNMENT
            info.extra = struct.pack("<HH", _PADDING_ID, pad) + bytes(pad)
            with archive.open(info, "w", force_zip64=True) as member:
                member.write(header.getvalue())
                if array.size:
                    member.write(memoryview(array.reshape(-1)).cast("B"))


def load_npz_mapped(fh: BinaryIO) -> dict[str, np.ndarray]:
    """Every member of the ``.npz`` file open as ``fh``, by name (without ``.npy``).

    Stored (uncompressed) members of a numeric type are read-only memory maps;
    compressed ones are read as ``numpy.load`` would.  Object arrays are refused.

    Raises
    ------
    ValueError
        A member that is not a valid ``.npy`` array, or one that runs past the
        end of the file.
    """
    arrays: dict[str, np.ndarray] = {}
    try:
        archive = zipfile.ZipFile(fh)
    except zipfile.BadZipFile as exc:
        raise ValueError(f"not an npz archive ({exc})") from exc
    with archive:
        for info in archive.infolist():
            name = info.filename.removesuffix(".npy")
            if info.compress_type != zipfile.ZIP_STORED:
                with archive.open(info) as member:
                    arrays[name] = np.lib.format.read_array(member, allow_pickle=False)
                continue
            arrays[name] = _mapped_member(fh, info)
    return arrays


def _mapped_member(fh: BinaryIO, info: zipfile.ZipInfo) -> np.ndarray:
    fh.seek(info.header_offset)
    local = fh.read(_LOCAL_HEADER)
    if len(local) != _LOCAL_HEADER or local[:4] != b"PK\x03\x04":
        raise ValueError(f"member {info.filename!r}: broken zip header")
    skip = int.from_bytes(local[26:28], "little") + int.from_bytes(local[28:30], "little")
    fh.seek(info.header_offset + _LOCAL_HEADER + skip)
    version = np.lib.format.read_magic(fh)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(fh)
    elif version == (2, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(fh)
    else:
        raise ValueError(f"member {info.filename!r}: .npy version {version} not supported")
    if dtype.hasobject:
        raise ValueError(f"member {info.filename!r}: object arrays are not read")
    start = fh.tell()
    size = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    end_of_member = info.header_offset + _LOCAL_HEADER + skip + info.file_size
    if start + size > end_of_member:
        raise ValueError(f"member {info.filename!r}: array runs past its end")
    if size == 0:
        return np.empty(shape, dtype=dtype)
    order = "F" if fortran else "C"
    mapped = np.memmap(fh, dtype=dtype, mode="r", offset=start, shape=shape, order=order)
    if not mapped.flags.aligned:  # an older file: a copy, so kernels get aligned data
        copy = np.array(mapped, order=order)
        copy.flags.writeable = False
        return copy
    return mapped

"""The text of RINEX files, shared by the navigation and observation readers (:mod:`gnss.rinex`,
:mod:`gnss.rinex_obs`) and by the SP3 and clock readers (:mod:`gnss.precise`): decompression,
header records, fixed-column numbers and epochs.

Own fixed-column parser (no georinex).  Fortran ``D`` exponents are accepted.  Compressed files
(gzip, Unix compress ``.Z``, zip, bzip2, Hatanaka CRINEX and their combinations) are read
transparently, see :func:`read_text`.

References
----------
.. [1] W. Gurtner, "RINEX: The Receiver Independent Exchange Format Version 2.10", 2002.
.. [2] IGS/RTCM RINEX WG, "RINEX The Receiver Independent Exchange Format Version 3.04", 2018.
"""

from __future__ import annotations

import warnings
import zipfile
import zlib
from pathlib import Path

import numpy as np


# Leading bytes of the compressed containers (RFC 1952; ncompress; PKWARE APPNOTE 4.3.7 / 4.3.16
# (an empty archive starts with its end record); bzip2), and the label of a Hatanaka file's
# first line (Y. Hatanaka, "A Compression Format and Tools for GNSS Observation Data", Bulletin
# of the Geographical Survey Institute 55, 2008).
_MAGIC = ((b"\x1f\x8b", "gzip"), (b"\x1f\x9d", "Unix compress (.Z)"), (b"PK\x03\x04", "zip"),
          (b"PK\x05\x06", "zip"), (b"BZh", "bzip2"))
_HATANAKA_LABEL = b"COMPACT RINEX FORMAT"

# What the decompressors raise on a damaged stream: gzip.BadGzipFile (an OSError), EOFError
# (truncated gzip/bzip2), zlib.error, zipfile.BadZipFile, ValueError (ncompress, bz2, hatanaka's
# own checks) and hatanaka.HatanakaException (a RuntimeError, damaged CRINEX).
_DECOMPRESSION_ERRORS = (OSError, EOFError, zlib.error, zipfile.BadZipFile, ValueError, RuntimeError)


def compression_of(data: bytes) -> str | None:
    """Name of the compression of a file's leading bytes, or None for plain text.

    Parameters
    ----------
    data : bytes
        The file's contents (the first 80 bytes suffice).

    Returns
    -------
    str or None
        ``"gzip"``, ``"Unix compress (.Z)"``, ``"zip"``, ``"bzip2"``, ``"Hatanaka (CRINEX)"``, or
        None when the bytes are none of these (a plain RINEX file or anything else).

    Notes
    -----
    Decided by content, not by the file name, so a misnamed file is still read.  A Hatanaka file
    is recognised by "COMPACT RINEX FORMAT" in its first line (the CRINEX VERS / TYPE record);
    inside a container it is recognised after the container is opened.
    """
    for magic, name in _MAGIC:
        if data.startswith(magic):
            return name
    if _HATANAKA_LABEL in data[:80].split(b"\n", 1)[0]:
        return "Hatanaka (CRINEX)"
    return None


def read_text(path) -> str:
    """Text of a RINEX, SP3 or clock file, decompressed when it is compressed.

    Parameters
    ----------
    path : str or path-like
        Plain file, or one compressed with gzip (``.gz``), Unix compress (``.Z``), zip (one
        member), bzip2, Hatanaka (``.crx``, ``.yyd``) or Hatanaka inside one of the others
        (``.crx.gz``, ``.yyd.Z``).

    Returns
    -------
    str
        The file's text (bytes decoded as UTF-8, undecodable bytes replaced).

    Raises
    ------
    ValueError
        When a compressed file cannot be decompressed (truncated, damaged, an empty zip or one
        with several members, Hatanaka epochs that cannot be restored); the message names the
        file, the compression found and the decompressor's complaint.

    Notes
    -----
    The compression is detected from the content (:func:`compression_of`), not the suffix.
    Decompression is done by the ``hatanaka`` package (``hatanaka.decompress``: gzip, bzip2 and
    zip through the standard library, .Z through ``ncompress``, CRINEX through RNXCMP's
    crx2rnx), imported only when a file is compressed.  A warning from crx2rnx means epochs were
    skipped, so it is raised as an error rather than returning a silently shortened file.
    """
    path = Path(path)
    data = path.read_bytes()
    kind = compression_of(data)
    if kind is not None:
        import hatanaka

        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error", UserWarning)   # crx2rnx warns when it skips epochs
                data = hatanaka.decompress(data)
        except (*_DECOMPRESSION_ERRORS, UserWarning) as exc:
            raise ValueError(f"{path}: cannot decompress this {kind} file: {type(exc).__name__}: {exc}") from exc
    return data.decode("utf-8", errors="replace")


def _float(text: str) -> float:
    """One RINEX number; blank means 0 (optional trailing fields), D exponents allowed."""
    text = text.strip()
    if not text:
        return 0.0
    return float(text.replace("D", "E").replace("d", "e"))


def fixed_fields(line: str, start: int, n: int = 4, width: int = 19) -> list[float]:
    return [_float(line[start + i * width: start + (i + 1) * width]) for i in range(n)]


def read_header(lines: list[str], path) -> tuple[dict[str, list[str]], int]:
    """Header records keyed by label (cols 61-80), and the index of the first data line."""
    header: dict[str, list[str]] = {}
    for i, line in enumerate(lines):
        label = line[60:80].strip()
        header.setdefault(label, []).append(line[:60])
        if label == "END OF HEADER":
            return header, i + 1
    raise ValueError(f"{path}: no 'END OF HEADER' record; not a RINEX file (plain, or compressed with "
                     "gzip, Unix compress, zip, bzip2 or Hatanaka)")


def rinex_version(header: dict[str, list[str]], path) -> float:
    rec = header.get("RINEX VERSION / TYPE")
    if not rec:
        raise ValueError(f"{path}: no 'RINEX VERSION / TYPE' record")
    return float(rec[0][:9])


def epoch_ns(year, month, day, hour, minute, sec_text: str) -> np.datetime64:
    """datetime64[ns] from calendar fields, the seconds parsed exactly from their text."""
    sec_text = sec_text.strip()
    whole, _, frac = sec_text.partition(".")
    ns = int(whole or 0) * 1_000_000_000 + int((frac + "000000000")[:9])
    base = np.datetime64(f"{year:04d}-{month:02d}-{day:02d}T{hour:02d}:{minute:02d}", "ns")
    return base + np.timedelta64(ns, "ns")


def year4(y: int) -> int:
    # RINEX 2 two-digit years: 80-99 -> 19xx, 00-79 -> 20xx
    return y + (1900 if y >= 80 else 2000) if y < 100 else y

"""Cut the NYA100NOR day (2024-05-03) of georust/rinex's test resources to the vendored files.

    python tests/data/gnss/cut_nya1.py OBS.crx.gz GN.rnx.gz EN.rnx.gz CN.rnx.gz

with, from georust/rinex (MPL-2.0; IGS/EUREF public data of the Norwegian Mapping Authority),
at commit 95c3d35e (the files last changed at 70242aa0):
test_resources/CRNX/V3/NYA100NOR_S_20241240000_01D_30S_MO.crx.gz and
test_resources/NAV/V3/NYA100NOR_S_20241240000_01D_{GN,EN,CN}.rnx.gz (see README.md).
Lines are copied as text; only records are dropped (and the epoch lines' satellite counts
rewritten), so every value is the original's.

- observations: 00:00-02:00 GPST every 5 min (24 epochs), GPS, Galileo and BeiDou (GLONASS,
  whose navigation file is not in the source, and its header records removed), Hatanaka-
  decompressed with ``hatanaka``. The Trimble NetR9 writes Galileo E1 as C1X (E1 B+C) and
  BeiDou B1I as C2X: the file that exercises the solver's per-satellite code choice.
- navigation: one RINEX 3.05 mixed file from the three single-system files (the GPS header's
  Klobuchar, GPUT and leap-second records, the Galileo header's GAL and GAGP records), the G, E
  and C records with an epoch from 2024-05-02 22:00 to 05-03 03:59. The Galileo file is RINEX
  3.03; its records have the same layout in 3.05 (RINEX 3.05 Table A8).
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEMS = ("G", "E", "C")
OBS_OUT = "NYA100NOR_S_20241240000_02H_05M_MO.rnx.gz"
NAV_OUT = "NYA100NOR_S_20241240000_04H_MN.rnx.gz"


def _comment(text: str) -> str:
    return f"{text:<60}{'COMMENT':<20}"


def cut_obs(crx_gz: Path) -> str:
    import hatanaka
    text = hatanaka.decompress(gzip.decompress(crx_gz.read_bytes()))
    lines = (text.decode() if isinstance(text, bytes) else text).splitlines()
    end = next(i for i, x in enumerate(lines) if x[60:73] == "END OF HEADER")
    header, body = lines[:end + 1], lines[end + 1:]
    out = []
    skip_types = False
    for line in header:
        label = line[60:].strip()
        if label == "SYS / # / OBS TYPES":
            if line[0] != " ":
                skip_types = line[0] not in SYSTEMS
            if skip_types:
                continue
        elif label == "SYS / PHASE SHIFT" and line[0] not in SYSTEMS:
            continue
        elif label.startswith("GLONASS"):
            continue
        out.append(line)
        if label == "PGM / RUN BY / DATE":
            out.append(_comment("hifi: cut to 00:00-02:00 every 5 min, G E C only"))
    i = 0
    while i < len(body):
        line = body[i]
        n = int(line[32:35])
        minute, second = int(line[16:18]), float(line[19:29])
        hour = int(line[13:15])
        sats = [x for x in body[i + 1:i + 1 + n] if x[0] in SYSTEMS]
        if hour < 2 and minute % 5 == 0 and second == 0.0:
            out.append(f"{line[:32]}{len(sats):3d}{line[35:]}")
            out.extend(sats)
        i += 1 + n
    return "\n".join(out) + "\n"


def _split(nav_gz: Path):
    lines = gzip.decompress(nav_gz.read_bytes()).decode().splitlines()
    end = next(i for i, x in enumerate(lines) if x[60:73] == "END OF HEADER")
    return lines[:end + 1], lines[end + 1:]


def _records(body: list[str]) -> list[list[str]]:
    recs, i = [], 0
    while i < len(body):
        j = i + 1
        while j < len(body) and body[j][:1] == " ":
            j += 1
        recs.append(body[i:j])
        i = j
    return recs


def cut_nav(gn: Path, en: Path, cn: Path) -> str:
    out = [f"{'     3.05':<20}{'N: GNSS NAV DATA':<20}{'M: MIXED':<20}RINEX VERSION / TYPE",
           _comment("hifi: G E C records with toc 2024-05-02 22h - 05-03 03h,"),
           _comment("hifi: merged from the GN, EN and CN files of NYA100NOR")]
    body = []
    for path in (gn, en, cn):
        header, rest = _split(path)
        if path is gn:
            out.insert(1, header[1])                               # PGM / RUN BY / DATE
        for line in header:
            if line[60:].strip() in ("IONOSPHERIC CORR", "TIME SYSTEM CORR") or \
                    (path is gn and line[60:].strip() == "LEAP SECONDS"):
                out.append(line)
        for rec in _records(rest):
            stamp = rec[0][4:17]                                   # "2024 05 02 22"
            if rec[0][0] in SYSTEMS and "2024 05 02 22" <= stamp <= "2024 05 03 03":
                body.extend(rec)
    out.append(f"{'':<60}END OF HEADER")
    return "\n".join(out + body) + "\n"


def _write_gz(path: Path, text: str) -> None:
    # mtime 0: the same bytes every time the script runs
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as gz:
        gz.write(text.encode())


def main(argv) -> int:
    obs, gn, en, cn = (Path(a) for a in argv)
    _write_gz(HERE / OBS_OUT, cut_obs(obs))
    _write_gz(HERE / NAV_OUT, cut_nav(gn, en, cn))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

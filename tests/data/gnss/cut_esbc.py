"""Cut the ESBC00DNK day (2020-06-25) of georust/rinex's test resources to the vendored files.

    python tests/data/gnss/cut_esbc.py OBS.crx.gz NAV.rnx.gz ORB.SP3.gz

with, from georust/rinex (MPL-2.0; IGS/EUREF and IGS MGEX public data):
test_resources/CRNX/V3/ESBC00DNK_R_20201770000_01D_30S_MO.crx.gz and
test_resources/NAV/V3/ESBC00DNK_R_20201770000_01D_MN.rnx.gz at commit 95c3d35e, and
test_resources/SP3/GRG0MGXFIN_20201770000_01D_15M_ORB.SP3.gz at commit fa9c70a6 (see README.md).
Lines are copied as text; only records are dropped (and the epoch lines' satellite counts
rewritten), so every value is the original's.

- observations: 00:00-02:00 GPST every 5 min (24 epochs), GPS, GLONASS, Galileo and BeiDou
  (QZSS, SBAS and their header records removed), Hatanaka-decompressed with ``hatanaka``;
- navigation: the G, R, E and C records with an epoch from 2020-06-24 22:00 to 06-25 04:00;
- orbits: 00:00-02:00 (9 epochs of 15 min), every satellite (GPS, GLONASS, Galileo), header kept.
"""

from __future__ import annotations

import gzip
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
SYSTEMS = ("G", "R", "E", "C")


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
        out.append(line)
        if label == "PGM / RUN BY / DATE" and not any("hifi: cut" in x for x in out):
            out.append(_comment("hifi: cut to 00:00-02:00 every 5 min, G R E C only"))
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


def cut_nav(nav_gz: Path) -> str:
    lines = gzip.decompress(nav_gz.read_bytes()).decode().splitlines()
    end = next(i for i, x in enumerate(lines) if x[60:73] == "END OF HEADER")
    out = list(lines[:end + 1])
    out.insert(2, _comment("hifi: G R E C records with toc 2020-06-24 22h - 06-25 04h"))
    i = end + 1
    while i < len(lines):
        j = i + 1
        while j < len(lines) and lines[j][:1] == " ":
            j += 1
        rec = lines[i:j]
        stamp = rec[0][4:17]                       # "2020 06 24 22"
        if rec[0][0] in SYSTEMS and "2020 06 24 22" <= stamp <= "2020 06 25 03":
            out.extend(rec)
        i = j
    return "\n".join(out) + "\n"


def cut_sp3(sp3_gz: Path) -> str:
    lines = gzip.decompress(sp3_gz.read_bytes()).decode().splitlines()
    out, keep = [], True                           # header lines are kept
    for line in lines:
        if line.startswith("*  "):
            hour, minute = int(line[14:16]), int(line[17:19])
            keep = line[3:13] == "2020  6 25" and (hour < 2 or (hour == 2 and minute == 0))
        elif line.startswith("EOF"):
            keep = True
        if keep:
            out.append(line)
    return "\n".join(out) + "\n"


def _write_gz(path: Path, text: str) -> None:
    # mtime 0: the same bytes every time the script runs
    with open(path, "wb") as fh, gzip.GzipFile(fileobj=fh, mode="wb", mtime=0) as gz:
        gz.write(text.encode())


def main(argv) -> int:
    obs, nav, sp3 = (Path(a) for a in argv)
    _write_gz(HERE / "ESBC00DNK_R_20201770000_02H_05M_MO.rnx.gz", cut_obs(obs))
    _write_gz(HERE / "ESBC00DNK_R_20201770000_04H_MN.rnx.gz", cut_nav(nav))
    _write_gz(HERE / "GRG0MGXFIN_20201770000_02H_15M_ORB.SP3.gz", cut_sp3(sp3))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Regenerate the RINEX 3.04 fixtures from RTKLIB's RINEX 2.10 files of station 0759.

Run from the repository root:  python tests/data/gnss/make_v3_fixtures.py
The numeric fields are copied as text (same digits) so the v2 and v3 readers must agree exactly.
Source data: tomojitakasu/RTKLIB test/data/rinex/07590920.05n/.05o @ 71db0ffa (BSD-2), vendored
beside this script (see README.md and RTKLIB-LICENSE.txt here).
"""

from pathlib import Path

HERE = Path(__file__).resolve().parent
PRNS = (3, 7, 8, 19)          # satellites kept in the nav fixture
N_EPOCHS = 4                  # epochs kept in the obs fixture


def label(text, lab):
    return f"{text:<60}{lab:<20}"


def nav():
    lines = (HERE / "07590920.05n").read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if "END OF HEADER" in s) + 1
    alpha = next(s for s in lines if "ION ALPHA" in s)[2:50]
    beta = next(s for s in lines if "ION BETA" in s)[2:50]
    out = [label("     3.04           N: GNSS NAV DATA    G: GPS", "RINEX VERSION / TYPE"),
           label("make_v3_fixtures    hifi                20050402 000000 UTC", "PGM / RUN BY / DATE"),
           label("Derived from RTKLIB test/data/rinex/07590920.05n (BSD-2)", "COMMENT"),
           label("GPSA " + "".join(f"{float(alpha[k*12:(k+1)*12].replace('D', 'E')):12.4E}".replace("E", "D") for k in range(4)), "IONOSPHERIC CORR"),
           label("GPSB " + "".join(f"{float(beta[k*12:(k+1)*12].replace('D', 'E')):12.4E}".replace("E", "D") for k in range(4)), "IONOSPHERIC CORR"),
           label("    13", "LEAP SECONDS"),
           label("", "END OF HEADER")]
    i = start
    while i + 7 < len(lines):
        rec = lines[i:i + 8]
        prn = int(rec[0][0:2])
        if prn in PRNS:
            y, mo, d, h, mi = (int(rec[0][k:k + 3]) for k in (2, 5, 8, 11, 14))
            sec = int(float(rec[0][17:22]))
            out.append(f"G{prn:02d} {2000 + y:04d} {mo:02d} {d:02d} {h:02d} {mi:02d} {sec:02d}" + rec[0][22:79])
            out.extend("    " + r[3:79].rstrip() for r in rec[1:])
        i += 8
    (HERE / "0759_v304_nav.rnx").write_text("\n".join(out) + "\n")


def obs():
    lines = (HERE / "07590920.05o").read_text().splitlines()
    start = next(i for i, s in enumerate(lines) if "END OF HEADER" in s) + 1
    out = [label("     3.04           OBSERVATION DATA    G: GPS", "RINEX VERSION / TYPE"),
           label("make_v3_fixtures    hifi                20050402 000000 UTC", "PGM / RUN BY / DATE"),
           label("Derived from RTKLIB test/data/rinex/07590920.05o (BSD-2)", "COMMENT"),
           label("0759", "MARKER NAME"),
           label("GSI, JAPAN          GEOGRAPHICAL SURVEY INSTITUTE, JAPAN", "OBSERVER / AGENCY"),
           label("00000               TRIMBLE 5700        1.24", "REC # / TYPE / VERS"),
           label("                    TRM29659.00", "ANT # / TYPE"),
           label(" -3976219.5082  3382372.5671  3652512.9849", "APPROX POSITION XYZ"),
           label("        0.0000        0.0000        0.0000", "ANTENNA: DELTA H/E/N"),
           label("G    4 L1C C1C L2W C2W", "SYS / # / OBS TYPES"),
           label("    30.000", "INTERVAL"),
           label("  2005     4     2     0     0    0.0000000     GPS", "TIME OF FIRST OBS"),
           label("", "END OF HEADER")]
    i, n = start, 0
    while n < N_EPOCHS:
        head = lines[i]
        nsat = int(head[29:32])
        sats = [head[32 + 3 * k:35 + 3 * k] for k in range(nsat)]
        y, mo, d, h, mi = (int(head[k:k + 3]) for k in (0, 3, 6, 9, 12))
        out.append(f"> {2000 + y:04d} {mo:02d} {d:02d} {h:02d} {mi:02d}{float(head[15:26]):11.7f}  0{nsat:3d}")
        for k, s in enumerate(sats):
            data = lines[i + 1 + k].ljust(64)
            out.append(f"G{int(s[1:]):02d}" + data[:64].rstrip())
        i += 1 + nsat
        n += 1
    (HERE / "0759_v304_obs.rnx").write_text("\n".join(out) + "\n")


if __name__ == "__main__":
    nav()
    obs()

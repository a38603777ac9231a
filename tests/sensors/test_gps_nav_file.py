"""GNSS inputs that cannot serve the run are refused at load.

A nav file cut short, one without ephemerides, and one whose ephemerides do not cover
``start_utc`` .. ``start_utc + duration_s`` all ran silently with no fix. Each is now a
ScenarioError (exit 2) naming the scenario file, the key ``sensors[0].params.nav_file`` and the
nav file's line or the span it covers. The files are made in tmp_path from the vendored
GEONET nav file (tests/data/gnss/07590920.05n, 2005-04-02).
"""

from __future__ import annotations

import numpy as np
import pytest

import gnss
import hifi
from hifi.cli import main

SCENARIO = """\
version = 1

[simulation]
duration_s = 2.0
start_utc = "{start}"
origin = {{ lat_deg = 35.1608750388, lon_deg = 139.6138372528, height_m = 70.153 }}

[[objects]]
name = "ground"
mesh = "plane"
size_m = [100, 100]

[[sensors]]
name = "gps"
model = "gps_l1"
position_m = [0, 0, 2]
[sensors.params]
nav_file = "{nav}"
"""

#: Inside the vendored file's day (the urban-canyon example's start).
START = "2005-04-02T00:10:00Z"


def _write(tmp_path, nav_text, start=START, name="brdc.05n"):
    (tmp_path / name).write_text(nav_text)
    path = tmp_path / "scenario.toml"
    path.write_text(SCENARIO.format(start=start, nav=name))
    return path


def _refused(path, capsys, fragments):
    assert main(["info", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"hifi: error: {path}:18: sensors[0].params.nav_file = "), err
    for frag in fragments:
        assert frag in err, f"{frag!r} not in {err!r}"
    assert len(err.strip().splitlines()) == 1
    with pytest.raises(hifi.ScenarioError):
        hifi.load(path)
    return err


@pytest.fixture
def nav_lines(test_data):
    return test_data("gnss/07590920.05n").read_text().splitlines(keepends=True)


def test_the_vendored_file_serves_the_run(tmp_path, nav_lines):
    sim = hifi.load(_write(tmp_path, "".join(nav_lines)))
    assert sim.run(out=None, progress=False)["gps"].sizes["frame"] == 2


@pytest.mark.parametrize("cut", ["line", "field"])
def test_truncated_record_names_file_and_line(tmp_path, nav_lines, capsys, cut):
    # The file cut inside the last record: after its 3rd broadcast-orbit line, or in the middle
    # of that line's 2nd field (which would otherwise parse as a wrong number).
    start = len(nav_lines) - 8                       # epoch line of the last record (0-based)
    if cut == "line":
        text, line = "".join(nav_lines[:start + 4]), start + 1       # record starts on 1-based line start+1
    else:
        text, line = "".join(nav_lines[:start + 3]) + nav_lines[start + 3][:30], start + 4
    path = tmp_path / "cut.05n"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"cut\.05n:{line}: truncated navigation record"):
        gnss.read_nav(path)
    _refused(_write(tmp_path, text), capsys, [f"brdc.05n:{line}: truncated navigation record"])


def test_no_ephemerides(tmp_path, nav_lines, capsys):
    header = nav_lines[:next(i for i, ln in enumerate(nav_lines) if "END OF HEADER" in ln) + 1]
    assert gnss.read_nav(_write(tmp_path, "".join(header)).parent / "brdc.05n").sizes["record"] == 0
    _refused(_write(tmp_path, "".join(header)), capsys, ["holds no GPS ephemeris records"])


def test_ephemerides_that_do_not_cover_the_run(tmp_path, nav_lines, capsys):
    # The vendored file covers GPST 2005-04-01T22:00 .. 2005-04-03T02:00 with 4 satellites
    # (records from 00:00 on the 2nd to 00:00 on the 3rd, each valid +-2 h around its toe);
    # the example's start a day earlier is outside (GPST = UTC + 13 s in 2005).
    err = _refused(_write(tmp_path, "".join(nav_lines), start="2005-04-01T00:10:00Z"), capsys,
                   ["ephemerides cover GPST 2005-04-01T22:00:00 .. 2005-04-03T02:00:00",
                    "not the run's GPST 2005-04-01T00:10:13 .. 2005-04-01T00:10:15", "simulation.start_utc"])
    assert "at least 4 healthy satellites within 2 h of their toe" in err


def test_coverage_definition(test_data):
    # Analytic: one record per satellite at toe = 0 h, 1 h, 2 h, 3 h (toe +- 2 h each). Four
    # satellites are usable together from 3 h - 2 h = 1 h to 0 h + 2 h = 2 h; with one
    # satellite required, from -2 h to 5 h.
    from gnss.orbit import ephemeris_coverage
    nav = gnss.read_nav(test_data("gnss/07590920.05n")).isel(record=[0, 1, 2, 3])
    nav = nav.assign(prn=("record", [1, 2, 3, 4]), sat=("record", [1, 2, 3, 4]), health=("record", [0, 0, 0, 0]),
                     toe_week=("record", [1316] * 4), toe_sow=("record", 518400.0 + 3600.0 * np.arange(4)))
    day = np.datetime64("2005-04-02T00:00:00", "ns")        # GPS week 1316, sow 518400
    h = np.timedelta64(3600, "s")
    assert ephemeris_coverage(nav) == [(day + h, day + 2 * h)]
    assert ephemeris_coverage(nav, min_satellites=1) == [(day - 2 * h, day + 5 * h)]
    assert ephemeris_coverage(nav.assign(health=("record", [0, 0, 0, 1]))) == []   # unhealthy: unused

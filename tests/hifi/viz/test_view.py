"""``hifi view``: the self-contained replay page of a run (hifi/viz/view.py).

Structure of the page (plotly's bundle inline, no remote script, one slider step per frame
instant, the store), the subsampling caps and their note, bad input (exit 2, nothing written),
and, in a real browser (headless Chromium, skipped with the reason where none is installed),
that the page draws and that its player shows the step and colouring asked for.
"""

from __future__ import annotations

import base64
import json
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("plotly", reason="plotly (test extra) is needed for hifi view")

import hifi  # noqa: E402
from hifi.viz import view  # noqa: E402
from hifi.cli import main  # noqa: E402

from _stores import zarr_copy
from conftest import REPO_ROOT

EXAMPLES = REPO_ROOT / "examples"


def small_run_scenario() -> dict:
    """0.3 s of a VLP-16 (10 Hz, every 4th firing cycle), a depth camera (10 Hz), a colour camera
    and a GPS receiver (5 Hz) over a road with a house and a car driving by."""
    return {
        "simulation": {"duration_s": 0.3, "seed": 5, "start_utc": "2005-04-02T00:10:00Z",
                       "origin": {"lat_deg": 35.1608750388, "lon_deg": 139.6138372528, "height_m": 70.153}},
        "output": {"motion_rate_hz": 20.0},
        "materials": {"road": {"reflectivity": 0.2, "class": "road", "color_rgb": [0.3, 0.3, 0.3]},
                      "paint": {"reflectivity": 0.5, "class": "car", "color_rgb": [0.7, 0.1, 0.1]},
                      "wall": {"reflectivity": 0.4, "class": "building", "color_rgb": [0.6, 0.6, 0.5]}},
        "objects": [{"name": "ground", "mesh": "plane", "size_m": [80, 80], "material": "road"},
                    {"name": "house", "mesh": "box", "size_m": [6, 10, 8], "material": "wall",
                     "position_m": [12, 0, 4]},
                    {"name": "car", "mesh": "car", "material": "paint",
                     "track": [{"t_s": 0.0, "position_m": [-6, -8, 0]}, {"t_s": 0.3, "position_m": [-6, -2, 0]}]}],
        "sensors": [{"name": "lidar", "model": "vlp16", "rate_hz": 10.0, "position_m": [0, 0, 1.8],
                     "params": {"azimuth_stride": 4}},
                    {"name": "depth", "model": "depthmap", "rate_hz": 10.0, "position_m": [0, 0, 1.5],
                     "params": {"resolution_x": 64, "resolution_y": 48}},
                    {"name": "cam", "model": "ccd_camera", "rate_hz": 5.0, "position_m": [0, 0, 1.5],
                     "params": {"resolution_x": 64, "resolution_y": 48}},
                    {"name": "gps", "model": "gps_l1", "rate_hz": 5.0, "position_m": [0, 0, 2.0],
                     "params": {"nav_file": str(EXAMPLES / "data" / "07590920.05n")}}],
    }


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("view") / "run"
    hifi.Simulation.from_dict(small_run_scenario()).run(out=out, progress=False)
    return out


@pytest.fixture(scope="module")
def page(run_dir, tmp_path_factory):
    out = tmp_path_factory.mktemp("page") / "replay.html"
    assert main(["view", str(run_dir), "--out", str(out)]) == 0
    return out


def _store(html: str) -> dict:
    m = re.search(r'<script type="application/json" id="hifi-replay-data">(.*?)</script>', html, re.S)
    assert m, "the page has no data store"
    return json.loads(m.group(1).replace("<\\/", "</"))


# --------------------------------------------------------------------------------------------
# the timeline
# --------------------------------------------------------------------------------------------

def test_replay_times_union_and_thinning():
    # Analytic: 10 Hz and 4 Hz over 1 s share 0 and 0.5 s -> 10 + 4 - 2 = 12 distinct instants.
    a, b = np.arange(10) * 0.1, np.arange(4) * 0.25
    times, n = view.replay_times([a, b], max_frames=100)
    assert n == 12 and times.size == 12
    assert np.all(np.diff(times) > 0)
    thin, n = view.replay_times([a, b], max_frames=5)
    assert n == 12 and thin.size == 5
    assert thin[0] == times[0] and thin[-1] == times[-1]           # first and last kept
    assert np.isin(thin, times).all()


def test_held_frames_latest_at_or_before():
    ft = [0.0, 0.2, 0.4]
    assert view.held_frames(ft, [-0.1, 0.0, 0.1, 0.2, 0.39, 0.4, 9.0]).tolist() == [-1, 0, 0, 1, 1, 2, 2]


# --------------------------------------------------------------------------------------------
# the page
# --------------------------------------------------------------------------------------------

def test_page_is_self_contained_and_steps_are_the_runs_frames(run_dir, page):
    html = page.read_text(encoding="utf-8")
    assert "plotly.js v" in html and "Plotly.newPlot" in html          # the bundle inline
    srcs = re.findall(r"<(?:script|link|img|iframe)\b[^>]*\b(?:src|href)\s*=\s*[\"']?([^\"' >]+)", html, re.I)
    assert not [s for s in srcs if not s.startswith("data:")], srcs    # nothing fetched
    store = _store(html)
    import xarray as xr
    with xr.open_dataset(run_dir / "lidar.nc") as lidar:
        n_frames = lidar.sizes["frame"]                               # 3: 0, 0.1, 0.2 s
    assert len(store["steps"]) == n_frames == 3
    assert [s["t"] for s in store["steps"]] == pytest.approx([0.0, 0.1, 0.2], abs=1e-9)
    # camera and GPS (5 Hz) hold their frame 0 at 0.1 s and show frame 1 at 0.2 s
    cam = [u for u in store["steps"][1]["traces"].values() if u.get("image", "").startswith("cam/")]
    assert cam == [{"image": "cam/0"}]
    assert {"image": "cam/1"} in store["steps"][2]["traces"].values()
    slider_steps = re.search(r'"sliders":\[\{.*?"steps":\[(.*?)\]', html, re.S).group(1)
    assert slider_steps.count('"method":"skip"') == n_frames


def test_store_points_are_the_reported_returns(run_dir):
    import xarray as xr
    replay = view.build_replay(run_dir)
    assert replay.points_fraction == 1.0 and not any("subsampled" in n for n in replay.notes)
    with xr.open_dataset(run_dir / "lidar.nc") as ds:
        f = ds.isel(frame=2)
        det = f["detected"].values.astype(bool)
        expect = np.stack([f[v].values[det] for v in ("x_noisy", "y_noisy", "z_noisy")], axis=1)
        oid = f["object_id"].values[det]
    p = replay.store["points"]["lidar/2"]
    got = np.stack([np.frombuffer(base64.b64decode(p[c]), "<f4") for c in "xyz"], axis=1)
    assert got.shape == expect.shape
    # float32 in the page: within 4 um at 40 m (relative 6e-8 of the coordinates)
    np.testing.assert_allclose(np.sort(got, axis=0), np.sort(expect, axis=0), atol=1e-5)
    codes = np.frombuffer(base64.b64decode(p["object"]), np.uint8)
    assert sorted(codes.tolist()) == sorted(oid.tolist())             # object codes are the object ids
    heights = np.frombuffer(base64.b64decode(p["height"]), np.uint8)
    assert heights.min() >= 0 and heights.max() <= 255 and heights.size == codes.size


def test_radar_detections_are_drawn_as_its_points(tmp_path):
    """A radar's detections (x, y, z in the scene frame over ``detection``, NaN past the
    frame's last) are a range sensor's points on the page, its RCS the "intensity" colouring."""
    import xarray as xr
    d = {"simulation": {"duration_s": 0.1, "seed": 2},
         "materials": {"road": {"reflectivity": 0.2, "class": "road"}, "paint": {"reflectivity": 0.5, "class": "car"}},
         "objects": [{"name": "ground", "mesh": "plane", "size_m": [200, 40], "material": "road"},
                     {"name": "lead", "mesh": "car", "material": "paint", "position_m": [30, 0, 0]}],
         "sensors": [{"name": "radar", "model": "radar_ars408", "position_m": [0, 0, 0.5],
                      "params": {"preset": "ars408_far"}}]}
    out = tmp_path / "run"
    hifi.Simulation.from_dict(d).run(out=out, progress=False)
    replay = view.build_replay(out)
    with xr.open_dataset(out / "radar.nc") as ds:
        f = ds.isel(frame=0)
        ok = np.isfinite(f["x"].values)
        expect = np.stack([f[v].values[ok] for v in "xyz"], axis=1)
    assert expect.shape[0] >= 1                   # the car ahead is detected
    p = replay.store["points"]["radar/0"]
    got = np.stack([np.frombuffer(base64.b64decode(p[c]), "<f4") for c in "xyz"], axis=1)
    np.testing.assert_allclose(np.sort(got, axis=0), np.sort(expect, axis=0), atol=1e-4)
    assert "RCS [dBsm] of radar" in json.dumps(replay.store)          # the colouring the dropdown offers


def test_large_runs_are_subsampled_with_a_note(run_dir):
    replay = view.build_replay(run_dir, max_points=500, max_frames=2)
    assert replay.n_points <= 500
    assert 0 < replay.points_fraction < 1
    stored = sum(np.frombuffer(base64.b64decode(p["object"]), np.uint8).size for p in replay.store["points"].values())
    assert stored == replay.n_points
    assert replay.times.size == 2 and replay.n_instants == 3
    title = replay.figure.layout.title.text
    assert "at most 500" in title and "--max-points" in title
    assert "2 of the run's 3 frame instants" in title and "--max-frames" in title


def test_page_bytes_are_deterministic(run_dir):
    a = view.replay_html(view.build_replay(run_dir, max_points=800))
    b = view.replay_html(view.build_replay(run_dir, max_points=800))
    assert a == b


def test_a_run_of_zarr_stores_replays_as_its_netcdf_files(run_dir, tmp_path):
    # A run partitioned over MPI ranks writes DIR/NAME.zarr: the page is the same, byte for byte,
    # as the page of the netCDF run (the expected value); the stores are written from the .nc
    # files by xarray (tests/_stores.py), in a directory of the same name (the page names it).
    from hifi.viz.replay_data import open_run
    zarr_dir = zarr_copy(run_dir, tmp_path / run_dir.name)
    run = open_run(zarr_dir)
    try:
        assert (sorted(run.range_sensors), sorted(run.cameras), sorted(run.depth_maps), sorted(run.gps)) == (
            ["lidar"], ["cam"], ["depth"], ["gps"])
        assert run.motion is not None and run.motion.encoding["source"] == str(zarr_dir / "motion.zarr")
    finally:
        for ds in [*run.range_sensors.values(), *run.cameras.values(), *run.depth_maps.values(),
                   *run.gps.values(), run.motion]:
            ds.close()
    a = view.replay_html(view.build_replay(run_dir, max_points=800))
    b = view.replay_html(view.build_replay(zarr_dir, max_points=800))
    assert a == b


def test_png_round_trip():
    Image = pytest.importorskip("PIL.Image", reason="Pillow (with matplotlib, test extra) decodes the PNG")
    import io
    rng = np.random.default_rng(3)
    rgb = rng.integers(0, 256, size=(7, 11, 3), dtype=np.uint8)
    grey = rng.integers(0, 256, size=(5, 4), dtype=np.uint8)
    for a in (rgb, grey):
        back = np.asarray(Image.open(io.BytesIO(view.png_bytes(a))))   # an independent decoder
        np.testing.assert_array_equal(back, a)


# --------------------------------------------------------------------------------------------
# bad input: exit 2, one message, nothing written
# --------------------------------------------------------------------------------------------

def _listing(d: Path):
    return sorted(p.name for p in d.iterdir())


def test_bad_input_exits_2_and_writes_nothing(run_dir, tmp_path, capsys):
    out = tmp_path / "replay.html"
    assert main(["view", str(tmp_path / "missing"), "--out", str(out)]) == 2
    assert "missing: no such run directory" in capsys.readouterr().err
    (tmp_path / "file.nc").write_text("not netcdf")
    assert main(["view", str(tmp_path / "file.nc"), "--out", str(out)]) == 2
    assert "expected a run directory" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["view", str(empty), "--out", str(out)]) == 2
    assert "no dataset" in capsys.readouterr().err
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "lidar.nc").write_text("not netcdf")
    assert main(["view", str(broken), "--out", str(out)]) == 2
    assert "lidar.nc: not a readable netCDF dataset" in capsys.readouterr().err
    assert main(["view", str(run_dir), "--out", str(tmp_path / "nodir" / "r.html")]) == 2
    assert "no such directory" in capsys.readouterr().err
    assert main(["view", str(run_dir), "--out", str(out), "--max-points", "0"]) == 2
    assert "--max-points = 0: expected an integer >= 1" in capsys.readouterr().err
    assert not out.exists()
    out.write_text("keep me")
    assert main(["view", str(run_dir), "--out", str(out)]) == 2
    assert "exists; use --overwrite" in capsys.readouterr().err
    assert out.read_text() == "keep me"
    assert _listing(tmp_path) == ["broken", "empty", "file.nc", "replay.html"]      # no temporary left
    assert main(["view", str(run_dir), "--out", str(out), "--overwrite", "--max-points", "300"]) == 0
    assert out.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert _listing(tmp_path) == ["broken", "empty", "file.nc", "replay.html"]


def test_default_out_is_beside_the_run_directory(run_dir, tmp_path, monkeypatch, capsys):
    run = tmp_path / "r1"
    shutil.copytree(run_dir, run)
    monkeypatch.chdir(run)
    assert main(["view", ".", "--max-points", "200"]) == 0
    assert (tmp_path / "r1.html").is_file()
    assert capsys.readouterr().out.strip() == str(tmp_path / "r1.html")


def test_missing_plotly_names_the_install_command(run_dir, tmp_path, monkeypatch, capsys):
    import builtins
    real = builtins.__import__

    def no_plotly(name, *args, **kwargs):
        if name == "plotly" or name.startswith("plotly."):
            raise ImportError("No module named 'plotly'")
        return real(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_plotly)
    assert main(["view", str(run_dir), "--out", str(tmp_path / "r.html")]) == 2
    assert 'pip install ".[viz]"' in capsys.readouterr().err
    assert _listing(tmp_path) == []


# --------------------------------------------------------------------------------------------
# in a real browser
# --------------------------------------------------------------------------------------------

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "chrome")


@pytest.fixture(scope="module")
def browser():
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    pytest.skip(f"no headless browser: none of {', '.join(BROWSERS)} on PATH "
                f"(Debian: apt-get install chromium)")


def _chromium(browser, *args, timeout=120):
    """Headless Chromium, offline: every host name resolves to nothing."""
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--use-angle=swiftshader",
           "--enable-unsafe-swiftshader", "--hide-scrollbars", "--no-first-run", "--disable-extensions",
           "--host-resolver-rules=MAP * ~NOTFOUND", "--virtual-time-budget=20000", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


@pytest.mark.browser
def test_browser_draws_the_page(browser, page, tmp_path):
    Image = pytest.importorskip("PIL.Image", reason="Pillow (with matplotlib, test extra) reads the screenshot")
    shot = tmp_path / "shot.png"
    res = _chromium(browser, f"--screenshot={shot}", "--window-size=1200,1500", page.as_uri())
    assert shot.is_file(), res.stderr[-2000:]
    rgb = np.asarray(Image.open(shot).convert("RGB")).astype(int)
    ink = np.any(rgb < 235, axis=-1)                          # anything not white
    colour = (rgb.max(axis=-1) - rgb.min(axis=-1)) > 60       # saturated: points, images, markers
    # Regression bounds (our own output, 2026-11: 17 % of the window inked, 8 % saturated, 2.6 %
    # of the 3-D scene's area saturated points); a page whose script failed is white, one whose
    # WebGL scene failed has no coloured points in the scene's area (the colour bar is outside it).
    h, w = ink.shape
    scene = colour[int(0.10 * h):int(0.45 * h), int(0.15 * w):int(0.80 * w)]
    print(f"inked {ink.mean():.4f}, colour {colour.mean():.4f}, scene colour {scene.mean():.4f}")
    assert ink.mean() > 0.05, f"the page looks blank: {ink.mean():.4f} of the pixels inked"
    assert colour.mean() > 0.02, f"no colour drawn: {colour.mean():.4f} of the pixels saturated"
    assert scene.mean() > 0.005, f"the 3-D scene drew no coloured points: {scene.mean():.4f}"


_DRIVER = """
<script>
window.addEventListener("error", function (e) {
  window.__hifiErrors = (window.__hifiErrors || []).concat([String(e.message)]);
});
window.addEventListener("load", function () {
  var gd = document.getElementById("hifi-replay");
  function report(o) {
    o.errors = window.__hifiErrors || [];
    var d = document.createElement("pre"); d.id = "hifi-test"; d.textContent = JSON.stringify(o);
    document.body.appendChild(d);
  }
  function find(name) { for (var i = 0; i < gd.data.length; i++) if (gd.data[i].name === name) return i; return -1; }
  function wait(n) {
    if (!gd.hifiReplay) {
      if (n > 200) { report({error: "no player"}); return; }
      setTimeout(function () { wait(n + 1); }, 50);
      return;
    }
    var r = gd.hifiReplay, li = find("lidar"), ci = find("cam"), out = {steps: r.steps};
    out.n0 = gd.data[li].x.length;
    Promise.resolve().then(function () { return r.show(2); }).then(function () {
      out.step = r.state.step; out.slider = gd.layout.sliders[0].active;
      out.n2 = gd.data[li].x.length; out.x2 = Array.from(gd.data[li].x.slice(0, 5));
      out.object2 = Array.from(gd.data[li].marker.color.slice(0, 50));
      out.cam2 = gd.data[ci].source;
      return r.setMode("height");
    }).then(function () {
      out.mode = r.state.mode; out.height2 = Array.from(gd.data[li].marker.color.slice(0, 50));
      out.colorscale = gd.data[li].marker.colorscale;
      report(out);
    }).catch(function (e) { report({error: String(e)}); });
  }
  wait(0);
});
</script>
"""


@pytest.mark.browser
def test_browser_player_shows_the_step_and_colouring(browser, page, tmp_path):
    html = page.read_text(encoding="utf-8")
    store = _store(html)
    driven = tmp_path / "driven.html"
    driven.write_text(html.replace("</body>", _DRIVER + "</body>"), encoding="utf-8")
    res = _chromium(browser, "--dump-dom", driven.as_uri())
    m = re.search(r'<pre id="hifi-test">(.*?)</pre>', res.stdout, re.S)
    assert m, f"the driver reported nothing; stderr: {res.stderr[-2000:]}"
    got = json.loads(m.group(1).replace("&quot;", '"').replace("&amp;", "&").replace("&lt;", "<").replace("&gt;", ">"))
    assert got.get("error") is None and got["errors"] == [], got
    p = store["points"]["lidar/2"]
    xs = np.frombuffer(base64.b64decode(p["x"]), "<f4")
    assert got["steps"] == 3 and got["step"] == 2 and got["slider"] == 2
    assert got["n0"] == np.frombuffer(base64.b64decode(store["points"]["lidar/0"]["x"]), "<f4").size
    assert got["n2"] == xs.size
    np.testing.assert_array_equal(np.float32(got["x2"]), xs[:5])
    assert got["object2"] == np.frombuffer(base64.b64decode(p["object"]), np.uint8)[:50].tolist()
    assert got["cam2"] == store["images"]["cam/1"]
    assert got["mode"] == "height"
    assert got["height2"] == np.frombuffer(base64.b64decode(p["height"]), np.uint8)[:50].tolist()
    assert got["colorscale"] == "Viridis"                     # the height colouring's scale

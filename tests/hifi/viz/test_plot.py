"""``hifi plot``: every plot kind writes a PNG whose texts stay inside the figure; object legends
named after ``[[objects]]``; colour choices with units; camera white balance; the pose plot;
every dataset of short runs of ``examples/patrol.toml`` and ``examples/multi_gnss_canyon.toml``
has a plot (the ``gnss_receiver``, the driven ``vehicle``), as has the ``waypoint_driver``'s.

Expected values: object names and per-object point counts are taken from the test's own
scenario dict and the dataset's ``object_id`` (counted here with numpy, not by the plot code);
the white-balance gains of a synthetic image are analytic; a grey Lambertian ground under the
simulated sun is neutral under the ``daylight`` balance because both come from the same
per-channel irradiance (Lambert: signal_c = rho E_c / pi times factors common to all channels).
The receiver's and the vehicles' plotted data are compared with the datasets' own variables
(positions, speeds, ``n_sv_used``), the constellations with the example's ``constellations``.
"""

import numpy as np
import pytest
import xarray as xr

import hifi
from hifi.cli import main
from hifi.viz.plot import MAX_LEGEND_ENTRIES, make_figure, object_categories, object_names, plot_dataset
from sensors.ccd_plot import white_balance_gains

from _plots import legend_texts, outside_figure, png_size
from _stores import zarr_copy
from conftest import REPO_ROOT

pytest.importorskip("matplotlib", reason="hifi plot needs matplotlib (the viz extra)")

N_BOXES = 17                       # 17 boxes + ground + mover: more objects than legend entries
START = "2024-05-01T10:00:00Z"     # sun ~50 deg up at the origin below
ORIGIN = {"lat_deg": 47.8, "lon_deg": 13.04, "height_m": 430.0}


def _scenario():
    objects = [{"name": "ground", "mesh": "plane", "size_m": [80, 80], "material": "grey"}]
    for i in range(N_BOXES):                  # a ring of boxes, farther (so fewer returns) with i
        a, r = 2 * np.pi * i / N_BOXES, 6.0 + 0.5 * i
        objects.append({"name": f"box_{i:02d}", "mesh": "box", "size_m": [1.0, 1.0, 2.0], "material": "red",
                        "position_m": [round(r * np.cos(a), 3), round(r * np.sin(a), 3), 1.0]})
    objects.append({"name": "mover", "mesh": "car", "material": "red",
                    "track": [{"t_s": 0.0, "position_m": [-3.0, -3.0, 0.0], "rpy_deg": [0, 0, 0]},
                              {"t_s": 1.0, "position_m": [7.0, -3.0, 0.0], "rpy_deg": [0, 0, 20]}]})
    mount = {"position_m": [0.0, 0.0, 1.5]}
    sensors = [
        {"name": "vlp", "model": "vlp16", **mount},
        {"name": "ibeo", "model": "ibeo_lux", "position_m": [0.0, 0.0, 0.5]},
        {"name": "tof", "model": "tof_sr4000", "rate_hz": 10.0, **mount,
         "params": {"resolution_x": 44, "resolution_y": 36}},
        {"name": "depth", "model": "depthmap", **mount, "params": {"resolution_x": 64, "resolution_y": 48}},
        {"name": "grid", "model": "generic_grid", "rate_hz": 10.0, **mount, "params": {"n_theta": 120, "n_phi": 10}},
        {"name": "raw", "model": "raw_lidar", **mount, "params": {"resolution_x": 48, "resolution_y": 12}},
        {"name": "lms", "model": "sick_lms291", "rate_hz": 10.0, "position_m": [0.0, 0.0, 0.8],
         "params": {"n_subrays": 4, "return_mode": "dual"}},
        {"name": "cam", "model": "ccd_camera", **mount,
         "rpy_deg": [0, 15, 90], "params": {"resolution_x": 48, "resolution_y": 36, "focal_length_m": 0.4e-3}},
        {"name": "odo", "model": "pose", "rate_hz": 50.0, "parent": "mover"},
    ]
    return {"simulation": {"duration_s": 0.1, "seed": 3, "start_utc": START, "origin": ORIGIN},
            "materials": {"grey": {"reflectivity": 0.3, "color_rgb": [0.5, 0.5, 0.5], "class": "road"},
                          "red": {"reflectivity": 0.5, "color_rgb": [0.7, 0.2, 0.1], "class": "thing"}},
            "objects": objects, "sensors": sensors, "output": {"motion_rate_hz": 20.0}}


NAMES = [o["name"] for o in _scenario()["objects"]]
#: Plot kind -> dataset of the run: rotating lidar, line scanner, ToF, depth map, generic grid,
#: raw lidar, dual-return LADAR, camera, pose sensor, motion.nc.
KINDS = ("vlp", "ibeo", "tof", "depth", "grid", "raw", "lms", "cam", "odo", "motion")
RANGE_KINDS = ("vlp", "ibeo", "tof", "grid", "lms")


@pytest.fixture(scope="module")
def run():
    return hifi.Simulation.from_dict(_scenario()).run(out=None, progress=False)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    import matplotlib.pyplot as plt
    plt.close("all")


@pytest.mark.parametrize("kind", KINDS)
def test_every_plot_kind_writes_a_png_of_the_expected_size(run, kind, tmp_path):
    out = plot_dataset(run[kind], tmp_path / f"{kind}.png")
    width, height = png_size(out)
    # Figures are 9.5 .. 15.5 in wide, at 110 dpi, and never taller than wide.
    assert 1000 <= width <= 1750, (kind, width)
    assert 250 <= height <= width, (kind, height)


@pytest.mark.parametrize("kind", KINDS)
def test_every_label_is_inside_the_figure(run, kind):
    fig = make_figure(run[kind])
    assert outside_figure(fig) == []


@pytest.mark.parametrize("color", ["height", "intensity", "reflectivity", "distance"])
@pytest.mark.parametrize("kind", ["vlp", "tof", "lms"])
def test_colour_choices_inside_the_figure_with_a_colour_bar_in_units(run, kind, color):
    fig = make_figure(run[kind], color=color)
    assert outside_figure(fig) == []
    bars = [ax.get_ylabel() for ax in fig.axes if ax.get_label() == "<colorbar>"]
    unit = {"height": "[m]", "distance": "[m]", "intensity": "[1]", "reflectivity": "[1]"}[color]
    assert len(bars) == 1 and unit in bars[0], bars


def _expected_legend(object_id):
    """Names of the ids present, most frequent 14 by count, then "other (n objects)" (numpy count)."""
    ids, counts = np.unique(object_id[object_id >= 0], return_counts=True)
    if ids.size <= MAX_LEGEND_ENTRIES:
        return [NAMES[i] for i in ids]
    keep = np.sort(ids[np.argsort(-counts, kind="stable")[:MAX_LEGEND_ENTRIES - 1]])
    return [NAMES[i] for i in keep] + [f"other ({ids.size - keep.size} objects)"]


def test_object_legend_names_the_objects_and_groups_the_rest(run):
    ds = run["vlp"]
    oid = ds["object_id"].values[ds["detected"].values]
    assert np.unique(oid).size > MAX_LEGEND_ENTRIES          # the scene sees every object
    texts = legend_texts(make_figure(ds))
    expected = _expected_legend(oid)
    assert texts[:len(expected)] == expected
    assert texts[len(expected):] == ["no hit", "sensor (frame start)"]
    assert len(expected) == MAX_LEGEND_ENTRIES and expected[-1].startswith("other (")


def test_depth_map_legend_names_the_objects(run):
    ds = run["depth"]
    oid = ds["object_id"].values[0]
    texts = legend_texts(make_figure(ds))
    expected = _expected_legend(oid)
    assert texts == expected + (["no hit"] if (oid < 0).any() else [])


def test_object_name_coordinate_is_preferred_over_the_scenario_text(run):
    ds = run["depth"]
    assert object_names(ds) == NAMES                          # from the scenario (JSON form here)
    renamed = ds.assign_coords(object_name=("object", [n.upper() for n in NAMES]))
    assert object_names(renamed) == [n.upper() for n in NAMES]
    texts = legend_texts(make_figure(renamed))
    assert "GROUND" in texts and "ground" not in texts


def test_object_names_from_a_scenario_file(tmp_path):
    text = ('version = 1\n[simulation]\nduration_s = 0.1\n[materials.w]\nreflectivity = 0.5\n'
            '[[objects]]\nname = "floor"\nmesh = "plane"\nsize_m = [10, 10]\nmaterial = "w"\n'
            '[[objects]]\nname = "pillar"\nmesh = "box"\nsize_m = [1, 1, 3]\nmaterial = "w"\n'
            'position_m = [3, 0, 1.5]\n')
    ds = xr.Dataset(attrs={"scenario": text})
    assert object_names(ds) == ["floor", "pillar"]
    assert object_names(xr.Dataset()) == []


def test_object_categories_keep_the_most_frequent_and_group_the_rest():
    counts = np.arange(1, 21)                                # id i occurs i + 1 times, ids 0..19
    ids = np.repeat(np.arange(20), counts)
    cats = object_categories(np.concatenate([ids, [-1, -1]]), [f"o{i}" for i in range(20)])
    assert len(cats.labels) == MAX_LEGEND_ENTRIES
    np.testing.assert_array_equal(cats.ids, np.arange(6, 20))        # the 14 most frequent
    np.testing.assert_array_equal(cats.other_ids, np.arange(6))
    assert cats.labels[-1] == "other (6 objects)" and cats.labels[0] == "o6"
    np.testing.assert_array_equal(cats.index([6, 19, 0, -1]), [0, 13, 14, -1])
    assert len(set(cats.colors)) == len(cats.colors)                  # no two entries alike
    few = object_categories([3, 3, 21], ["a", "b", "c", "d"])          # id 21 has no name
    assert few.labels == ["d", "object 21"] and few.other_ids.size == 0
    # colours follow the id (mod 18); id 18 would repeat id 0's colour and takes a free one
    a, b = object_categories([0, 3], []), object_categories([0, 3, 18], [])
    assert a.colors == b.colors[:2] and b.colors[2] not in b.colors[:2]


@pytest.mark.parametrize("kind", RANGE_KINDS)
def test_birds_eye_view_has_equal_aspect(run, kind):
    fig = make_figure(run[kind])
    assert fig.axes[0].get_aspect() == 1.0
    assert fig.axes[0].get_xlabel() == "x (east) [m]" and fig.axes[0].get_ylabel() == "y (north) [m]"


def test_pose_plot_shows_the_track_and_the_components_against_time(run):
    ds = run["odo"]
    fig = make_figure(ds)
    plan, pos, ori, vel = fig.axes[:4]
    assert plan.get_aspect() == 1.0
    track = plan.get_lines()[0]
    np.testing.assert_array_equal(track.get_xdata(), ds["position"].values[:, 0])
    np.testing.assert_array_equal(track.get_ydata(), ds["position"].values[:, 1])
    assert pos.get_ylabel() == "position [m]" and ori.get_ylabel() == "orientation [deg]"
    assert vel.get_ylabel() == "velocity [m/s]" and vel.get_xlabel() == "time [s]"
    # yaw of the mover: slerp from 0 to 20 deg over 1 s (the scenario's track), t = 0 .. 0.08 s
    t = np.arange(ds.sizes["frame"]) / 50.0                    # 50 Hz from t = 0
    yaw = ori.get_lines()[2].get_ydata()
    np.testing.assert_allclose(ori.get_lines()[2].get_xdata(), t, atol=1e-9)   # 1 ns
    np.testing.assert_allclose(yaw, 20.0 * t, atol=1e-9)                      # 1e-9 deg


def test_times_stored_as_seconds_or_decoded_to_datetime64_give_the_same_pose_plot(run):
    t = np.arange(run["odo"].sizes["frame"]) / 50.0            # 50 Hz from t = 0
    start = np.datetime64(START.rstrip("Z"), "ns")
    seconds = run["odo"].assign(timestamp=("frame", t))
    decoded = run["odo"].assign(timestamp=("frame", start + (t * 1e9).round().astype("timedelta64[ns]")))
    for ds in (seconds, decoded):
        x = make_figure(ds).axes[1].get_lines()[0].get_xdata()
        np.testing.assert_allclose(x, t, atol=1e-9)                            # 1 ns


def test_white_balance_gains_of_a_synthetic_image():
    # Channel means 100, 200, 50 DN above a black level of 10 DN: gains 2, 1, 4 (analytic).
    img = np.empty((4, 5, 3))
    img[...] = [110.0, 210.0, 60.0]
    img[0, 0] = [4095.0, 4095.0, 4095.0]                      # saturated: left out of the means
    np.testing.assert_allclose(white_balance_gains(img, "gray-world", black_level_dn=10.0, saturation_dn=4095.0),
                               [2.0, 1.0, 4.0], rtol=1e-12)
    np.testing.assert_array_equal(white_balance_gains(img, "none"), [1.0, 1.0, 1.0])
    np.testing.assert_allclose(white_balance_gains(img, "daylight", white_reference=[2.0, 4.0, 1.0]),
                               [2.0, 1.0, 4.0], rtol=1e-12)
    np.testing.assert_array_equal(white_balance_gains(img[..., :1], "gray-world"), [1.0])   # mono
    with pytest.raises(ValueError, match="white_balance = 'auto'"):
        white_balance_gains(img, "auto")


def test_gray_world_makes_the_channel_means_equal(run):
    ds = run["cam"]
    image = ds["image"].isel(frame=0).values.astype(float)
    black, max_dn = float(ds.attrs["black_level_dn"]), float(ds.attrs["max_dn"])
    raw_means = (image - black).reshape(-1, 3).mean(axis=0)
    assert np.ptp(raw_means) > 5.0                            # the sensor alone is not balanced
    gains = white_balance_gains(image, "gray-world", black_level_dn=black, saturation_dn=max_dn)
    ok = np.all(image < max_dn, axis=-1)
    means = ((image - black) * gains)[ok].mean(axis=0)
    assert np.ptp(means) < 1.0                                # within 1 DN


def test_white_balance_changes_the_image_shown(run):
    ds = run["cam"]

    def shown(wb):
        fig = make_figure(ds, white_balance=wb)
        return [ax.get_images()[0].get_array() for ax in fig.axes[:2]]
    none, gray, day = shown("none"), shown("gray-world"), shown("daylight")
    default = [ax.get_images()[0].get_array() for ax in make_figure(ds).axes[:2]]
    for a, b in zip(default, gray):                             # gray-world is the default
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(none[0], gray[0]) and not np.allclose(none[0], day[0])
    # the ideal image beside it gets the same gains
    assert not np.allclose(none[1], gray[1])


def test_daylight_balance_makes_a_sunlit_grey_ground_neutral(run):
    from sensors.ccd_plot import daylight_white
    d = _scenario()
    d["objects"] = d["objects"][:1]                            # the grey ground alone
    d["sensors"] = [{"name": "cam", "model": "ccd_camera", "position_m": [0, 0, 10], "rpy_deg": [0, 90, 0],
                     "params": {"resolution_x": 16, "resolution_y": 12, "focal_length_m": 2e-3}}]
    ds = hifi.Simulation.from_dict(d).run(out=None, progress=False)["cam"]
    ideal = ds["ideal_image"].isel(frame=0).values.astype(float)
    balanced = ideal * white_balance_gains(ideal, "daylight", white_reference=daylight_white(ds))
    ratio = balanced / balanced[..., 1:2]
    np.testing.assert_allclose(ratio, 1.0, rtol=1e-5)          # float32 ideal image: a few ulp


def test_options_a_plot_does_not_take_and_bad_values_raise(run):
    with pytest.raises(ValueError, match=r"color = 'height'.*does not take color"):
        make_figure(run["cam"], color="height")
    with pytest.raises(ValueError, match=r"white_balance = 'none'.*does not take white_balance"):
        make_figure(run["vlp"], white_balance="none")
    with pytest.raises(ValueError, match="color = 'rainbow'"):
        make_figure(run["vlp"], color="rainbow")
    with pytest.raises(ValueError, match=r"white_balance = 'D50'"):
        make_figure(run["cam"], white_balance="D50")
    with pytest.raises(ValueError, match=r"frame = 5: 'vlp' has 1 frames"):
        make_figure(run["vlp"], frame=5)
    with pytest.raises(ValueError, match="no plot for dataset"):
        make_figure(xr.Dataset({"v": ("frame", [1.0])}))


def test_cli_plot_options(run, tmp_path, capsys):
    for kind in ("vlp", "cam"):
        run[kind].to_netcdf(tmp_path / f"{kind}.nc")
    assert main(["plot", str(tmp_path / "vlp.nc"), "--color", "intensity", "--out", str(tmp_path / "i.png")]) == 0
    assert main(["plot", str(tmp_path / "cam.nc"), "--white-balance", "daylight"]) == 0
    assert png_size(tmp_path / "cam.png")[0] > 1000                  # default: beside the dataset
    assert main(["plot", str(tmp_path / "vlp.nc"), "--white-balance", "none"]) == 2
    assert "does not take white_balance" in capsys.readouterr().err
    assert main(["plot", str(tmp_path / "cam.nc"), "--frame", "3"]) == 2
    assert "frame" in capsys.readouterr().err


def test_cli_plot_of_a_zarr_store_draws_the_netcdf_files_image(run, tmp_path, capsys):
    # A run partitioned over MPI ranks writes DIR/NAME.zarr: hifi plot draws the same pixels from
    # it as from DIR/NAME.nc (the expected image: the netCDF file's plot). The stores are
    # written from the .nc files by xarray (tests/_stores.py).
    import matplotlib.image
    nc_dir, kinds = tmp_path / "nc", ("vlp", "depth", "cam", "motion")
    nc_dir.mkdir()
    for kind in kinds:
        run[kind].to_netcdf(nc_dir / f"{kind}.nc")
    zarr_dir = zarr_copy(nc_dir, tmp_path / "zarr")
    for kind in kinds:
        png = {}
        for d, suffix in ((nc_dir, ".nc"), (zarr_dir, ".zarr")):
            assert main(["plot", str(d / f"{kind}{suffix}")]) == 0       # default: NAME.png beside it
            png[suffix] = matplotlib.image.imread(d / f"{kind}.png")
        assert png[".nc"].shape == png[".zarr"].shape and png[".nc"].shape[1] > 1000, kind
        np.testing.assert_array_equal(png[".zarr"], png[".nc"], err_msg=kind)
    # the store is the input: no image is written over it or inside it
    before = sorted(p.relative_to(zarr_dir) for p in zarr_dir.rglob("*"))
    for out in (zarr_dir / "vlp.zarr", zarr_dir / "vlp.zarr" / "quick.png"):
        assert main(["plot", str(zarr_dir / "vlp.zarr"), "--out", str(out), "--overwrite"]) == 2
        assert "refusing to write over or inside a command's own input" in capsys.readouterr().err
    assert sorted(p.relative_to(zarr_dir) for p in zarr_dir.rglob("*")) == before


@pytest.mark.parametrize("kind", ["vlp", "grid", "tof"])
def test_sensor_layout_runs_counter_clockwise_to_clockwise_with_forward_in_the_middle(run, kind):
    from hifi.viz.plot import _layout
    fr = run[kind].isel(frame=0)
    arrange, elev, yaw, _ = _layout(fr)
    assert np.all(np.diff(elev) <= 0)                               # top row = highest beam
    turn = np.degrees(np.diff(np.unwrap(np.radians(yaw))))
    assert np.all(turn < 0)                                         # left = counter-clockwise
    assert abs(yaw[yaw.size // 2]) < 360.0 / yaw.size + 1e-9 or kind == "tof"   # forward in the middle
    # arrange() moves the data with the angles: the yaw of every ray, arranged, matches by column
    ray_yaw = np.degrees(arrange(fr["yaw"].values))
    np.testing.assert_allclose(np.cos(np.radians(ray_yaw - yaw)), 1.0, atol=1e-3)   # beams' azimuth offsets < 2.6 deg


def test_dual_return_lidar_plots_its_strongest_echo_in_the_sensor_layout(tmp_path):
    # vlp16 in dual mode: (step, laser, return) variables; the figure shows slot 0 (strongest)
    # in both panels and says so; coloured by the calibrated reflectivity.
    d = _scenario()
    d["sensors"] = [{"name": "vlp", "model": "vlp16", "position_m": [0.0, 0.0, 1.5],
                     "params": {"return_mode": "dual", "azimuth_stride": 4}}]
    ds = hifi.Simulation.from_dict(d).run(out=None, progress=False)["vlp"]
    assert ds["distance_noisy"].dims[-1] == "return"
    fig = make_figure(ds, color="reflectivity")
    assert outside_figure(fig) == []
    titles = [ax.get_title() for ax in fig.axes]
    n_strongest = int(ds["detected"].isel(frame=0, **{"return": 0}).sum())   # numpy count, slot 0
    assert f"bird's-eye view, {n_strongest} returns (dual: strongest)" in titles, titles
    assert len(fig.axes) == 3                          # bird's eye, sensor layout, colour bar



@pytest.mark.parametrize("env, setup, expected", [
    ({}, "", "agg"),                                                  # hifi plot: no display needed
    ({"MPLBACKEND": "svg"}, "", "svg"),                               # a notebook kernel names its backend
    ({}, "import matplotlib; matplotlib.use('pdf'); import matplotlib.pyplot", "pdf"),   # chosen already
])
def test_plots_keep_a_backend_chosen_before(env, setup, expected):
    import os
    import subprocess
    import sys
    code = f"{setup}\nimport hifi.viz.plot\nimport matplotlib\nhifi.viz.plot._pyplot()\nprint(matplotlib.get_backend().lower())"
    clean = {k: v for k, v in os.environ.items() if k != "MPLBACKEND"}
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={**clean, **env},
                         timeout=120, check=True)
    assert res.stdout.strip().splitlines()[-1] == expected


# -- datasets of example runs: gnss_receiver, a driven vehicle, a waypoint driver --------------
EXAMPLES = REPO_ROOT / "examples"


def _example_run(tmp_path_factory, name, duration_s):
    """``hifi run examples/NAME.toml --duration D`` into a fresh directory; returns it."""
    out = tmp_path_factory.mktemp(name) / "run"
    assert main(["run", str(EXAMPLES / f"{name}.toml"), "--out", str(out), "--duration", str(duration_s),
                 "--no-progress"]) == 0
    return out


@pytest.fixture(scope="module")
def patrol(tmp_path_factory):
    return _example_run(tmp_path_factory, "patrol", 1.0)            # 50 vehicle steps


@pytest.fixture(scope="module")
def canyon(tmp_path_factory):
    return _example_run(tmp_path_factory, "multi_gnss_canyon", 4.0)   # 4 epochs at 1 Hz


def _assert_png_drawn(path):
    """A PNG of the quick-look size (as above) that is not blank: many non-white pixels."""
    import matplotlib.image
    width, height = png_size(path)
    assert 1000 <= width <= 1750 and 250 <= height <= width, (width, height)
    rgb = matplotlib.image.imread(path)[..., :3]
    inked = np.any(rgb < 0.9, axis=-1).mean()
    assert inked > 0.02, inked             # axes, lines and text cover a few % of the figure at least
    assert np.unique(rgb.reshape(-1, 3), axis=0).shape[0] > 20        # more than a frame and black text


@pytest.mark.parametrize("example", ["patrol", "canyon"])
def test_every_dataset_of_an_example_run_has_a_plot(example, request):
    run_dir = request.getfixturevalue(example)
    files = sorted(run_dir.glob("*.nc"))
    assert len(files) >= 2
    for f in files:
        with xr.open_dataset(f) as ds:
            make_figure(ds)                 # raises "no plot for dataset ..." when none covers it


def test_gnss_receiver_plot_has_a_sky_per_constellation(canyon, tmp_path):
    out = tmp_path / "gnss.png"
    assert main(["plot", str(canyon / "gnss.nc"), "--frame", "2", "--out", str(out)]) == 0
    _assert_png_drawn(out)
    with xr.open_dataset(canyon / "gnss.nc") as ds:
        fig = make_figure(ds, frame=2)
        assert outside_figure(fig) == []
        polar = [ax for ax in fig.axes if ax.name == "polar"]
        # constellations = ["G", "E", "C"] in examples/multi_gnss_canyon.toml
        assert [ax.get_title().split(" ")[0] for ax in polar] == ["GPS", "Galileo", "BeiDou"]
        err, cn0, count = [ax for ax in fig.axes if ax.name != "polar"]
        assert err.get_ylabel() == "position error [m]" and cn0.get_ylabel() == "C/N0 [dB-Hz]"
        # the total used in the fix is the dataset's n_sv_used
        total = [ln for ln in count.get_lines() if ln.get_label() == "all used in the fix"][0]
        np.testing.assert_array_equal(total.get_ydata(), ds["n_sv_used"].values)
        assert [t.get_text() for t in cn0.get_legend().get_texts()] == list(ds["signal"].values)


def test_vehicle_plot_of_the_patrol_robot(patrol, tmp_path):
    out = tmp_path / "robot.png"
    assert main(["plot", str(patrol / "robot.nc"), "--out", str(out)]) == 0
    _assert_png_drawn(out)
    with xr.open_dataset(patrol / "robot.nc") as ds:
        assert ds.attrs["sensor_model"] == "vehicle"
        fig = make_figure(ds, frame=-1)
        assert outside_figure(fig) == []
        plan, speed, heading, steer = fig.axes[:4]
        assert plan.get_aspect() == 1.0
        track = plan.get_lines()[0]
        np.testing.assert_array_equal(track.get_xdata(), ds["position"].values[:, 0])
        np.testing.assert_array_equal(track.get_ydata(), ds["position"].values[:, 1])
        assert speed.get_ylabel() == "speed [m/s]" and heading.get_ylabel() == "heading [deg]"
        assert steer.get_ylabel() == "steering [deg]" and steer.get_xlabel() == "time [s]"
        np.testing.assert_array_equal(speed.get_lines()[0].get_ydata(), ds["speed"].values)
        np.testing.assert_allclose(heading.get_lines()[0].get_ydata(), np.degrees(ds["yaw"].values),
                                   atol=1e-9)          # 1e-9 deg: the yaw stays within +-180 deg here


def test_waypoint_driver_plot_shows_the_true_and_the_perceived_track(tmp_path):
    d = {"simulation": {"duration_s": 3.0, "seed": 3},
         "objects": [{"name": "ground", "mesh": "plane", "size_m": [100, 100]},
                     {"name": "car", "mesh": "car", "vehicle": {}}],
         "models": [{"name": "driver", "model": "waypoint_driver",
                     "params": {"body": "car", "waypoints_m": [[5.0, 0.0], [5.0, 5.0]], "speed_m_s": 2.0}}]}
    out = hifi.Simulation.from_dict(d).run(out=None, progress=False)
    _assert_png_drawn(plot_dataset(out["driver"], tmp_path / "driver.png"))
    fig = make_figure(out["driver"])
    assert outside_figure(fig) == []
    labels = [ln.get_label() for ln in fig.axes[0].get_lines()]
    assert labels[:2] == ["track (true)", "track (perceived)"]
    np.testing.assert_array_equal(fig.axes[0].get_lines()[0].get_xdata(), out["driver"]["position_true"].values[:, 0])

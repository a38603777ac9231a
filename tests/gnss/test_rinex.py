"""RINEX 2 and 3 readers on RTKLIB's files (vendored in tests/data/gnss) and on our RINEX 3.04 fixtures."""

import gzip
import io
import zipfile
from pathlib import Path

import hatanaka
import ncompress
import numpy as np
import pytest
import xarray as xr

import gnss

from conftest import TEST_DATA

DATA = TEST_DATA / "gnss"


def test_read_nav_v2(test_data):
    nav = gnss.read_nav(test_data("gnss/07590920.05n"))
    # header values as printed in the file (ION ALPHA / ION BETA lines)
    np.testing.assert_array_equal(nav["ion_alpha"].values, [1.1180e-08, 1.4900e-08, -5.9600e-08, -5.9600e-08])
    np.testing.assert_array_equal(nav["ion_beta"].values, [8.8060e04, 1.6380e04, -1.9660e05, -1.3110e05])
    first = nav.isel(record=0)
    # first record of the file: G01 2005-04-02 02:00, values as printed (D exponents)
    assert int(first["prn"]) == 1
    assert first["toc"].values == np.datetime64("2005-04-02T02:00:00", "ns")
    assert float(first["af0"]) == 3.966595977540e-04
    assert float(first["sqrt_a"]) == 5.153636478420e03
    assert float(first["toe_sow"]) == 5.256e05 and int(first["toe_week"]) == 1316
    assert float(first["tgd"]) == -3.259629011150e-09
    assert nav.attrs["leap_seconds"] == 13


def test_read_nav_brdc(test_data):
    nav = gnss.read_nav(test_data("gnss/brdc1820.10n"))
    assert nav.sizes["record"] == 421  # regression value: number of ephemeris records in the file
    assert set(np.unique(nav["toe_week"].values)) <= {1590, 1591}  # 2010-07-01 is in GPS week 1590


def test_read_obs_v2(test_data):
    obs = gnss.read_obs(test_data("gnss/07590920.05o"))
    assert obs.sizes["epoch"] == 120  # 00:00:00 - 00:59:30 at 30 s (SOURCES.md)
    assert obs["C1"].sel(sv="G03").values[0] == 24767686.375  # first epoch, as printed
    assert obs["P2"].sel(sv="G28").values[0] == 21543403.046
    np.testing.assert_array_equal(obs["approx_position_ecef"].values, [-3976219.5082, 3382372.5671, 3652512.9849])
    assert obs["C1"].attrs["units"] == "m"


def test_nav_v3_fixture_matches_v2(test_data):
    v2 = gnss.read_nav(test_data("gnss/07590920.05n"))
    v3 = gnss.read_nav(DATA / "0759_v304_nav.rnx")
    v2 = v2.isel(record=np.flatnonzero(np.isin(v2["prn"].values, v3["prn"].values)))
    assert v3.sizes["record"] == v2.sizes["record"] > 0
    for name in v3.data_vars:
        np.testing.assert_array_equal(v3[name].values, v2[name].values, err_msg=name)  # same digits, same values


def test_obs_v3_fixture_matches_v2(test_data):
    v2 = gnss.read_obs(test_data("gnss/07590920.05o")).isel(epoch=slice(0, 4))
    v3 = gnss.read_obs(DATA / "0759_v304_obs.rnx")
    np.testing.assert_array_equal(v3["epoch"].values, v2["epoch"].values)
    np.testing.assert_array_equal(v3["C1C"].values, v2["C1"].sel(sv=v3["sv"]).values)
    np.testing.assert_array_equal(v3["L2W"].values, v2["L2"].sel(sv=v3["sv"]).values)


def test_v3_fixture_standalone():
    # the RINEX 3 fixture alone: header Klobuchar from IONOSPHERIC CORR GPSA/GPSB
    nav = gnss.read_nav(DATA / "0759_v304_nav.rnx")
    np.testing.assert_array_equal(nav["ion_alpha"].values, [1.1180e-08, 1.4900e-08, -5.9600e-08, -5.9600e-08])
    assert sorted(set(nav["sv"].values)) == ["G03", "G07", "G08", "G19"]


def test_not_a_nav_file():
    with pytest.raises(ValueError, match="not GPS navigation|not a RINEX"):
        gnss.read_nav(DATA / "0759_v304_obs.rnx")


def test_solver_same_on_v2_and_v3(test_data):
    nav3, obs3 = gnss.read_nav(DATA / "0759_v304_nav.rnx"), gnss.read_obs(DATA / "0759_v304_obs.rnx")
    nav2, obs2 = gnss.read_nav(test_data("gnss/07590920.05n")), gnss.read_obs(test_data("gnss/07590920.05o"))
    obs2 = obs2.isel(epoch=slice(0, 4))
    # same satellites in both: the v3 nav fixture holds G03, G07, G08, G19 only
    keep = [s for s in obs3["sv"].values if s in set(nav3["sv"].values)]
    a = gnss.solve(obs3.sel(sv=keep), nav3, elevation_mask_deg=0.0)
    b = gnss.solve(obs2.sel(sv=keep), nav2, elevation_mask_deg=0.0)
    assert a.attrs["observable"] == "C1C" and b.attrs["observable"] == "C1"
    # identical inputs through both readers: identical fixes (NaN where < 4 satellites)
    np.testing.assert_array_equal(a["position_ecef"].values, b["position_ecef"].values)
    np.testing.assert_array_equal(a["n_sv_used"].values, b["n_sv_used"].values)


# --- compressed RINEX (gzip, Unix compress, zip, Hatanaka) ---------------------------------------

def _compressed_copies(src: Path, tmp_path: Path) -> dict[str, Path]:
    """Compressed copies of a RINEX file, named as IGS archives name them, plus misnamed ones.

    gzip: Python's gzip module; zip: zipfile (deflate); .Z (LZW, Unix compress): the
    ``ncompress`` package (installed with hatanaka, which uses it for .Z); Hatanaka CRINEX
    through ``hatanaka.rnx2crx`` and .crx.Z through ``hatanaka.compress(compression="Z")``
    (observation files only).
    """
    raw = src.read_bytes()
    out = {"gz": gzip.compress(raw), "Z": ncompress.compress(raw)}
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(src.name, raw)
    out["zip"] = buf.getvalue()
    if b"OBSERVATION DATA" in raw[:80]:
        crx = hatanaka.rnx2crx(raw)
        out.update({"crx": crx, "crx.gz": gzip.compress(crx), "crx.Z": hatanaka.compress(raw, compression="Z")})
    paths = {}
    for suffix, blob in out.items():
        paths[suffix] = tmp_path / f"{src.name}.{suffix}"
        paths[suffix].write_bytes(blob)
        # detection is by content: the same bytes under the plain file's name read the same
        paths[f"misnamed {suffix}"] = tmp_path / f"misnamed_{suffix.replace('.', '_')}" / src.name
        paths[f"misnamed {suffix}"].parent.mkdir()
        paths[f"misnamed {suffix}"].write_bytes(blob)
    return paths


@pytest.mark.parametrize("name, reader", [("gnss/07590920.05n", gnss.read_nav),
                                          ("gnss/07590920.05o", gnss.read_obs),
                                          ("gnss/0759_v304_nav.rnx", gnss.read_nav),
                                          ("gnss/0759_v304_obs.rnx", gnss.read_obs),
                                          ("gnss/igs15904.sp3", gnss.read_sp3),
                                          ("gnss/igs15904.clk", gnss.read_clk)])
def test_compressed_reads_identical(test_data, tmp_path, name, reader):
    # expected: the plain file's Dataset (lossless compression), only source_file names the copy
    plain = reader(test_data(name))
    copies = _compressed_copies(test_data(name), tmp_path)
    if reader is gnss.read_obs:
        assert {"crx", "crx.gz", "crx.Z"} <= set(copies)
        assert b"COMPACT RINEX FORMAT" in ncompress.decompress(copies["crx.Z"].read_bytes())[:80]
    assert ncompress.decompress(copies["Z"].read_bytes()) == test_data(name).read_bytes()  # plain file inside
    for kind, path in copies.items():
        ds = reader(path)
        assert ds.attrs["source_file"] == str(path), kind
        xr.testing.assert_identical(ds.assign_attrs(source_file=plain.attrs["source_file"]), plain)


def test_hatanaka_suffixes(test_data, tmp_path):
    # a short-name Hatanaka file (.05d) and its .Z, as IGS archives hold them: same as the .05o
    src = test_data("gnss/07590920.05o")
    plain = gnss.read_obs(src)
    crx = hatanaka.rnx2crx(src.read_bytes())
    (tmp_path / "07590920.05d").write_bytes(crx)
    (tmp_path / "07590920.05d.Z").write_bytes(hatanaka.compress(src.read_bytes(), compression="Z"))
    for p in (tmp_path / "07590920.05d", tmp_path / "07590920.05d.Z"):
        xr.testing.assert_identical(gnss.read_obs(p).assign_attrs(source_file=plain.attrs["source_file"]), plain)


@pytest.mark.parametrize("kind", ["gz", "Z", "zip", "crx", "crx.gz"])
def test_corrupt_compressed_file_is_a_clear_value_error(test_data, tmp_path, kind):
    copies = _compressed_copies(test_data("gnss/07590920.05o"), tmp_path)
    blob = copies[kind].read_bytes()
    bad = tmp_path / f"bad.05o.{kind}"
    # truncated in the middle: gzip, zip and CRINEX detect it while decompressing; LZW (.Z) has
    # no length or checksum, so the .Z yields a RINEX file cut inside an epoch, which read_obs refuses
    bad.write_bytes(blob[: len(blob) // 2])
    with pytest.raises(ValueError, match=r"bad\.05o\.") as info:
        gnss.read_obs(bad)
    assert "END OF HEADER" not in str(info.value)


def test_corrupt_gzip_nav_names_file_and_format(tmp_path):
    bad = tmp_path / "brdc1820.10n.gz"
    bad.write_bytes(b"\x1f\x8b\x08\x00" + b"\x00" * 6 + b"not deflate data at all" * 8)
    with pytest.raises(ValueError, match=r"brdc1820\.10n\.gz.*gzip"):
        gnss.read_nav(bad)


def test_missing_vendored_file_fails_not_skips(test_data):
    # vendored files are part of the repository: a missing one is a failure, never a skip
    with pytest.raises(pytest.fail.Exception, match="vendored test file missing"):
        test_data("gnss/no_such_file.05o")


def test_rinex4_mixed_navigation(test_data):
    # RINEX 4.00 (KMS300DNK, 2022-06-08 10-11 h; tests/data/gnss/README.md): "> EPH" records of
    # LNAV (GPS), INAV (Galileo; its FNAV twins skipped) and D1/D2 (BeiDou) are read with their
    # RINEX 3 bodies; SBAS, GLONASS, CNAV records skipped; Klobuchar from the "> ION G29 LNAV"
    # record (values read off the file).
    from gnss.rinex import read_nav
    nav = read_nav(test_data("gnss/KMS300DNK_R_20221591000_01H_MN.rnx.gz"), systems=("G", "E", "C"))
    counts = dict(zip(*np.unique(nav["system"].values, return_counts=True)))
    assert counts == {"C": 36, "E": 55, "G": 30}
    np.testing.assert_allclose(nav["ion_alpha"].values, [1.024454832077e-08, 2.235174179077e-08,
                                                         -5.960464477539e-08, -1.192092895508e-07])
    np.testing.assert_allclose(nav["ion_beta"].values, [9.6256e4, 1.31072e5, -6.5536e4, -5.89824e5])
    g02 = nav.isel(record=0)
    assert str(g02["sv"].values) == "G02" and float(g02["sqrt_a"]) == 5.153679471970e3
    assert float(g02["toe_sow"]) == 2.952e5 and int(g02["toe_week"]) == 2213
    # every record gives a satellite on its constellation's orbit at toe: GPS a = 26560 km,
    # Galileo 29600 km, BeiDou MEO 27900 km / IGSO and GEO 42160 km (the published semi-major axes)
    import gnss
    from gnss import gpstime
    from gnss.orbit import sv_state_at
    t = gpstime.GpsTime(nav["toe_week"].values, nav["toe_sow"].values + nav["system_time_offset_s"].values)
    r = np.linalg.norm(sv_state_at(nav, nav["sat"].values, t, record=np.arange(nav.sizes["record"])).position_ecef,
                       axis=-1) / 1e3
    # (E14 and E18 were left in an eccentric orbit, e = 0.16, by their 2014 launch: not in this check)
    eccentric = np.isin(nav["sv"].values.astype(str), ["E14", "E18"])
    for system, radii in (("G", [26560]), ("E", [29600]), ("C", [27900, 42160])):
        rs = r[(nav["system"].values == system) & ~eccentric]
        assert np.all(np.min(np.abs(rs[:, None] - np.array(radii)[None, :]), axis=1) < 700), (system, rs)


def _one_sv_observables(tags):
    """A G01 L1 C/A record at each time tag (code 2.2e7 m, phase, Doppler, C/N0 45 dB-Hz): the
    smallest Dataset :func:`gnss.rinex_out.write_obs` writes."""
    n = len(tags)
    shape = (n, 1, 1)
    return xr.Dataset({"code": (("epoch", "sv", "signal"), np.full(shape, 2.2e7)),
                       "phase": (("epoch", "sv", "signal"), np.full(shape, 1.15e8)),
                       "doppler": (("epoch", "sv", "signal"), np.full(shape, -1234.5)),
                       "cn0": (("epoch", "sv", "signal"), np.full(shape, 45.0)),
                       "lli": (("epoch", "sv", "signal"), np.zeros(shape, dtype=np.int8))},
                      coords={"epoch": np.asarray(tags, dtype="datetime64[ns]"), "sv": ["G01"],
                              "signal": ["G1C"]})


def test_epoch_just_below_a_minute_is_rounded_then_split(tmp_path):
    # A receiver's time tag is GPST plus its clock offset, so it falls anywhere in a second.
    # RINEX writes the seconds F11.7 (0.1 us, RINEX 3.04 Table A3) and allows 0 <= s < 60: a tag
    # 40 ns below a whole minute must be written as the next minute, 0.0000000 s (rounding the
    # whole tag first, carrying into the minute, hour, day, month and year), not as 60.0000000 s
    # (georinex stops reading the file at such an epoch, without an error).
    georinex = pytest.importorskip("georinex", reason="georinex (test extra) is the independent reader")
    from gnss.rinex_out import split_time_tag, write_obs
    tags = np.array(["2020-06-25T00:30:59.999999960", "2020-06-25T00:31:01.000000000",
                     "2020-12-31T23:59:59.999999951", "2021-01-01T00:00:01.234567849",
                     "2021-01-01T00:00:02.000000050"], dtype="datetime64[ns]")
    path = write_obs(_one_sv_observables(tags), tmp_path / "tags.rnx")
    text = path.read_text()
    epochs = [line for line in text.splitlines() if line.startswith(">")]
    # expected lines: the tags rounded to 0.1 us by hand (closed form), then split
    assert [e[:29] for e in epochs] == ["> 2020 06 25 00 31  0.0000000", "> 2020 06 25 00 31  1.0000000",
                                        "> 2021 01 01 00 00  0.0000000", "> 2021 01 01 00 00  1.2345678",
                                        "> 2021 01 01 00 00  2.0000001"]
    first = next(line for line in text.splitlines() if "TIME OF FIRST OBS" in line)
    assert first[:43] == "  2020     6    25     0    31    0.0000000"
    # every epoch is read by the independent reader (georinex keeps whole microseconds)
    g = georinex.load(path)
    want = np.array(["2020-06-25T00:31:00", "2020-06-25T00:31:01", "2021-01-01T00:00:00",
                     "2021-01-01T00:00:01.234567", "2021-01-01T00:00:02"], dtype="datetime64[ns]")
    assert g.sizes["time"] == 5
    assert np.all(np.abs(g["time"].values - want) <= np.timedelta64(1, "us"))
    # property: for random tags, the split fields put back together are the tag rounded to
    # 0.1 us, and the seconds stay below 60
    rng = np.random.default_rng(3)
    ns = np.datetime64("2020-06-25T00:00:00", "ns") + rng.integers(0, 10 ** 14, 2000).astype("timedelta64[ns]")
    for t in ns:
        y, mo, d, h, mi, s, frac = split_time_tag(t)
        assert 0 <= s < 60
        back = np.datetime64(f"{y:04d}-{mo:02d}-{d:02d}T{h:02d}:{mi:02d}", "ns") + \
            np.timedelta64(s * 10 ** 9 + frac * 100, "ns")
        assert abs(int((back - t).astype(np.int64))) <= 50            # half the 100 ns step

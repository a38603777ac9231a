"""``hifi export --format pcap`` for the ``ouster`` model: packets ouster-sdk decodes to the
dataset's points, in every profile the metadata may name.

Independent implementations: ouster-sdk 1.0.1 (test extra) reads the pcap + JSON and supplies
its ``PacketFormat``; the real capture's own frames (written by ouster-sdk's recorder) carry IPv4
and UDP checksums to reproduce; the CRC-64/XZ check value is the published one of the CRC
catalogue. ouster-sdk missing: those tests skip visibly.
"""

from __future__ import annotations

import json
import struct

import numpy as np
import pytest
from scipy.spatial.transform import Rotation

import hifi
from hifi.run.dataset import utc_times
from hifi.exporters import ExportError, export
from hifi.exporters import _pcap_ouster as po
from sensors.ouster import PRESETS


def _sdk():
    return pytest.importorskip("ouster.sdk", reason="ouster-sdk not installed (pip install ouster-sdk)")


_RUNS = {}


def _dataset(preset="os1_128", profile=None, mode="512x20", stride=1, duration_s=0.1):
    """Two frames of an Ouster on a road with a box and a pole (cached per arguments)."""
    key = (preset, profile, mode, stride, duration_s)
    if key not in _RUNS:
        params = {"preset": preset, "lidar_mode": mode, "column_stride": stride}
        if profile:
            params["udp_profile_lidar"] = profile
        d = {"simulation": {"duration_s": duration_s, "seed": 5, "start_utc": "2024-05-01T12:00:00Z"},
             "materials": {"asphalt": {"reflectivity": 0.12, "class": "road"}, "paint": {"reflectivity": 0.6}},
             "objects": [{"name": "road", "mesh": "plane", "size_m": [120, 120], "material": "asphalt"},
                         {"name": "box", "mesh": "box", "size_m": [2, 3, 2], "position_m": [6, 2, 1],
                          "material": "paint"},
                         {"name": "pole", "mesh": "cylinder", "radius_m": 0.2, "height_m": 6,
                          "position_m": [-5, -4, 3], "material": "paint"}],
             "sensors": [{"name": "os", "model": "ouster", "position_m": [1.0, -2.0, 1.8], "rpy_deg": [1.0, -2.0, 35.0],
                          "params": params}]}
        _RUNS[key] = hifi.Simulation.from_dict(d).run(out=None)["os"]
    return _RUNS[key]


def _sensor_points(ds, k):
    """The dataset's reported points of frame k in the sensor frame (static mount), (column, beam, 3)."""
    f = ds.isel(frame=k)
    p = np.stack([f[v].values for v in ("x_noisy", "y_noisy", "z_noisy")], axis=-1)
    q = Rotation.from_quat(f["sensor_orientation"].values)
    return q.inv().apply(p.reshape(-1, 3) - f["sensor_position"].values).reshape(p.shape)


def _read_back(sdk, files):
    src = sdk.open_source(str(files[0]), meta=[str(files[1])])
    frames = [fs[0] for fs in src]
    return src.sensor_info[0], frames


#: Range resolution of each profile's field [m] (Ouster firmware user manual: mm, RNG15: 8 mm).
RESOLUTION_M = {"LEGACY": 0.001, "RNG19_RFL8_SIG16_NIR16": 0.001, "RNG19_RFL8_SIG16_NIR16_DUAL": 0.001,
                "RNG15_RFL8_NIR8": 0.008}


@pytest.mark.parametrize("profile", list(po.PROFILES))
def test_ouster_sdk_decodes_the_dataset(tmp_path, profile):
    sdk = _sdk()
    from ouster.sdk.core import XYZLut
    ds = _dataset(profile=profile)
    files = export(ds, "pcap", tmp_path / "os.pcap")
    assert [p.name for p in files] == ["os.pcap", "os.json"]
    info, frames = _read_back(sdk, files)
    assert len(frames) == ds.sizes["frame"] == 2
    assert str(info.format.udp_profile_lidar) == profile
    lut = XYZLut(info)
    t_ns = np.asarray(utc_times(ds, "timestamp"), dtype="datetime64[ns]").astype(np.int64)
    for k, fr in enumerate(frames):
        f = ds.isel(frame=k)
        det = f["detected"].values                                   # (column, beam)
        rng = fr.field("RANGE").T                                    # ouster-sdk images are (beam, column)
        np.testing.assert_array_equal(rng > 0, det)                  # misses are range 0
        # the point cloud: within the field's half step + 0.05 mm of the stored points; 2 mm for
        # the mm profiles, 4 mm for RNG15's 8 mm steps
        pts = lut(fr).transpose(1, 0, 2)
        tol = RESOLUTION_M[profile] / 2 + 1e-4
        assert tol <= 2e-3 or profile == "RNG15_RFL8_NIR8"
        np.testing.assert_allclose(pts[det], _sensor_points(ds, k)[det], atol=tol)
        # channels: the decoder's integers are the dataset's
        assert fr.frame_id == k
        np.testing.assert_array_equal(fr.field("REFLECTIVITY").T[det], f["intensity"].values[det].astype(int))
        nir = f["near_ir"].values
        if profile == "RNG15_RFL8_NIR8":
            np.testing.assert_array_equal(fr.field("NEAR_IR").T, np.minimum(np.rint(nir / 16), 255) * 16)
        else:
            np.testing.assert_array_equal(fr.field("NEAR_IR").T, nir.astype(int))
            np.testing.assert_array_equal(fr.field("SIGNAL").T[det], f["signal"].values[det].astype(int))
        if profile.endswith("_DUAL"):
            assert not np.any(fr.field("RANGE2"))                    # no second return simulated
        # column timestamps: the dataset's, UTC ns
        np.testing.assert_array_equal(fr.timestamp, t_ns[k, :, 0])
        assert np.all(fr.status & 1)


def test_range_field_includes_the_beam_origin_offset(tmp_path):
    # Ouster's range is from the lidar origin: the field is round(1000 (distance_noisy + n)) mm,
    # which ouster-sdk decodes as RANGE
    sdk = _sdk()
    ds = _dataset(profile="RNG19_RFL8_SIG16_NIR16")
    info, frames = _read_back(sdk, export(ds, "pcap", tmp_path / "os.pcap"))
    f = ds.isel(frame=0)
    det = f["detected"].values
    n = ds.attrs["ouster_range_offset_m"]
    expect = np.rint((f["distance_noisy"].values[det] + n) * 1000)
    np.testing.assert_array_equal(frames[0].field("RANGE").T[det], expect)
    assert n * 1e3 == pytest.approx(info.lidar_origin_to_beam_origin_mm)


@pytest.mark.parametrize("profile", list(po.PROFILES))
@pytest.mark.parametrize("h", [32, 64, 128])
def test_packet_sizes_are_ouster_sdks(profile, h):
    _sdk()
    from ouster.sdk.core import PacketFormat, SensorInfo
    meta = json.loads(PRESETS["os2_128"].read_text())
    meta["data_format"]["udp_profile_lidar"] = profile
    meta["data_format"]["pixels_per_column"] = h
    meta["data_format"]["pixel_shift_by_row"] = meta["data_format"]["pixel_shift_by_row"][:h]
    meta["beam_altitude_angles"] = meta["beam_altitude_angles"][:h]
    meta["beam_azimuth_angles"] = meta["beam_azimuth_angles"][:h]
    pf = PacketFormat(SensorInfo(json.dumps(meta)))
    ours = po.PacketFormat(profile, h, 16)
    assert (ours.lidar_packet_size, ours.col_size, ours.packet_header_size, ours.col_header_size,
            ours.col_footer_size, ours.packet_footer_size) == \
        (pf.lidar_packet_size, pf.col_size, pf.packet_header_size, pf.col_header_size, pf.col_footer_size,
         pf.packet_footer_size)


@pytest.mark.parametrize("profile", ["RNG19_RFL8_SIG16_NIR16", "RNG15_RFL8_NIR8", "LEGACY"])
def test_packets_pass_ouster_sdk_validation(tmp_path, profile):
    # every packet of the right size and ids (no size or id errors), and the non-legacy footers
    # carry the CRC ouster-sdk computes
    _sdk()
    from ouster.sdk.pcap import PcapPacketSource
    ds = _dataset(profile=profile)
    files = export(ds, "pcap", tmp_path / "os.pcap")
    src = PcapPacketSource(str(files[0]), meta=[str(files[1])])
    packets = [p for _, p in src]
    assert len(packets) == 2 * 512 // 16
    assert src.size_error_count == 0 and src.id_error_count == 0
    m = json.loads(files[1].read_text())
    for p in packets[:8]:
        if profile != "LEGACY":
            assert p.crc() == p.calculate_crc()
            assert p.prod_sn() == int(m["prod_sn"]) and p.init_id() == int(m["initialization_id"])
        assert p.packet_type() == (0 if profile == "LEGACY" else 1)           # 1: lidar; legacy has no header


def test_crc64_check_value():
    # CRC-64/XZ (ECMA-182 polynomial, reflected, init and xor-out all ones): published check
    # value over "123456789" (Greg Cook's CRC catalogue, reveng): 0x995DC9BBDF1939FA
    assert int(po.crc64(np.frombuffer(b"123456789", np.uint8)[None, :])[0]) == 0x995DC9BBDF1939FA


def test_ipv4_checksum_worked_example():
    # Wikipedia "IPv4 header checksum" worked example: 4500 0073 0000 4000 4011 [b861] c0a8 0001 c0a8 00c7
    hdr = bytes.fromhex("450000730000400040110000c0a80001c0a800c7")
    assert int(po.ipv4_checksum(np.frombuffer(hdr, np.uint8)[None, :])[0]) == 0xB861


def test_checksums_reproduce_the_real_capture(test_data):
    # The vendored capture was written by ouster-sdk's recorder (127.0.0.1 -> 127.0.0.1, port 7502):
    # our IPv4 and UDP checksums of its first frame are the ones stored in it.
    raw = test_data("lidar/ouster_os1_128.pcap").read_bytes()
    incl = struct.unpack("<I", raw[24 + 8:24 + 12])[0]
    frame = np.frombuffer(raw[24 + 16:24 + 16 + incl], np.uint8)
    ip, udp = frame[14:34].copy(), frame[34:].copy()
    stored_ip, stored_udp = int.from_bytes(ip[10:12], "big"), int.from_bytes(udp[6:8], "big")
    ip[10:12] = 0
    udp[6:8] = 0
    assert int(po.ipv4_checksum(ip[None, :])[0]) == stored_ip
    assert int(po.udp_checksum(bytes(ip[12:16]), bytes(ip[16:20]), udp[None, :])[0]) == stored_udp


def test_pcap_framing(tmp_path):
    # libpcap global header, one record per packet with the capture time of the packet's last
    # column, Ethernet/IPv4/UDP to the metadata's port
    ds = _dataset(profile="RNG19_RFL8_SIG16_NIR16")
    files = export(ds, "pcap", tmp_path / "os.pcap")
    raw = files[0].read_bytes()
    magic, vmaj, vmin, _, _, _, link = struct.unpack("<IHHiIII", raw[:24])
    assert (magic, vmaj, vmin, link) == (0xA1B2C3D4, 2, 4, 1)
    size = po.PacketFormat("RNG19_RFL8_SIG16_NIR16", 128, 16).lidar_packet_size
    rec = 16 + 42 + size
    assert (len(raw) - 24) == rec * 64                                 # 2 frames x 512 / 16 packets
    t_ns = np.asarray(utc_times(ds, "timestamp"), dtype="datetime64[ns]").astype(np.int64)
    for i in (0, 1, 33):
        off = 24 + i * rec
        sec, usec, incl, orig = struct.unpack("<IIII", raw[off:off + 16])
        assert incl == orig == 42 + size
        last = t_ns[i // 32, (i % 32) * 16 + 15, 0]
        assert sec * 1_000_000 + usec == last // 1000
        eth = raw[off + 16:off + 30]
        assert eth[12:14] == b"\x08\x00"
        ip = raw[off + 30:off + 50]
        assert struct.unpack(">H", ip[2:4])[0] == 28 + size and ip[9] == 17
        dport = struct.unpack(">H", raw[off + 52:off + 54])[0]
        assert dport == 7502                                           # the metadata's udp_port_lidar


def test_udp_port_from_metadata(tmp_path):
    sdk = _sdk()
    meta = json.loads(PRESETS["os1_128"].read_text())
    meta["udp_port_lidar"] = 7777
    (tmp_path / "unit.json").write_text(json.dumps(meta))
    d = {"simulation": {"duration_s": 0.05},
         "objects": [{"name": "road", "mesh": "plane", "size_m": [60, 60]}],
         "sensors": [{"name": "os", "model": "ouster", "position_m": [0, 0, 1.5],
                      "params": {"metadata_file": "unit.json", "lidar_mode": "512x20"}}]}
    ds = hifi.Simulation.from_dict(d, base_dir=tmp_path).run(out=None)["os"]
    files = export(ds, "pcap", tmp_path / "os.pcap")
    raw = files[0].read_bytes()
    assert struct.unpack(">H", raw[24 + 16 + 36:24 + 16 + 38])[0] == 7777
    _, frames = _read_back(sdk, files)
    assert len(frames) == 1 and np.count_nonzero(frames[0].field("RANGE")) == int(ds["detected"].sum())


def test_strided_columns_are_sent_invalid(tmp_path):
    sdk = _sdk()
    ds = _dataset(profile="RNG19_RFL8_SIG16_NIR16", stride=4)
    _, frames = _read_back(sdk, export(ds, "pcap", tmp_path / "os.pcap"))
    fr = frames[0]
    valid = (fr.status & 1).astype(bool)
    assert list(np.flatnonzero(valid)[:3]) == [0, 4, 8] and valid.sum() == 128
    assert not np.any(fr.field("RANGE")[:, ~valid])


def test_export_from_the_netcdf_file_and_cli(tmp_path):
    sdk = _sdk()
    from hifi.cli import main
    d = {"simulation": {"duration_s": 0.05, "seed": 2},
         "objects": [{"name": "road", "mesh": "plane", "size_m": [60, 60]}],
         "sensors": [{"name": "os", "model": "ouster", "position_m": [0, 0, 1.5],
                      "params": {"preset": "os0_128", "lidar_mode": "512x20"}}]}
    hifi.Simulation.from_dict(d).run(out=tmp_path / "run")
    assert main(["export", str(tmp_path / "run" / "os.nc"), "--format", "pcap", "--out",
                 str(tmp_path / "os0.pcap")]) == 0
    info, frames = _read_back(sdk, [tmp_path / "os0.pcap", tmp_path / "os0.json"])
    assert info.prod_line == "OS-0-128" and str(info.format.udp_profile_lidar) == "RNG19_RFL8_SIG16_NIR16_DUAL"
    import xarray as xr
    with xr.open_dataset(tmp_path / "run" / "os.nc") as ds:
        det = ds["detected"].values[0]
        np.testing.assert_array_equal(frames[0].field("RANGE").T > 0, det)


def test_other_models_are_refused(tmp_path):
    # a model without a packet format (a spherical-grid scanner): the message names it and the
    # models that have one, ouster among them
    d = {"simulation": {"duration_s": 0.05},
         "objects": [{"name": "road", "mesh": "plane", "size_m": [60, 60]}],
         "sensors": [{"name": "g", "model": "generic_grid", "position_m": [0, 0, 1.5],
                      "params": {"n_theta": 8, "n_phi": 4}}]}
    ds = hifi.Simulation.from_dict(d).run(out=None)["g"]
    with pytest.raises(ExportError, match=r"sensor_model 'generic_grid' has no packet format; supported models: .*ouster"):
        export(ds, "pcap", tmp_path / "g.pcap")
    assert not list(tmp_path.iterdir())                                # nothing half-written
    bad = _dataset().copy()
    bad.attrs = {k: v for k, v in bad.attrs.items() if k != "ouster_metadata"}
    with pytest.raises(ExportError, match="lacks the attributes ouster_metadata"):
        export(bad, "pcap", tmp_path / "o.pcap")

"""GPS time handling: week + seconds of week, rollover, leap seconds."""

import numpy as np

from gnss import gpstime


def test_gps_epoch_is_week_zero():
    t = gpstime.from_datetime64(np.datetime64("1980-01-06T00:00:00"))
    assert int(t.week) == 0 and float(t.sow) == 0.0  # definition of GPST (IS-GPS-200 3.3.4)


def test_known_week():
    # 2005-04-02 is a Saturday of GPS week 1316 (the week written in RTKLIB's 07590920.05n)
    t = gpstime.from_datetime64(np.datetime64("2005-04-02T02:00:00"))
    assert int(t.week) == 1316 and float(t.sow) == 6 * 86400 + 7200


def test_week_rollover_boundaries():
    # 2019-04-07 00:00 GPST is the second 10-bit rollover: week 2048 (analytic: 2 * 1024)
    t = gpstime.from_datetime64(np.array(["2019-04-06T23:59:59.5", "2019-04-07T00:00:00"], dtype="datetime64[ns]"))
    np.testing.assert_array_equal(t.week, [2047, 2048])
    np.testing.assert_allclose(t.sow, [604799.5, 0.0], atol=0)
    # crossing the week by adding time carries into the week
    t2 = gpstime.add_seconds(gpstime.GpsTime(np.int64(2047), 604799.5), 1.0)
    assert int(t2.week) == 2048 and float(t2.sow) == 0.5
    assert gpstime.diff_seconds(t2, gpstime.GpsTime(np.int64(2047), 604799.5)) == 1.0


def test_resolve_10bit_week():
    # broadcast week 0 near the 2019 rollover is week 2048; 1023 before it is 2047 (analytic)
    np.testing.assert_array_equal(gpstime.resolve_week([0, 1023, 292], [2047, 2047, 1316]), [2048, 2047, 1316])
    # already-continuous weeks pass through
    assert int(gpstime.resolve_week(1316, 1316)) == 1316


def test_roundtrip_nanoseconds():
    t = np.array(["2010-07-01T12:34:56.123456789", "1999-08-21T23:59:59.999999999"], dtype="datetime64[ns]")
    back = gpstime.to_datetime64(gpstime.from_datetime64(t))
    np.testing.assert_array_equal(back, t)


def test_leap_seconds():
    # IERS Bulletin C: GPST - UTC = 13 s in 2005, 15 s in 2010, 18 s since 2017-01-01
    got = gpstime.gpst_minus_utc(np.array(["2005-04-02", "2010-07-01", "2016-12-31T23:59:59", "2017-01-01", "1980-01-06"],
                                          dtype="datetime64[ns]"))
    np.testing.assert_array_equal(got, [13, 15, 17, 18, 0])
    utc = np.array(["2017-01-01T00:00:00"], dtype="datetime64[ns]")
    gps = gpstime.utc_to_gpst(utc)
    assert gps[0] == np.datetime64("2017-01-01T00:00:18", "ns")
    np.testing.assert_array_equal(gpstime.gpst_to_utc(gps), utc)

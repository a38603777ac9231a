"""Physical constants, GPS time constants and numerical tolerances of the ``gnss`` package.

Every value carries its source. SI units throughout (metres, seconds, radians).
"""

from __future__ import annotations

import numpy as np

from hifi import constants as _hifi_constants
from hifi.api import timebase as _hifi_timebase

# --- IS-GPS-200 (IS-GPS-200N, 2022), section 20.3.3.4.3, Table 20-IV and 20.3.3.3.3.1 ---
MU_GPS = 3.986005e14
"""WGS 84 value of the Earth's gravitational constant for GPS users [m^3 s^-2] (IS-GPS-200, Table 20-IV)."""

OMEGA_E_DOT = 7.2921151467e-5
"""WGS 84 value of the Earth's rotation rate [rad s^-1] (IS-GPS-200, Table 20-IV)."""

SPEED_OF_LIGHT = _hifi_constants.SPEED_OF_LIGHT_M_S
"""Speed of light in vacuum [m s^-1] (IS-GPS-200, 20.3.3.3.3.1; exact SI value)."""

F_RELATIVITY = -4.442807633e-10
"""Relativistic clock correction constant F = -2 sqrt(mu) / c^2 [s m^-1/2] (IS-GPS-200, 20.3.3.3.3.1)."""

PI_GPS = 3.1415926535898
"""The value of pi that IS-GPS-200 (20.3.3.4.3) prescribes for the orbit computations [1].

Ephemeris angles are broadcast in semicircles; RINEX files already hold radians, so this value
matters only at the semicircle interfaces (Klobuchar).  We use ``numpy.pi`` elsewhere; the
difference (7e-15 relative) is far below every tolerance here.
"""

# --- Galileo OS SIS ICD (issue 2.0, 2021), 5.1.1 Table 57 and 5.1.4 ---
MU_GALILEO = 3.986004418e14
"""Earth's gravitational constant for Galileo users [m^3 s^-2] (Galileo OS SIS ICD, Table 57)."""
OMEGA_E_DOT_GALILEO = 7.2921151467e-5
"""Earth's rotation rate for Galileo users [rad s^-1] (Galileo OS SIS ICD, Table 57)."""
F_RELATIVITY_GALILEO = -4.442807309e-10
"""Relativistic clock constant F = -2 sqrt(mu) / c^2 [s m^-1/2] (Galileo OS SIS ICD, 5.1.4)."""

# --- BeiDou BDS-SIS-ICD-B1I-3.0 (2019), 5.2.4.10-5.2.4.12 (CGCS2000 constants) ---
MU_BEIDOU = 3.986004418e14
"""CGCS2000 Earth's gravitational constant [m^3 s^-2] (BDS ICD B1I 3.0, 5.2.4.12)."""
OMEGA_E_DOT_BEIDOU = 7.2921150e-5
"""CGCS2000 Earth's rotation rate [rad s^-1] (BDS ICD B1I 3.0, 5.2.4.12)."""
F_RELATIVITY_BEIDOU = -4.442807309e-10
"""Relativistic clock constant F = -2 sqrt(mu) / c^2 [s m^-1/2] (BDS ICD B1I 3.0, 5.2.4.10)."""
BEIDOU_GEO_INCLINATION_RAD = np.deg2rad(-5.0)
"""Rotation about x that takes a BeiDou GEO's broadcast orbit frame to CGCS2000 (BDS ICD B1I
3.0, 5.2.4.12, Table 5-11: R_X(-5 deg))."""
BEIDOU_GEO_PRNS = frozenset((1, 2, 3, 4, 5, 59, 60, 61, 62, 63))
"""BeiDou PRNs of geostationary satellites, whose orbits use the GEO equations (BDS-OS-PS-3.0,
Table 3-1; C01-C05 BDS-2, C59-C63 BDS-3 GEOs)."""

# --- WGS 84 ellipsoid (NIMA TR8350.2, 3rd ed., Table 3.1) ---
WGS84_A = 6378137.0
"""WGS 84 semi-major axis [m]."""
WGS84_F = 1.0 / 298.257223563
"""WGS 84 flattening [1]."""

# --- GPS L1 (IS-GPS-200, 3.3.1.1) ---
FREQ_L1 = 1575.42e6
"""GPS L1 carrier frequency [Hz]."""

# --- GPS time ---
SECONDS_PER_WEEK = 604800
"""Seconds in a GPS week [s] (integer)."""
SECONDS_PER_DAY = 86400
"""Seconds in a day [s] (integer)."""
GPS_EPOCH = _hifi_timebase.GPS_EPOCH
"""Origin of GPS time, 1980-01-06 00:00:00 UTC = GPST (IS-GPS-200, 3.3.4)."""
WEEK_ROLLOVER = 1024
"""The legacy navigation message broadcasts the week number modulo 1024 (10 bits, IS-GPS-200 20.3.3.3.1.1)."""

# --- Numerical tolerances (named and documented here, in one place) ---
KEPLER_TOLERANCE_RAD = 1e-13
"""Newton iteration on Kepler's equation stops when the step in E is below this [rad]."""
KEPLER_MAX_ITERATIONS = 30
"""Fixed bound on Newton steps for Kepler's equation (converges in < 6 for e < 0.03)."""
LIGHT_TIME_TOLERANCE_S = 1e-12
"""Transmit-time iteration stops when the signal travel time changes by less than this [s] (0.3 mm)."""
LIGHT_TIME_MAX_ITERATIONS = 10
"""Fixed bound on light-time iterations (3 usually suffice)."""
EPHEMERIS_MAX_AGE_S = 7200.0
"""An ephemeris is used only within this distance of its toe [s] (2 h, the nominal fit interval half-width is 2 h)."""
GLONASS_EPHEMERIS_MAX_AGE_S = 1800.0
"""A GLONASS ephemeris (a state vector every 30 min, ICD 4.4) is used only within this
distance of its tb [s] (RTKLIB's MAXDTOE_GLO): past it the constant lunisolar accelerations
of the message no longer hold."""

MU_GLONASS = 398600.4418e9
"""PZ-90 Earth's gravitational constant [m^3 s^-2] (GLONASS ICD, ed. 5.1, 2008, Table 3.2)."""
A_E_GLONASS = 6378136.0
"""PZ-90 semi-major axis of the Earth [m] (GLONASS ICD, ed. 5.1, Table 3.2)."""
J2_GLONASS = 1082625.75e-9
"""PZ-90 second zonal harmonic J2^0 [1] (GLONASS ICD, ed. 5.1, Table 3.2)."""
OMEGA_E_DOT_GLONASS = 7.292115e-5
"""PZ-90 Earth's rotation rate [rad s^-1] (GLONASS ICD, ed. 5.1, Table 3.2)."""
GLONASS_INTEGRATION_STEP_S = 60.0
"""Largest Runge-Kutta step of the GLONASS state-vector integration [s] (the ICD, A.3.1.2, asks
for a 4th-order Runge-Kutta method; 60 s as in RTKLIB: its truncation error is below 1 mm
over 15 min, see tests/gnss/test_orbit_glonass.py)."""

SOLVER_TOLERANCE_M = 1e-4
"""Least-squares iterations stop when every epoch's state update is below this [m]."""
SOLVER_MAX_ITERATIONS = 12
"""Fixed bound on least-squares iterations."""

MIN_WEIGHT_ELEVATION_RAD = float(np.radians(1.0))
"""Elevations below this are weighted as this [rad] by the solver's elevation weights (only
matters with a mask below 1 deg)."""

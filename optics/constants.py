"""Physical constants and named numerical tolerances of the optics package.

Every constant states its source. SI units throughout.
"""

from __future__ import annotations

from hifi import constants as _hifi_constants

# --- exact SI defining constants (BIPM, The International System of Units, 9th ed., 2019) ---
PLANCK_J_S = 6.62607015e-34          # h [J s], exact
SPEED_OF_LIGHT_M_S = _hifi_constants.SPEED_OF_LIGHT_M_S   # c [m/s], exact (the one value, hifi.constants)
BOLTZMANN_J_K = 1.380649e-23         # k_B [J/K], exact

# --- astronomy ---
# IAU 2012 Resolution B2: astronomical unit, exact.
ASTRONOMICAL_UNIT_M = 149597870700.0
# Mean Earth radius used by the PSA algorithm for the parallax correction
# (Blanco-Muriel et al. 2001, Solar Energy 70(5) 431-441, code listing: 6371.01 km).
EARTH_MEAN_RADIUS_M = 6371.01e3
# Unix epoch 1970-01-01T00:00:00 UTC as a Julian date.
JULIAN_DATE_UNIX_EPOCH = 2440587.5
# J2000.0 epoch (2000-01-01T12:00 TT, used with UT by the PSA algorithm) as a Julian date.
JULIAN_DATE_J2000 = 2451545.0
SECONDS_PER_DAY = 86400.0

# --- sun ---
# Effective photospheric temperature of the Sun [K] (IAU 2015 Resolution B3 nominal value 5772 K).
SUN_EFFECTIVE_TEMPERATURE_K = 5772.0
# Extraterrestrial broadband irradiance used by Meinel & Meinel (1976) [W/m^2]
# (the "1.353 kW/m^2" of their clear-sky direct-beam formula; see optics.sun).
MEINEL_SOLAR_CONSTANT_W_M2 = 1353.0

# --- numerical tolerances (named, documented, used instead of bare literals) ---
# Newton iterations used to invert the cubic distortion mapping r_out = r_in (1 + d r_in^2).
# For |d r^2| < 0.3 (30 % distortion) 8 iterations converge to below 1e-12 relative error.
DISTORTION_NEWTON_ITERATIONS = 8
# Default number of pupil samples for Seidel ray tracing (a Fermat/sunflower spiral). With 4096
# samples the RMS spot radius of each third-order term agrees with its closed form to < 0.5 %.
DEFAULT_PUPIL_SAMPLES = 4096

"""Physical constants and numerical tolerances, each with its source.

Tolerances are named here and nowhere else, so each is documented once; kernels import them.
"""

from __future__ import annotations

#: Speed of light in vacuum [m/s]. SI definition (BIPM, The International System of Units, 9th ed., 2019).
SPEED_OF_LIGHT_M_S = 299_792_458.0

#: Relative offset of secondary rays (mirror bounces, shadow rays) from the surface they leave,
#: as a fraction of the float32 coordinate magnitude of that hit in the Embree frame it was
#: computed in, plus the size of the triangles of the object hit (hifi.caster.secondary_ray_offset_m).
#: float32 has a 24-bit mantissa (ulp = 2**-23 relative); 2**-16 keeps the new origin about
#: 128 ulp clear of the surface whatever the scene scale, so the continuing ray cannot re-hit
#: the surface it left because of rounding.
SECONDARY_RAY_OFFSET_REL = 2.0**-16

#: Floor of the secondary-ray offset [m] for scenes whose coordinates are all tiny.
SECONDARY_RAY_OFFSET_MIN_M = 1e-9

#: Default bound on mirror bounces per ray (a fixed bound keeps the cost of a frame known; 8 by default).
MAX_MIRROR_BOUNCES = 8

#: Default bound on glass panes a ray crosses (hifi.caster.trace_surfaces); a ray that would cross
#: more reports no hit. 8: a building's glazing (double and triple panes) seen through a car's
#: windows with room to spare, and a fixed bound keeps the cost of a frame known.
MAX_PANE_CROSSINGS = 8

#: Mirror fraction at or above which a surface reflects the ray geometrically (perfect mirror).
MIRROR_FOLLOW_THRESHOLD = 1.0

#: Step of the central finite difference used for velocities of composed poses [s].
VELOCITY_FD_STEP_S = 1e-4

#: Geometry tolerance for "degenerate" vectors (zero-length directions) [m or unitless].
DEGENERATE_LENGTH = 1e-12

#: A triangle whose height is at most this fraction of its longest edge counts as zero-area
#: (degenerate, a line or a point): float32, in which Embree works, resolves 2**-23 relative.
DEGENERATE_TRIANGLE_REL = 2.0**-23

#: A ray-casting sensor whose origin lies within this distance of a mesh surface is mounted on
#: that surface (hifi.run.checks.warn_scene warns): its rays leave from the surface, and those that
#: leave into it hit it at distance 0 (1 mm: far below any real sensor housing, centimetres,
#: and far above float32 rounding at a few hundred metres from the scene origin, 2**-23 x 300 m
#: = 36 um) [m].
MOUNT_ON_SURFACE_M = 1e-3

#: A scene file's node transform whose linear part A has ``|A^T A - I|`` at most this (every
#: element) and a positive determinant is a rotation, taken as it is (hifi.world.scene_files);
#: otherwise its scale and shear are split off and baked into the node's vertices. glTF stores
#: float32 (2**-23 ~ 1.2e-7 relative), and trimesh builds the matrices in float64 from
#: normalised quaternions, so a rotation read from a file is orthonormal to ~1e-15; 1e-9 sits
#: far from both.
RIGID_TRANSFORM_TOL = 1e-9

#: Relative luminance of linear RGB, Y = 0.2126 R + 0.7152 G + 0.0722 B: the Y row of the linear
#: RGB -> CIE XYZ matrix of sRGB (IEC 61966-2-1:1999, D65 white; the primaries and coefficients of
#: ITU-R BT.709-6, item 3.2). Used to derive a scene-file material's reflectance from its base
#: colour (hifi.world.scene_files.derived_material).
REC709_LUMINANCE_RGB = (0.2126, 0.7152, 0.0722)

# --- WGS 84 Earth model (NIMA TR8350.2, 3rd ed., amendment 1, 2000) -------------------------------
# Used where the scene's local ENU frame meets the rotating Earth (inertial sensors).

#: WGS 84 semi-major axis a [m] (TR8350.2 Table 3.1).
WGS84_A_M = 6378137.0

#: WGS 84 flattening f [1] (TR8350.2 Table 3.1: 1/f = 298.257223563).
WGS84_F = 1.0 / 298.257223563

#: WGS 84 semi-minor axis b [m] (TR8350.2 Table 3.3).
WGS84_B_M = 6356752.3142

#: WGS 84 first eccentricity squared e^2 [1] (TR8350.2 Table 3.3).
WGS84_E2 = 6.69437999014e-3

#: WGS 84 Earth gravitational constant GM, atmosphere included [m^3 s^-2] (TR8350.2 Table 3.1).
WGS84_GM_M3_S2 = 3.986004418e14

#: WGS 84 nominal mean angular velocity of the Earth omega [rad/s] (TR8350.2 Table 3.1; the
#: GPS ICD's 7.2921151467e-5 differs by 1.5e-14 rad/s, far below any IMU here).
WGS84_OMEGA_RAD_S = 7.292115e-5

#: Normal gravity at the equator gamma_e [m s^-2] (TR8350.2 Table 3.4).
WGS84_GAMMA_EQUATOR_M_S2 = 9.7803253359

#: Normal gravity at the poles gamma_p [m s^-2] (TR8350.2 Table 3.4).
WGS84_GAMMA_POLE_M_S2 = 9.8321849378

#: Somigliana constant k = (b gamma_p) / (a gamma_e) - 1 [1] (TR8350.2 Table 3.4).
WGS84_SOMIGLIANA_K = 0.00193185265241

#: m = omega^2 a^2 b / GM [1] (TR8350.2 Table 3.4), in the free-air height correction.
WGS84_M = 0.00344978650684

#: Standard acceleration of gravity g_n [m s^-2], used only to convert data-sheet values given in
#: g, mg or ug (3rd CGPM, 1901; BIPM, The International System of Units, 9th ed., 2019).
STANDARD_GRAVITY_M_S2 = 9.80665

#: Boltzmann constant [J/K], exact since the 2019 SI redefinition (CODATA 2018): the thermal
#: noise power k T B of a radar receiver (:mod:`sensors.radar`).
BOLTZMANN_J_K = 1.380649e-23
#: Reference noise temperature T0 of a receiver's noise figure [K] (IEEE Std 145 / Friis'
#: definition of the noise factor, 290 K).
NOISE_REFERENCE_TEMPERATURE_K = 290.0

"""Physical constants and numerical tolerances, each with its source.

Tolerances are named here and nowhere else (house style 6); kernels import them.
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

#: Default bound on mirror bounces per ray (issue 2: bounded depth, default 8).
MAX_MIRROR_BOUNCES = 8

#: Mirror fraction at or above which a surface reflects the ray geometrically (perfect mirror).
MIRROR_FOLLOW_THRESHOLD = 1.0

#: Step of the central finite difference used for velocities of composed poses [s].
VELOCITY_FD_STEP_S = 1e-4

#: Geometry tolerance for "degenerate" vectors (zero-length directions) [m or unitless].
DEGENERATE_LENGTH = 1e-12

#: A triangle whose height is at most this fraction of its longest edge counts as zero-area
#: (degenerate, a line or a point): float32, in which Embree works, resolves 2**-23 relative.
DEGENERATE_TRIANGLE_REL = 2.0**-23

"""Automotive FMCW radar: shooting-and-bouncing-ray scattering off the scene's meshes, the radar
equation with thermal noise, a range-Doppler map, CA-CFAR and angle estimation over a virtual
MIMO array, and the detection list (docs/radar.md)."""

from .model import Radar, RadarARS408, RadarAWR1843

__all__ = ["Radar", "RadarARS408", "RadarAWR1843"]

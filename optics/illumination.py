"""Illumination of scene facets by the sun and a clear sky, per camera channel, in photon units.

Plain functions over numpy arrays, testable on their own: no scene, no caster, no time manager.
The caller (e.g. :class:`sensors.ccd.CCDCamera`) finds the facets, casts the shadow rays and
passes the results in as arrays:

* :func:`sunlight` -- the sun's direction and its direct and diffuse photon irradiance, each
  integrated over a channel's spectral response, at one instant and place;
* :func:`sun_facing` -- which facets can receive the direct beam (they face the sun and the
  sun is above the horizon): the facets that need a shadow ray;
* :func:`lambertian_photon_radiance` -- Lambert's cosine law for the direct beam plus the
  isotropic-sky term of a tilted facet;
* :func:`sky_photon_radiance` -- the radiance of the uniform sky seen by rays that hit nothing;
* :func:`scene_photon_radiance` -- both, per ray, from a hit mask.

Radiances are "photon radiances as counted at the reference wavelength" [photons s^-1 m^-2
sr^-1]: the spectral irradiance is weighted by each channel's relative response (filter x
QE(lambda) / QE(lambda_ref), :mod:`optics.spectral`), so electrons = eta x photons with the
scalar EMVA 1288 quantum efficiency eta of :class:`optics.SensorModel`.

References
----------
J. H. Lambert, Photometria, 1760 (the cosine law of a diffuse surface).
B. Y. H. Liu and R. C. Jordan, "The long-term average performance of flat-plate solar-energy
collectors", Solar Energy 7(2), 53-74, 1963 (isotropic sky, view factor (1 + cos tilt) / 2).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from .spectral import channel_photon_irradiance
from .sun import clear_sky_spectral_irradiance, solar_position, sun_direction_enu

__all__ = [
    "SPECTRAL_GRID_M",
    "CLEAR_SKY_MAX_ALTITUDE_M",
    "SunLight",
    "sunlight",
    "sun_facing",
    "lambertian_photon_radiance",
    "sky_photon_radiance",
    "scene_photon_radiance",
]

#: Wavelength grid of the spectral integration [m]: 350 .. 1100 nm in 5 nm steps, the range
#: where silicon responds (optics.spectral's absorption table ends at 1100 nm).
SPECTRAL_GRID_M = np.arange(350, 1101, 5) * 1e-9

#: Highest site altitude of the clear-sky model [m] (Laue's altitude term, as used by
#: :func:`optics.sun.clear_sky_irradiance`, is stated for 0 .. 10 km).
CLEAR_SKY_MAX_ALTITUDE_M = 10_000.0


class SunLight(NamedTuple):
    """The sun and sky as a camera's channels see them at one instant."""

    direction_scene: np.ndarray
    """(3,) unit vector towards the sun, scene frame = ENU [1]."""
    zenith_rad: float
    """Apparent solar zenith angle [rad]."""
    azimuth_rad: float
    """Solar azimuth from north towards east [rad]."""
    direct_normal: np.ndarray
    """(n_channels,) direct-beam photon irradiance on a plane normal to the sun, weighted by
    each channel's relative response [photons s^-1 m^-2]."""
    diffuse_horizontal: np.ndarray
    """(n_channels,) diffuse-sky photon irradiance on a horizontal plane, same weighting
    [photons s^-1 m^-2]."""


def sunlight(time_utc, lat_deg: float, lon_deg: float, height_m: float, response, *,
             wavelength_m=SPECTRAL_GRID_M, diffuse_fraction: float = 0.1) -> SunLight:
    """Solar direction and per-channel clear-sky photon irradiance at one instant.

    Parameters
    ----------
    time_utc : numpy.datetime64 or str
        UTC instant.
    lat_deg, lon_deg : float
        Geodetic latitude and longitude of the site [deg].
    height_m : float
        Height of the site [m]; clipped to 0 .. ``CLEAR_SKY_MAX_ALTITUDE_M`` for the clear-sky
        model.
    response : array_like, shape (n_channels, n_lambda)
        Relative channel responses on ``wavelength_m`` (filter x QE / QE(lambda_ref)) [1].
    wavelength_m : array_like, shape (n_lambda,)
        Wavelength grid [m]. Default :data:`SPECTRAL_GRID_M`.
    diffuse_fraction : float
        Diffuse horizontal irradiance as a fraction of the direct normal irradiance [1].

    Returns
    -------
    SunLight

    Notes
    -----
    Position: PSA algorithm (Blanco-Muriel et al. 2001) with SPA refraction
    (:func:`optics.sun.solar_position`); the apparent zenith sets the air mass and the
    direction; the direction is in east-north-up, which is the scene frame (x east, y north,
    z up). Irradiance: Meinel & Meinel broadband DNI with Laue's altitude term, DHI =
    ``diffuse_fraction`` DNI, spread over wavelength by a Rayleigh-attenuated 5772 K blackbody
    (direct) and its scattered complement (sky) (:func:`optics.sun.clear_sky_spectral_irradiance`).
    Per channel, Phi_c = integral E(lambda) lambda / (h c) R_c(lambda) d lambda
    (:func:`optics.spectral.channel_photon_irradiance`). The low sun's reddening and the blue
    sky are what shift the colours; absorption bands are not modelled. With the sun below the
    horizon both irradiances are 0.
    """
    pos = solar_position(time_utc, lat_deg, lon_deg)
    zen = float(pos.apparent_zenith_rad)
    altitude = float(np.clip(height_m, 0.0, CLEAR_SKY_MAX_ALTITUDE_M))
    spec = clear_sky_spectral_irradiance(wavelength_m, zen, altitude_m=altitude,
                                         diffuse_fraction=diffuse_fraction)
    direct = channel_photon_irradiance(wavelength_m, spec.direct_normal, response)
    sky = channel_photon_irradiance(wavelength_m, spec.diffuse_horizontal, response)
    return SunLight(direction_scene=sun_direction_enu(zen, float(pos.azimuth_rad)),
                    zenith_rad=zen, azimuth_rad=float(pos.azimuth_rad),
                    direct_normal=np.asarray(direct, dtype=float),
                    diffuse_horizontal=np.asarray(sky, dtype=float))


def sun_facing(normal_scene, sun_direction_scene, sun_zenith_rad: float) -> np.ndarray:
    """Facets that can receive the direct beam: they face the sun, and the sun is up.

    Parameters
    ----------
    normal_scene : array_like, shape (n, 3)
        Unit facet normal on the side the camera sees, scene frame [1].
    sun_direction_scene : array_like, shape (3,)
        Unit vector towards the sun, scene frame [1].
    sun_zenith_rad : float
        Apparent solar zenith angle [rad].

    Returns
    -------
    numpy.ndarray of bool, shape (n,)
        n . s > 0 and zenith < pi / 2.

    Notes
    -----
    These are the only facets whose direct term in :func:`lambertian_photon_radiance` can be
    non-zero, hence the only ones that need a shadow ray towards the sun; every other facet is
    unlit by the direct beam whatever lies between it and the sun. A facet exactly edge-on
    (n . s = 0) gets no direct light either way and is not counted.
    """
    n = np.asarray(normal_scene, dtype=float)
    facing = (n @ np.asarray(sun_direction_scene, dtype=float)) > 0.0
    return facing & bool(sun_zenith_rad < np.pi / 2)


def lambertian_photon_radiance(reflectance, normal_scene, sun_direction_scene, direct_normal,
                               diffuse_horizontal, lit):
    """Photon radiance of Lambertian facets under the direct sun and an isotropic sky.

    Parameters
    ----------
    reflectance : array_like, shape (n, n_channels)
        Band reflectance of each facet per channel, 0..1 [1].
    normal_scene : array_like, shape (n, 3)
        Unit facet normal on the side the camera sees, scene frame [1].
    sun_direction_scene : array_like, shape (3,)
        Unit vector towards the sun, scene frame [1].
    direct_normal : array_like, shape (n_channels,)
        Direct-beam photon irradiance on a plane normal to the sun, E_dir,c
        [photons s^-1 m^-2] (:attr:`SunLight.direct_normal`).
    diffuse_horizontal : array_like, shape (n_channels,)
        Diffuse-sky photon irradiance on a horizontal plane, E_sky,c [photons s^-1 m^-2]
        (:attr:`SunLight.diffuse_horizontal`).
    lit : array_like of bool, shape (n,)
        Whether the facet sees the sun: it faces it (:func:`sun_facing`) and the shadow ray
        towards the sun reached the sky.

    Returns
    -------
    numpy.ndarray, shape (n, n_channels)
        L_c [photons s^-1 m^-2 sr^-1] (response-weighted as the irradiances).

    Notes
    -----
    L_c = rho_c / pi (E_dir,c max(n . s, 0) [lit] + E_sky,c (1 + n_z) / 2). The first term is
    Lambert's cosine law for the direct beam (a facet facing away from the sun, n . s <= 0,
    gets none); the second is the isotropic-sky model of Liu & Jordan (1963): a facet tilted by
    beta from horizontal sees the fraction (1 + cos beta) / 2 of a uniform sky whose horizontal
    irradiance is E_sky (n_z = cos beta in a z-up frame). Deviations: the sky is not occluded
    by scene objects (no ambient occlusion), ground-reflected light and inter-reflections are
    not modelled, and the reflectance is taken as each channel's band-average reflectance (no
    spectral reflectance curves). Domain: any unit normal; rho in 0..1 keeps the facet
    energy-conserving.
    """
    rho = np.asarray(reflectance, dtype=float)
    n = np.asarray(normal_scene, dtype=float)
    cos_i = np.maximum(n @ np.asarray(sun_direction_scene, dtype=float), 0.0) * np.asarray(
        lit, dtype=float)
    view = 0.5 * (1.0 + n[:, 2])
    irr = (cos_i[:, None] * np.asarray(direct_normal, dtype=float)
           + view[:, None] * np.asarray(diffuse_horizontal, dtype=float))
    return rho * irr / np.pi


def sky_photon_radiance(diffuse_horizontal) -> np.ndarray:
    """Radiance of a uniform (isotropic) clear sky.

    Parameters
    ----------
    diffuse_horizontal : array_like, shape (n_channels,)
        Diffuse-sky photon irradiance on a horizontal plane, E_sky,c [photons s^-1 m^-2].

    Returns
    -------
    numpy.ndarray, shape (n_channels,)
        L_c = E_sky,c / pi [photons s^-1 m^-2 sr^-1].

    Notes
    -----
    A uniform sky of radiance L over the upper hemisphere gives a horizontal plane the
    irradiance integral L cos(theta) d omega = pi L; this inverts it. Deviation: the real
    clear sky is brighter near the sun and the horizon; every direction (also below the
    horizon, for a ray that leaves the scene downwards) gets the same radiance.
    """
    return np.asarray(diffuse_horizontal, dtype=float) / np.pi


def koschmieder_airlight(radiance, distance_m, extinction_per_m, horizon_radiance) -> np.ndarray:
    """Radiance seen through a scattering atmosphere: the object's attenuated plus the airlight.

    Parameters
    ----------
    radiance : array_like, shape (n, n_channels)
        Radiance L0 leaving the object toward the camera.
    distance_m : array_like, shape (n,)
        Path length to the object [m]; NaN or inf for a ray that meets no object.
    extinction_per_m : array_like, shape (n_channels,) or scalar
        Extinction coefficient alpha of the atmosphere [1/m].
    horizon_radiance : array_like, shape (n_channels,)
        Radiance of the horizon sky L_sky (the airlight of an infinitely long path).

    Returns
    -------
    numpy.ndarray, shape (n, n_channels)
        ``L = L0 exp(-alpha d) + L_sky (1 - exp(-alpha d))``; a ray without an object gets
        ``L_sky``.

    Notes
    -----
    Koschmieder (1924): a uniformly lit, homogeneous atmosphere adds the light it scatters into
    the line of sight and removes the object's light by the same transmission, so every object
    fades toward the horizon sky; the contrast of a dark object falls as ``exp(-alpha d)``.
    Deviations: the sun's own beam is not attenuated on its way down, and rain and snow enter
    only through their extinction (a loss of contrast; the streaks of falling drops are not
    drawn).
    """
    L0 = np.asarray(radiance, dtype=float)
    d = np.asarray(distance_m, dtype=float)
    t = np.exp(-np.asarray(extinction_per_m, dtype=float) * np.where(np.isfinite(d), d, np.inf)[:, None])
    return L0 * t + np.asarray(horizon_radiance, dtype=float) * (1.0 - t)


def scene_photon_radiance(hit, reflectance, normal_scene, lit, sun_direction_scene,
                          direct_normal, diffuse_horizontal) -> np.ndarray:
    """Photon radiance along each ray: a Lambertian facet where it hits, the sky where it does not.

    Parameters
    ----------
    hit : array_like of bool, shape (n,)
        Whether the ray ended on a surface.
    reflectance : array_like, shape (n, n_channels)
        Band reflectance of the surface hit [1]; ignored (may be NaN) where ``hit`` is False.
    normal_scene : array_like, shape (n, 3)
        Unit normal of the surface hit, on the side the ray arrives from, scene frame [1];
        ignored where ``hit`` is False.
    lit : array_like of bool, shape (n,)
        Whether the surface hit sees the sun (see :func:`lambertian_photon_radiance`).
    sun_direction_scene, direct_normal, diffuse_horizontal
        As in :func:`lambertian_photon_radiance`.

    Returns
    -------
    numpy.ndarray, shape (n, n_channels)
        L_c [photons s^-1 m^-2 sr^-1]: :func:`lambertian_photon_radiance` on the hits,
        :func:`sky_photon_radiance` on the misses.
    """
    hit = np.asarray(hit, dtype=bool)
    sky = sky_photon_radiance(diffuse_horizontal)
    out = np.empty((hit.shape[0], sky.shape[-1]))
    out[~hit] = sky
    out[hit] = lambertian_photon_radiance(
        np.asarray(reflectance, dtype=float)[hit], np.asarray(normal_scene, dtype=float)[hit],
        sun_direction_scene, direct_normal, diffuse_horizontal, np.asarray(lit, dtype=bool)[hit])
    return out

"""What a pulsed lidar receives from the surfaces that are not walls: the specular echo of a
glass pane or a water surface (:func:`glint_reflectivity`, :func:`front_reflectivity`), the
retroreflected return of retroreflective sheeting (:func:`retroreflector_reflectivity`), and
the halo that a very strong return leaves in the neighbouring pulses
(:func:`halo_response`, :func:`halo_echoes`).

Each return is expressed as an *apparent reflectivity*: the reflectance a white-normalised
Lambertian target at normal incidence at the same range would need to return the same power
(``rho cos(i)`` for a diffuse surface), the quantity :func:`sensors.lidar.lidar_signal_chain`
takes. A retroreflector or a pane seen head-on is far above 1: that is what saturates the
intensity code. The Fresnel optics of the surfaces themselves are in
:mod:`hifi.world.surfaces` (the caster uses them for what goes on through a pane or along a
water reflection); docs/surfaces.md describes the models with their sources.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hifi.world.surfaces import GLASS, WATER, fresnel_reflectance, pane_optics

from .radiometry import oren_nayar_backscatter

#: ASTM D4956's two entrance angles of the coefficient of retroreflection R_A [deg] (at 0.2 deg
#: observation): -4 deg (the reference) and +30 deg.
RETRO_ENTRANCE_DEG = (4.0, 30.0)

#: R_A(+30 deg) / R_A(-4 deg) of ASTM D4956 Type I white sheeting, 30 / 70: the entrance-angle
#: fall-off of a retroreflector that gives only its -4 deg value.
RETRO_30DEG_RATIO = 30.0 / 70.0

#: Crosstalk of a strong return into the neighbouring receiver channel [dB of power]: LeddarTech,
#: Leddar Pixell user guide 54A0049 rev. 7.0 (2021), sec. 2.2: "about 40 dB below the aggressor
#: amplitude for the pixels just next to the aggressor, decreasing gradually to reach about 60 dB
#: from 4 pixels" (the echo amplitude, counts, is proportional to the received optical power, so
#: the dB are taken as power ratios, 10 log10).
HALO_LEVEL_DB = -40.0
#: Slope of the halo's power-law fall-off with angle [1]: 20 dB over a factor 4 in distance
#: (the same user guide), 2 / log10(4) = 3.32.
HALO_SLOPE = float(2.0 / np.log10(4.0))
#: Angle at which :data:`HALO_LEVEL_DB` applies [rad]: the Pixell's segment pitch, about 2 deg
#: (8 vertical segments over its 16 deg vertical field of view).
HALO_PITCH_RAD = float(np.radians(2.0))
#: Returns brighter than a white Lambertian target at normal incidence (apparent reflectivity
#: above 1: retroreflectors, panes seen head-on) are the halo's sources; the same stray light
#: around a diffuse surface is 40 dB below a return that is itself within the data sheets'
#: detection points, and is left out.
HALO_SOURCE_MIN_REFLECTIVITY = 1.0
#: Largest halo radius searched [rad] (a bound on the cost; 30 deg is beyond what the default
#: response reaches above the noise from any source closer than 1 m).
HALO_MAX_ANGLE_RAD = float(np.radians(30.0))


def specular_return_fraction(cos_incidence, range_m, *, divergence_rad, aperture_radius_m, receiver_radius_m):
    """Share of a pulse's power that a smooth surface's mirror reflection sends back into a
    monostatic receiver, 0..1.

    Parameters
    ----------
    cos_incidence : array_like
        Cosine of the beam's angle of incidence on the surface.
    range_m : array_like
        Range of the surface [m].
    divergence_rad : float
        Full beam divergence at the 1/e^2 points [rad].
    aperture_radius_m : float
        Beam radius at the exit aperture [m].
    receiver_radius_m : float
        Radius of the receiver aperture [m] (half the lidar's ``receiver_aperture_m``).

    Returns
    -------
    ndarray
        ``(1 - exp(-2 a^2 / w^2)) exp(-2 s^2 / w^2)`` with ``a`` the receiver radius,
        ``w = r_0 + 2 R tan(theta / 2)`` the 1/e^2 radius of the reflected beam back at the
        sensor (the beam has run 2R; the sub-ray footprint law of :mod:`sensors.beam`) and
        ``s = R sin(2 i)`` the distance from the sensor at which the reflected beam's axis
        passes.

    Notes
    -----
    The surface is a plane mirror for the Gaussian beam: the sensor sees the beam's own image,
    which returns along the incoming line only at normal incidence. Tilted by i, the
    reflected axis turns by 2i and passes the sensor at ``s = R sin 2i``; the receiver collects
    the Gaussian's power over its aperture, exact at ``s = 0`` and to first order in
    ``a / w`` elsewhere. The echo exists while ``s < w``, i.e. within about half the beam
    divergence (plus ``r_0 / 2R``) of the normal: the small direct return that lidars
    report from windows seen head-on (Zhao, Yang & Schwertfeger 2020: an intensity peak where
    the beam meets the pane perpendicularly; Garmin LIDAR-Lite v3 operation manual: specular
    surfaces are seen only from the normal). The receiver is taken coaxial with the beam; a
    biaxial one offset by ``b`` sees the peak shifted by ``b / 2R`` in incidence angle.

    References
    ----------
    - X. Zhao, Z. Yang, S. Schwertfeger, "Mapping with reflection - detection and utilization
      of reflection in 3D lidar scans", IEEE SSRR 2020 (arXiv:1909.12483).
    """
    c = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
    r = np.asarray(range_m, dtype=float)
    s = r * 2.0 * c * np.sqrt(1.0 - c * c)                       # R sin(2i)
    w = aperture_radius_m + 2.0 * r * np.tan(divergence_rad / 2.0)
    return -np.expm1(-2.0 * receiver_radius_m ** 2 / w ** 2) * np.exp(-2.0 * s * s / (w * w))


def glint_reflectivity(specular_reflectance, cos_incidence, range_m, *, divergence_rad, aperture_radius_m,
                       receiver_aperture_m):
    """Apparent reflectivity of a smooth surface's specular echo (a pane or water seen head-on).

    Parameters
    ----------
    specular_reflectance : array_like
        Reflectance of the surface at that incidence, 0..1 (a pane's
        :func:`hifi.world.surfaces.pane_optics` reflectance, water's Fresnel reflectance).
    cos_incidence, range_m : array_like
        As :func:`specular_return_fraction`.
    divergence_rad, aperture_radius_m : float
        The lidar's beam (:func:`specular_return_fraction`).
    receiver_aperture_m : float
        Receiver lens diameter [m].

    Returns
    -------
    ndarray
        ``R_s F pi R^2 / A_r``, ``F`` the :func:`specular_return_fraction` and ``A_r`` the
        receiver area: the lidar equation ``P_t eta rho A_r / (pi R^2)`` then gives the power
        ``P_t eta R_s F``. A clear pane at 10 m in front of an HDL-64E (2 mrad, 5 cm receiver)
        at normal incidence: 0.080 x 0.865 x pi 100 / 1.96e-3 = 1.1e4, far above any diffuse
        surface (a white one is 1).
    """
    a_r = np.pi * receiver_aperture_m ** 2 / 4.0
    f = specular_return_fraction(cos_incidence, range_m, divergence_rad=divergence_rad,
                                 aperture_radius_m=aperture_radius_m, receiver_radius_m=receiver_aperture_m / 2.0)
    r = np.asarray(range_m, dtype=float)
    return np.asarray(specular_reflectance, dtype=float) * f * np.pi * r * r / a_r


def water_volume_reflectivity(reflectivity, cos_incidence, refractive_index):
    """Apparent reflectivity of the light a water body scatters back out of its volume.

    Parameters
    ----------
    reflectivity : array_like
        The water's diffuse reflectance seen from above at normal incidence (the material's
        ``reflectivity``; pure water at 905 nm: 5e-6, 0 in the library).
    cos_incidence : array_like
        Cosine of the angle of incidence on the surface.
    refractive_index : array_like
        The water's refractive index.

    Returns
    -------
    ndarray
        ``rho ((1 - R_F(i)) / (1 - R_F(0)))^2``: the light crosses the surface twice, each time
        losing the Fresnel reflectance R_F (:func:`hifi.world.surfaces.fresnel_reflectance`),
        normalised so that ``rho`` is the value at normal incidence. No ``cos(i)``: inside the
        water the beam is a column whose backscatter does not depend on how the surface is
        tilted. It falls to 0 at grazing incidence (R_F -> 1).

    Notes
    -----
    The volume's backscatter is ``pi beta(180) / (2 a)`` for a water of volume scattering
    function ``beta`` and absorption ``a``: at 905 nm, a = 6.8 /m (Hale & Querry 1973) and
    pure water's ``beta(180) = 2.1e-5 /m/sr`` (Morel 1974) give 5e-6, far below any detection
    threshold; turbid water (suspended sediment, foam) scatters orders of magnitude more, which
    its ``reflectivity`` says.
    """
    n = np.asarray(refractive_index, dtype=float)
    t = (1.0 - fresnel_reflectance(cos_incidence, n)) / (1.0 - fresnel_reflectance(1.0, n))
    return np.asarray(reflectivity, dtype=float) * t * t


def retroreflector_reflectivity(r_a_cd_lx_m2, cos_incidence, r_a_30deg_cd_lx_m2=None):
    """Apparent reflectivity of retroreflective sheeting, from its coefficient of
    retroreflection R_A.

    Parameters
    ----------
    r_a_cd_lx_m2 : array_like
        R_A [cd lx^-1 m^-2] at 0.2 deg observation, -4 deg entrance (ASTM D4956).
    cos_incidence : array_like
        Cosine of the entrance angle (the beam's incidence on the sheeting).
    r_a_30deg_cd_lx_m2 : array_like, optional
        R_A at 0.2 deg observation, +30 deg entrance; None or NaN: :data:`RETRO_30DEG_RATIO`
        times ``r_a_cd_lx_m2``.

    Returns
    -------
    ndarray
        ``pi R_A(i) / cos(i)``, with ``R_A(i) = R_A (cos i / cos 4 deg)^k`` and ``k`` such that
        it gives the +30 deg value, ``k = ln(R_A30 / R_A) / ln(cos 30 / cos 4)`` (5.99 for
        Type I white, 70 and 30); 0 where ``cos(i) <= 0``. Type I white at normal incidence:
        ``pi 70 x 1.0015 = 220``.

    Notes
    -----
    R_A is the luminous intensity I a sample returns toward the source per illuminance
    ``E_perp`` (on a plane perpendicular to the incident light) per area A of the sample,
    ``R_A = I / (E_perp A)`` (ASTM E808); cd/(lx m^2) is sr^-1, so with the retroreflection
    taken as grey (glass beads and metallised prisms are not pigments; the value at 905 nm is
    assumed equal to the photopic one) it is a radiometric ratio. A beam of cross-section
    ``A_b`` and power ``P`` lights ``A_b / cos(i)`` of the sheeting with ``E_perp = P / A_b``,
    which returns ``I = R_A(i) P / cos(i)`` toward the sensor; a Lambertian surface returns
    ``I = rho cos(i) P / pi``. Equal returns: ``rho cos(i) = pi R_A(i) / cos(i)``, the value
    returned (equivalently a bidirectional reflectance toward the source
    ``f_r = R_A / cos^2(i)`` [sr^-1], against a Lambertian's ``rho / pi``). A Lambertian white
    has ``R_A = 1 / pi = 0.32`` at normal incidence, 220 times less than Type I white sheeting.
    The cos-power fall-off through ASTM D4956's two tabulated entrance angles is a fit, exact
    at 4 and 30 deg. The observation angle of a coaxial lidar is 0, below the standard's
    0.2 deg, where sheeting returns somewhat more: the 0.2 deg value is a lower bound.

    References
    ----------
    - ASTM D4956, Standard Specification for Retroreflective Sheeting for Traffic Control
      (Type I white: R_A >= 70 at 0.2 / -4 deg, 30 at 0.2 / +30 deg).
    - ASTM E808, Standard Practice for Describing Retroreflection.
    """
    r_a = np.asarray(r_a_cd_lx_m2, dtype=float)
    r30 = RETRO_30DEG_RATIO * r_a if r_a_30deg_cd_lx_m2 is None else np.asarray(r_a_30deg_cd_lx_m2, dtype=float)
    r30 = np.where(np.isnan(r30), RETRO_30DEG_RATIO * r_a, r30)
    c4, c30 = np.cos(np.radians(RETRO_ENTRANCE_DEG))
    with np.errstate(divide="ignore", invalid="ignore"):
        k = np.log(r30 / r_a) / np.log(c30 / c4)
        c = np.clip(np.asarray(cos_incidence, dtype=float), 0.0, 1.0)
        out = np.pi * r_a * (c / c4) ** k / c
    return np.where(c > 0.0, out, 0.0)


def front_reflectivity(kind, cos_incidence, range_m, *, refractive_index, transmittance, reflectivity, mirror,
                       roughness_rad, divergence_rad, aperture_radius_m, receiver_aperture_m):
    """Apparent reflectivity of the echo of the glass or water surface in front of a pulse's
    target (the caster's ``front``, :class:`hifi.caster.SurfaceHits`).

    Parameters
    ----------
    kind : (n,) int
        :data:`hifi.world.surfaces.GLASS` or :data:`~hifi.world.surfaces.WATER` per pulse (any
        other: NaN).
    cos_incidence, range_m : (n,) array_like
        Incidence on the surface and its range (path length) [m].
    refractive_index, transmittance, reflectivity, mirror, roughness_rad : (n,) array_like
        The surface's material: refractive index, a pane's internal transmittance, diffuse
        reflectance, mirror fraction, Oren-Nayar roughness [rad].
    divergence_rad, aperture_radius_m, receiver_aperture_m : float
        The lidar's beam and receiver (:func:`glint_reflectivity`).

    Returns
    -------
    (n,) float64
        Glass: the pane's specular echo (:func:`glint_reflectivity` of
        :func:`hifi.world.surfaces.pane_optics`' reflectance) plus its diffuse part,
        ``(1 - mirror) rho f(i)`` (dirt on the pane; 0 for clean glass). Water: the surface's
        specular echo (Fresnel reflectance) plus the light scattered back out of the volume
        (:func:`water_volume_reflectivity`). NaN where there is no surface.
    """
    kind = np.asarray(kind)
    c = np.asarray(cos_incidence, dtype=float)
    out = np.full(kind.shape, np.nan)
    beam = dict(divergence_rad=divergence_rad, aperture_radius_m=aperture_radius_m,
                receiver_aperture_m=receiver_aperture_m)
    glass = kind == GLASS
    if np.any(glass):
        spec = pane_optics(c[glass], np.asarray(refractive_index)[glass], np.asarray(transmittance)[glass]).reflectance
        diffuse = ((1.0 - np.asarray(mirror)[glass]) * np.asarray(reflectivity)[glass]
                   * oren_nayar_backscatter(c[glass], np.asarray(roughness_rad)[glass]))
        out[glass] = glint_reflectivity(spec, c[glass], np.asarray(range_m)[glass], **beam) + diffuse
    water = kind == WATER
    if np.any(water):
        n = np.asarray(refractive_index)[water]
        out[water] = (glint_reflectivity(fresnel_reflectance(c[water], n), c[water], np.asarray(range_m)[water], **beam)
                      + water_volume_reflectivity(np.asarray(reflectivity)[water], c[water], n))
    return out


def halo_response(angle_rad, *, level_db=HALO_LEVEL_DB, pitch_rad=HALO_PITCH_RAD, slope=HALO_SLOPE):
    """Share of a strong return's power that a pulse pointing ``angle_rad`` away from it
    receives as stray light, 0..1.

    Parameters
    ----------
    angle_rad : array_like
        Angle between the pulse's axis and the direction of the strong return [rad], > 0.
    level_db : float, keyword-only
        Response at ``pitch_rad`` [dB of power] (:data:`HALO_LEVEL_DB`).
    pitch_rad : float, keyword-only
        Angle at which the response is ``level_db`` [rad] (:data:`HALO_PITCH_RAD`).
    slope : float, keyword-only
        Power-law slope of the fall-off (:data:`HALO_SLOPE`).

    Returns
    -------
    ndarray
        ``min(1, 10^(level_db / 10) (angle / pitch)^-slope)``.

    Notes
    -----
    The combined point spread of the transmitter's beam wings and the receiver's stray light
    (lens flare, scattering inside the housing, electronic crosstalk between channels) as one
    power law through the two crosstalk levels of the Leddar Pixell user guide: -40 dB at the
    next segment, -60 dB four segments away. Below one pitch it is the same power law,
    extrapolated (the guide gives no finer sample), capped at 1. With the defaults, a Type I
    white sign (apparent reflectivity 220) lifts a pulse 2 deg away to 220 x 1e-4 = 0.022,
    a 2 % target at the sign's range, and one 0.5 deg away to 0.022 x 4^3.32 = 2.2.
    """
    a = np.asarray(angle_rad, dtype=float)
    with np.errstate(divide="ignore"):
        g = 10.0 ** (level_db / 10.0) * (a / pitch_rad) ** (-slope)
    return np.minimum(g, 1.0)


def halo_radius_rad(ratio, *, level_db=HALO_LEVEL_DB, pitch_rad=HALO_PITCH_RAD, slope=HALO_SLOPE):
    """Angle within which :func:`halo_response` stays at or above ``ratio`` [rad]:
    ``pitch (10^(level_db / 10) / ratio)^(1 / slope)``, the inverse of the power law."""
    r = np.asarray(ratio, dtype=float)
    with np.errstate(divide="ignore"):
        return pitch_rad * (10.0 ** (level_db / 10.0) / r) ** (1.0 / slope)


class HaloEchoes(NamedTuple):
    """Per pulse, the strongest stray-light echo from a strong return nearby
    (:func:`halo_echoes`)."""

    range_m: np.ndarray   #: range of the source's return [m], NaN where none
    power_w: np.ndarray   #: its power in this pulse [W], 0 where none
    source: np.ndarray    #: index of the source pulse, -1 where none


def halo_echoes(directions, range_m, power_w, source, *, min_power_w, level_db=HALO_LEVEL_DB,
                pitch_rad=HALO_PITCH_RAD, slope=HALO_SLOPE, core_rad=0.0,
                max_angle_rad=HALO_MAX_ANGLE_RAD) -> HaloEchoes | None:
    """The stray light of the strongest returns of a frame in the pulses around them.

    Parameters
    ----------
    directions : (n, 3) float
        Unit direction of every pulse's axis (scene frame).
    range_m, power_w : (n,) float
        Range [m] and received power [W] of every pulse's strongest return.
    source : (n,) bool
        The pulses whose return makes a halo (apparent reflectivity above
        :data:`HALO_SOURCE_MIN_REFLECTIVITY`); they get no halo themselves (it is 40 dB or more
        below their own return).
    min_power_w : float
        Weakest halo echo worth keeping [W] (one that cannot be detected).
    level_db, pitch_rad, slope : float
        :func:`halo_response`'s parameters.
    core_rad : float
        Angles up to this [rad] (half the pulse's beam divergence: the pulse's own beam) give no
        halo: a source that close is in the pulse's beam itself.
    max_angle_rad : float
        Largest angle searched [rad].

    Returns
    -------
    HaloEchoes or None
        For every pulse that is not a source, the source q that gives it the most power
        ``P_q g(angle)`` (:func:`halo_response`), if that is at least ``min_power_w``: that
        power and the source's range (the halo echo lies at the source's range on the pulse's
        own ray). None without sources.

    Notes
    -----
    The strongest single source, not the sum over all of them: the response is per source
    return, and summing the samples of an extended retroreflector would count its light once
    per pulse that samples it (a finer scan would give a brighter halo). The search is exact:
    a k-d tree over the sources' unit directions (``scipy.spatial.cKDTree``) gives every pulse
    its 16 nearest sources within the brightest source's reach (:func:`halo_radius_rad`);
    where a source farther than those could still give more (the brightest source's power at
    the 16th one's angle exceeds the best found), all sources within reach are searched.
    """
    src = np.flatnonzero(np.asarray(source, dtype=bool) & np.isfinite(range_m) & (np.asarray(power_w) > 0.0))
    if src.size == 0:
        return None
    from scipy.spatial import cKDTree

    d = np.asarray(directions, dtype=float)
    n = d.shape[0]
    p_src = np.asarray(power_w, dtype=float)[src]
    p_max = float(p_src.max())
    reach = float(min(halo_radius_rad(min_power_w / p_max, level_db=level_db, pitch_rad=pitch_rad, slope=slope),
                      max_angle_rad))
    r_out = np.full(n, np.nan)
    p_out = np.zeros(n)
    s_out = np.full(n, -1, dtype=np.int64)
    if reach <= core_rad:
        return HaloEchoes(r_out, p_out, s_out)
    response = dict(level_db=level_db, pitch_rad=pitch_rad, slope=slope)
    tree = cKDTree(d[src])
    chord = 2.0 * np.sin(reach / 2.0)
    victims = np.flatnonzero(~np.isin(np.arange(n), src))
    k = min(16, src.size)
    dist, idx = tree.query(d[victims], k=k, distance_upper_bound=chord)
    dist, idx = dist.reshape(victims.size, k), idx.reshape(victims.size, k)
    found = idx < src.size
    angle = np.where(found, 2.0 * np.arcsin(np.minimum(np.where(found, dist, 0.0) / 2.0, 1.0)), np.inf)
    power = np.where(found & (angle > core_rad), p_src[np.minimum(idx, src.size - 1)] * halo_response(angle, **response),
                     0.0)
    col = np.argmax(power, axis=1)
    rows = np.arange(victims.size)
    best, best_q = power[rows, col], idx[rows, col]
    if k < src.size:
        # a source beyond the k-th nearest is at least that far: it can give more only if the
        # brightest source would at that angle
        bound = np.where(found[:, -1], p_max * halo_response(angle[:, -1], **response), 0.0)
        unsure = np.flatnonzero((bound > best) & (bound >= min_power_w))
        if unsure.size:
            lists = tree.query_ball_point(d[victims[unsure]], chord, return_sorted=False)
            for j, hits in zip(unsure, lists):
                q = np.asarray(hits, dtype=np.int64)
                a = 2.0 * np.arcsin(np.minimum(np.linalg.norm(d[src[q]] - d[victims[j]], axis=1) / 2.0, 1.0))
                pw = np.where(a > core_rad, p_src[q] * halo_response(a, **response), 0.0)
                m = int(np.argmax(pw))
                best[j], best_q[j] = pw[m], q[m]
    keep = best >= min_power_w
    v, q = victims[keep], best_q[keep]
    r_out[v] = np.asarray(range_m, dtype=float)[src[q]]
    p_out[v] = best[keep]
    s_out[v] = src[q]
    return HaloEchoes(r_out, p_out, s_out)

"""RTKLIB 2.4.3's single-point error model and group-delay rules, for :func:`gnss.solver.solve`'s
RTKLIB-like options (``weighting="rtklib"``), so that a user can reproduce RTKLIB's ``pntpos``
(``validation/gnss_rtklib.py`` runs both). The constants and rules are RTKLIB's, each with the
source file it is read from.
"""

from __future__ import annotations

import numpy as np

from .constants import MIN_WEIGHT_ELEVATION_RAD

RTKLIB_CODE_ERROR_M = (0.3, 0.3)
"""(a, b) of RTKLIB's code error model sigma^2 = a^2 + b^2 / sin(el) [m]: its defaults
``err[1]`` = ``err[2]`` = 0.003 m times the code/phase error ratio ``err[0]`` = 100 (RTKLIB
2.4.3 ``prcopt_default`` and ``varerr`` in src/pntpos.c)."""

#: RTKLIB 2.4.3's user range accuracy values of the URA indices 0..14 [m] (``ura_value`` of
#: ``var_uraeph`` in src/ephemeris.c, IS-GPS-200 20.3.3.3.1.1): a GPS or BeiDou record's URA (m,
#: as RINEX writes it) is raised to the first value at or above it (``uraindex``, src/rinex.c).
RTKLIB_URA_M = (2.4, 3.4, 4.85, 6.85, 9.65, 13.65, 24.0, 48.0, 96.0, 192.0, 384.0, 768.0, 1536.0, 3072.0, 6144.0)
#: RTKLIB 2.4.3 ``pntpos`` constants (src/pntpos.c, src/ephemeris.c): code bias sigma
#: ``ERR_CBIAS`` [m], broadcast ionosphere sigma as a fraction of its delay ``ERR_BRDCI`` [1],
#: Saastamoinen sigma ``ERR_SAAS`` [m], GLONASS ephemeris sigma ``ERREPH_GLO`` [m], Galileo
#: "no accuracy prediction available" sigma ``STD_GAL_NAPA`` [m], and the error factors of GLONASS
#: ``EFACT_GLO`` (1.5; other systems 1) [1].
RTKLIB_CBIAS_SIGMA_M = 0.3
RTKLIB_IONO_FRACTION = 0.5
RTKLIB_SAAS_SIGMA_M = 0.3
RTKLIB_GLONASS_EPHEMERIS_SIGMA_M = 5.0
RTKLIB_GALILEO_NAPA_SIGMA_M = 500.0
RTKLIB_GLONASS_ERROR_FACTOR = 1.5


def rtklib_ephemeris_sigma_m(ura_m, system):
    """Ephemeris sigma RTKLIB 2.4.3 assigns a broadcast record [m].

    Parameters
    ----------
    ura_m : array_like
        The record's accuracy as RINEX writes it (``sv_accuracy`` of :func:`gnss.read_nav`): GPS
        and BeiDou URA, Galileo SISA [m]. Ignored for GLONASS.
    system : array_like of str
        System letter of each record ("G", "E", "C", "R"), broadcast with ``ura_m``.

    Returns
    -------
    numpy.ndarray
        sigma [m]: GPS, BeiDou: the URA raised to the next :data:`RTKLIB_URA_M` value (6144 m
        above the table or for a negative/NaN URA); Galileo: the SISA floored to its index
        steps (0.01 m to 0.5 m, 0.02 m to 1 m, 0.04 m to 2 m; from 2 to 6 m as RTKLIB
        computes it, Notes; above 6 m, negative or NaN: :data:`RTKLIB_GALILEO_NAPA_SIGMA_M`);
        GLONASS: :data:`RTKLIB_GLONASS_EPHEMERIS_SIGMA_M`.

    Notes
    -----
    RTKLIB reads the RINEX value into an index (``uraindex`` and ``sisa_index``, src/rinex.c)
    and turns it back into a variance (``var_uraeph``, src/ephemeris.c; Galileo OS SIS ICD
    5.1.12); the round trip quantises it as above. Between 2 and 6 m RTKLIB's ``sisa_index``
    computes ``((int)(value - 2.0) / 0.16) + 100``, truncating the metres before the division,
    so a SISA of 3.12 m (the usual value) gives index 106 and 2.96 m, not 3.12 m; reproduced
    here, since the ephemeris term dominates RTKLIB's weights.
    """
    ura = np.asarray(ura_m, dtype=float)
    system = np.asarray(system).astype(str)
    ura, system = np.broadcast_arrays(ura, system)
    table = np.asarray(RTKLIB_URA_M)
    u = np.where(np.isfinite(ura), ura, -1.0)
    k = np.searchsorted(table, u, side="left")
    gps = np.where((u < 0) | (k >= table.size), table[-1], table[np.minimum(k, table.size - 1)])
    with np.errstate(invalid="ignore"):
        steps = [(0.5, 0.0, 0.01), (1.0, 0.5, 0.02), (2.0, 1.0, 0.04)]
        # above 2 m RTKLIB's sisa_index truncates before dividing, ((int)(value - 2.0) / 0.16):
        # whole metres above 2 m become 6.25 index steps, truncated to 6 (3.12 m -> 2.96 m)
        gal = np.where((u > 2.0) & (u <= 6.0), 2.0 + np.floor(np.floor(u - 2.0) / 0.16) * 0.16,
                       RTKLIB_GALILEO_NAPA_SIGMA_M)
        for top, base, step in reversed(steps):
            inside = (u >= 0) & (u <= top)
            gal = np.where(inside, base + np.floor((u - base) / step) * step, gal)
    return np.where(system == "E", gal, np.where(system == "R", RTKLIB_GLONASS_EPHEMERIS_SIGMA_M, gps))


def rtklib_code_variance(elevation_rad, system, *, iono_m, ephemeris_sigma_m,
                         rtklib_error_m=RTKLIB_CODE_ERROR_M):
    """Variance RTKLIB 2.4.3's ``pntpos`` gives a single-frequency code residual [m^2].

    Parameters
    ----------
    elevation_rad : array_like
        Elevation [rad] (floored at :data:`MIN_WEIGHT_ELEVATION_RAD`).
    system : array_like of str
        System letter per satellite ("G", "E", "C", "R").
    iono_m : array_like, keyword-only
        The broadcast ionospheric delay whose half is the ionosphere's sigma [m]: RTKLIB takes
        the L1 Klobuchar delay times f_L1 / f (its variance scaled by (f_L1 / f)^2, ``rescode``),
        not the delay at the code's frequency, (f_L1 / f)^2 times the L1 one.
    ephemeris_sigma_m : array_like, keyword-only
        :func:`rtklib_ephemeris_sigma_m` of the record used [m].
    rtklib_error_m : tuple of float, keyword-only
        (a, b) of the code part [m] (:data:`RTKLIB_CODE_ERROR_M`).

    Returns
    -------
    numpy.ndarray
        sigma^2 [m^2], the broadcast shape.

    Notes
    -----
    ``rescode`` in src/pntpos.c sums ``varerr`` f^2 (a^2 + b^2 / sin el) (f = 1.5 for GLONASS,
    else 1), the ephemeris variance, ``ERR_CBIAS``^2 (code bias), (``ERR_BRDCI`` I)^2 (Klobuchar
    residual, 50 % of the delay) and (``ERR_SAAS`` / (sin el + 0.1))^2 (troposphere); its
    ``valsol`` divides the residuals by these sigmas in its chi-square test. The
    ephemeris term (5.76 m^2 for a URA of 2 m) dominates at high elevation, so RTKLIB weights
    satellites more evenly than sin^2(el).
    """
    s = np.sin(np.clip(np.asarray(elevation_rad, dtype=float), MIN_WEIGHT_ELEVATION_RAD, None))
    a, b = rtklib_error_m
    fact = np.where(np.asarray(system).astype(str) == "R", RTKLIB_GLONASS_ERROR_FACTOR, 1.0)
    return (fact ** 2 * (a ** 2 + b ** 2 / s) + np.asarray(ephemeris_sigma_m, dtype=float) ** 2
            + RTKLIB_CBIAS_SIGMA_M ** 2 + (RTKLIB_IONO_FRACTION * np.asarray(iono_m, dtype=float)) ** 2
            + (RTKLIB_SAAS_SIGMA_M / (s + 0.1)) ** 2)


#: BeiDou codes whose group delay RTKLIB 2.4.3 b34 takes from a D1/D2 record's TGD1 (B1I data
#: component, RINEX 3.02+ C2I and its RINEX 3.01 name C1I); see :func:`rtklib_group_delay_applies`.
RTKLIB_BEIDOU_TGD1_CODES = ("C2I", "C1I")


def rtklib_group_delay_applies(system, code_used, iono_free=False) -> np.ndarray:
    """Where RTKLIB 2.4.3's ``pntpos`` subtracts the broadcast group delay :func:`solve` would [1].

    Parameters
    ----------
    system : array_like of str
        System letter per satellite.
    code_used : array_like of str
        Code taken per epoch and satellite (:func:`solve`'s ``code_used``), broadcast with
        ``system``.
    iono_free : bool
        The ionosphere-free combination (no exception then).

    Returns
    -------
    numpy.ndarray of float
        1 where the group delay is applied, 0 where RTKLIB applies none.

    Notes
    -----
    RTKLIB's ``prange`` (src/pntpos.c) takes TGD1 only for BeiDou code ``L2I`` (B1I data,
    :data:`RTKLIB_BEIDOU_TGD1_CODES`); for any other B1 code (``C2Q``, ``C2X``: B1I too) it
    takes the B1C delays ``TGD_B1Cp`` (+ ``ISC_B1Cd``), which a D1/D2 record (the RINEX 3
    BeiDou records :func:`gnss.read_nav` reads) does not carry: zero. A receiver logging B1I
    as C2X (NYA100NOR) thus gets no group delay in RTKLIB, up to 4 m (13 ns) per satellite.
    """
    system = np.asarray(system).astype(str)
    code = np.asarray(code_used).astype(str)
    if iono_free:
        return np.ones(np.broadcast_shapes(system.shape, code.shape))
    bds_other = (system == "C") & ~np.isin(code, RTKLIB_BEIDOU_TGD1_CODES + ("pseudorange",))
    return np.where(bds_other, 0.0, 1.0)

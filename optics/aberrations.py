"""Third-order (Seidel) aberrations: wavefront, transverse ray errors, field-dependent PSF.

The VANE approach: trace a fixed set of pupil samples to the image plane per field point using
the transverse ray aberrations derived from the Seidel wavefront, bin the spot diagram into
pixels to get a point-spread function (PSF), and apply the field-dependent PSF to an ideal image
by a piecewise (tiled) convolution; distortion (W311) is applied separately as a geometric remap.

Conventions (all documented here once and used everywhere in this module)
--------------------------------------------------------------------------
* Wavefront aberration W (optical path difference of the real wavefront from the reference
  sphere centred on the ideal image point), in **waves** at ``wavelength_m``; W > 0 means the
  wavefront leads the reference sphere (Wyant & Creath 1992 sign).
* Normalised pupil coordinates (x_p, y_p), rho = sqrt(x_p^2 + y_p^2) <= 1, and the pupil angle
  theta measured **from the y_p (meridional) axis**: x_p = rho sin(theta), y_p = rho cos(theta).
  The meridional axis y_p points along the field direction (from the optical axis to the image
  point).
* Normalised field H = h / field_radius_m, 0 <= H <= 1, h the ideal image height.
* W(H, rho, theta) = W040 rho^4 + W131 H rho^3 cos(theta) + W222 H^2 rho^2 cos^2(theta)
  + W220 H^2 rho^2 + W311 H^3 rho cos(theta)   (Wyant & Creath 1992, eq. (31) without piston
  and the field-only terms). Note cos^2(theta), not cos(2 theta): astigmatism here is a pure
  meridional-focus term with its sagittal focus at the paraxial image plane.
* Transverse ray aberration in the image plane (Wyant & Creath 1992, eqs. (1)-(2)):
  eps = -(R / r_p) grad_p W_metres, with R the reference-sphere radius and r_p the exit-pupil
  radius. With the image-space f-number N = R / (2 r_p) and W in waves,
  **eps = -2 N lambda grad_p W**, grad_p taken in normalised pupil coordinates [m].
  eps_y is along the field direction (meridional), eps_x perpendicular (sagittal).
  Consequently a positive W311 moves image points towards the axis (barrel distortion):
  distortion(H) = eps_y / h = -2 N lambda W311 H^2 / field_radius_m.
* Image arrays are (rows, cols[, channels]). Pixel (r, c) has its centre at image-plane
  coordinates x = (c - (cols - 1)/2) p, y = ((rows - 1)/2 - r) p, with p the pixel pitch: x to
  the right (increasing column), y up (decreasing row), origin on the optical axis at the image
  centre. The field radius defaults to the half-diagonal of the pixel array.

References
----------
J. C. Wyant and K. Creath, "Basic wavefront aberration theory for optical metrology", Applied
Optics and Optical Engineering, vol. XI, ch. 1, Academic Press, 1992.
V. N. Mahajan, "Optical Imaging and Aberrations, Part I: Ray Geometrical Optics", SPIE Press,
1998 (RMS spot sizes of the primary aberrations).
J. G. Nagy and D. P. O'Leary, "Restoring images degraded by spatially variant blur", SIAM J. Sci.
Comput. 19(4), 1063-1082, 1998 (piecewise-constant PSF with interpolated weights).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
from scipy import ndimage

from . import _checks
from .constants import DEFAULT_PUPIL_SAMPLES, DISTORTION_NEWTON_ITERATIONS

__all__ = [
    "SeidelCoefficients",
    "seidel_wavefront",
    "pupil_samples",
    "transverse_ray_aberration",
    "pixel_positions",
    "spot_diagram",
    "SpotStatistics",
    "spot_statistics",
    "psf_kernels",
    "apply_field_psf",
    "apply_distortion",
    "apply_seidel",
]

# Largest PSF kernel side [pixels]; rays landing further out than this from the ideal point are
# dropped from the kernel (the kernel is renormalised, see psf_kernels Notes).
MAX_KERNEL_SIZE = 127


class SeidelCoefficients(NamedTuple):
    """Seidel wavefront coefficients at full field (H = 1), in waves at the design wavelength."""

    W040: float = 0.0
    """Spherical aberration [waves]."""
    W131: float = 0.0
    """Coma [waves]."""
    W222: float = 0.0
    """Astigmatism [waves] (multiplies H^2 rho^2 cos^2 theta)."""
    W220: float = 0.0
    """Field curvature [waves]."""
    W311: float = 0.0
    """Distortion [waves]."""

    @classmethod
    def checked(cls, **kwargs) -> "SeidelCoefficients":
        """Build from keywords, each a finite float; unknown names raise ValueError."""
        allowed = cls._fields
        for key in kwargs:
            if key not in allowed:
                raise ValueError(f"{key!r}: unknown Seidel coefficient; allowed: {list(allowed)}")
        return cls(**{k: _checks.finite(k, v) for k, v in kwargs.items()})


def seidel_wavefront(field_h, rho, theta, coefficients: SeidelCoefficients):
    """Seidel wavefront aberration.

    Parameters
    ----------
    field_h : array_like
        Normalised field H [1].
    rho : array_like
        Normalised pupil radius [1], 0..1.
    theta : array_like
        Pupil angle from the meridional (y_p) axis [rad].
    coefficients : SeidelCoefficients
        W040, W131, W222, W220, W311 [waves].

    Returns
    -------
    numpy.ndarray
        W [waves], broadcast shape of the inputs.

    Notes
    -----
    W = W040 rho^4 + W131 H rho^3 cos(theta) + W222 H^2 rho^2 cos^2(theta) + W220 H^2 rho^2
    + W311 H^3 rho cos(theta)  (Wyant & Creath 1992, eq. (31)). Valid to third order in H and
    rho; no higher-order terms.
    """
    h = np.asarray(field_h, dtype=float)
    r = np.asarray(rho, dtype=float)
    c = np.cos(np.asarray(theta, dtype=float))
    w = coefficients
    return (w.W040 * r ** 4 + w.W131 * h * r ** 3 * c + w.W222 * h ** 2 * r ** 2 * c ** 2
            + w.W220 * h ** 2 * r ** 2 + w.W311 * h ** 3 * r * c)


def pupil_samples(n: int = DEFAULT_PUPIL_SAMPLES) -> np.ndarray:
    """Deterministic, uniformly spread samples of the unit pupil (Fermat / sunflower spiral).

    Parameters
    ----------
    n : int
        Number of samples.

    Returns
    -------
    numpy.ndarray, shape (n, 2)
        (x_p, y_p) normalised pupil coordinates [1]; each sample stands for an equal pupil area.

    Notes
    -----
    rho_k = sqrt((k + 1/2) / n), phi_k = k * pi (3 - sqrt(5)) (Vogel 1979). Equal-area samples
    give pupil averages (centroids, RMS spot sizes) with an error that falls roughly as 1/n,
    without the aliasing of a square grid.
    """
    n = _checks.integer_in_range("n", n, 1, 10 ** 7)
    k = np.arange(n, dtype=float)
    rho = np.sqrt((k + 0.5) / n)
    phi = k * np.pi * (3.0 - np.sqrt(5.0))
    return np.stack([rho * np.cos(phi), rho * np.sin(phi)], axis=-1)


def transverse_ray_aberration(field_h, pupil_xy, coefficients: SeidelCoefficients, *,
                              wavelength_m: float, f_number: float,
                              include_distortion: bool = True) -> np.ndarray:
    """Transverse ray aberrations from the gradient of the Seidel wavefront.

    Parameters
    ----------
    field_h : array_like, shape (m,)
        Normalised field H of each field point [1].
    pupil_xy : array_like, shape (n, 2)
        Normalised pupil coordinates (x_p sagittal, y_p meridional) [1].
    coefficients : SeidelCoefficients
        [waves] at ``wavelength_m``.
    wavelength_m : float
        Wavelength [m].
    f_number : float
        Image-space f-number N = R / (2 r_p) [1].
    include_distortion : bool, optional
        Include the W311 term (a pure shift of the whole spot). Default True.

    Returns
    -------
    numpy.ndarray, shape (m, n, 2)
        (eps_x sagittal, eps_y meridional) ray displacement from the ideal image point in the
        image plane [m]; eps_y > 0 points away from the optical axis.

    Notes
    -----
    eps = -2 N lambda grad_p W (module docstring), with, in waves,
    dW/dx_p = 4 W040 rho^2 x_p + 2 W131 H x_p y_p + 2 W220 H^2 x_p,
    dW/dy_p = 4 W040 rho^2 y_p + W131 H (x_p^2 + 3 y_p^2) + 2 (W222 + W220) H^2 y_p + W311 H^3.
    Geometrical optics only: diffraction is not included (valid when the spot is much larger
    than the Airy disc, 2.44 lambda N).
    """
    lam = _checks.positive("wavelength_m", wavelength_m)
    n_f = _checks.positive("f_number", f_number)
    h = np.asarray(field_h, dtype=float).reshape(-1, 1)
    p = np.asarray(pupil_xy, dtype=float)
    x = p[None, :, 0]
    y = p[None, :, 1]
    rho2 = x * x + y * y
    w = coefficients
    dwdx = 4.0 * w.W040 * rho2 * x + 2.0 * w.W131 * h * x * y + 2.0 * w.W220 * h ** 2 * x
    dwdy = (4.0 * w.W040 * rho2 * y + w.W131 * h * (x * x + 3.0 * y * y)
            + 2.0 * (w.W222 + w.W220) * h ** 2 * y)
    if include_distortion:
        dwdy = dwdy + w.W311 * h ** 3
    scale = -2.0 * n_f * lam
    return np.stack([scale * dwdx, scale * dwdy], axis=-1)


def pixel_positions(shape, pixel_pitch_m: float) -> np.ndarray:
    """Image-plane coordinates of pixel centres (module conventions).

    Parameters
    ----------
    shape : tuple of int
        (rows, cols).
    pixel_pitch_m : float
        Pixel pitch [m].

    Returns
    -------
    numpy.ndarray, shape (rows, cols, 2)
        (x right, y up) from the optical axis at the array centre [m].
    """
    rows, cols = int(shape[0]), int(shape[1])
    x = (np.arange(cols) - 0.5 * (cols - 1)) * pixel_pitch_m
    y = (0.5 * (rows - 1) - np.arange(rows)) * pixel_pitch_m
    xx, yy = np.meshgrid(x, y)
    return np.stack([xx, yy], axis=-1)


def _field_frame(field_xy_m, field_radius_m):
    """Normalised field H and meridional unit vector of each field point."""
    f = np.asarray(field_xy_m, dtype=float).reshape(-1, 2)
    h = np.hypot(f[:, 0], f[:, 1])
    safe = np.where(h > 0.0, h, 1.0)
    meridional = np.where(h[:, None] > 0.0, f / safe[:, None], np.array([0.0, 1.0]))
    return h / field_radius_m, meridional


def spot_diagram(field_xy_m, coefficients: SeidelCoefficients, *, wavelength_m: float,
                 f_number: float, field_radius_m: float, pupil_xy=None,
                 include_distortion: bool = True) -> np.ndarray:
    """Ray intersections with the image plane, relative to the ideal image point.

    Parameters
    ----------
    field_xy_m : array_like, shape (m, 2)
        Ideal image positions (x right, y up) of the field points [m].
    coefficients : SeidelCoefficients
        [waves] at ``wavelength_m``, defined at ``field_radius_m`` (H = 1).
    wavelength_m, f_number : float
        Wavelength [m] and image-space f-number [1].
    field_radius_m : float
        Image height of H = 1 [m].
    pupil_xy : array_like, shape (n, 2), optional
        Pupil samples; default :func:`pupil_samples`.
    include_distortion : bool, optional
        Include the W311 shift. Default True.

    Returns
    -------
    numpy.ndarray, shape (m, n, 2)
        Displacements (dx right, dy up) of each ray from the ideal image point [m].
    """
    radius = _checks.positive("field_radius_m", field_radius_m)
    pupil = pupil_samples() if pupil_xy is None else np.asarray(pupil_xy, dtype=float)
    h, meridional = _field_frame(field_xy_m, radius)
    eps = transverse_ray_aberration(h, pupil, coefficients, wavelength_m=wavelength_m,
                                    f_number=f_number, include_distortion=include_distortion)
    # sagittal unit vector: meridional rotated by -90 deg, (m_y, -m_x)
    sagittal = np.stack([meridional[:, 1], -meridional[:, 0]], axis=-1)
    return eps[..., 0:1] * sagittal[:, None, :] + eps[..., 1:2] * meridional[:, None, :]


class SpotStatistics(NamedTuple):
    """Centroid and RMS size of spot diagrams."""

    centroid_m: np.ndarray
    """(m, 2) centroid displacement from the ideal image point [m]."""
    rms_radius_m: np.ndarray
    """(m,) RMS distance of the rays from the centroid [m]."""


def spot_statistics(spots_m) -> SpotStatistics:
    """Centroid and RMS radius (about the centroid) of spot diagrams of shape (m, n, 2) [m]."""
    s = np.asarray(spots_m, dtype=float)
    c = s.mean(axis=-2)
    rms = np.sqrt(np.mean(np.sum((s - c[..., None, :]) ** 2, axis=-1), axis=-1))
    return SpotStatistics(centroid_m=c, rms_radius_m=rms)


def psf_kernels(field_xy_m, coefficients: SeidelCoefficients, *, wavelength_m: float,
                f_number: float, field_radius_m: float, pixel_pitch_m: float,
                kernel_size: int | None = None, pupil_xy=None) -> np.ndarray:
    """Geometrical PSF kernels (spot diagrams binned into pixels), one per field point.

    Parameters
    ----------
    field_xy_m : array_like, shape (m, 2)
        Field points (ideal image positions) [m].
    coefficients, wavelength_m, f_number, field_radius_m, pupil_xy
        As in :func:`spot_diagram`.
    pixel_pitch_m : float
        Pixel pitch [m].
    kernel_size : int, optional
        Odd kernel side [pixels]. Default: the smallest odd size holding every ray of every
        field point plus one pixel, capped at ``MAX_KERNEL_SIZE``.

    Returns
    -------
    numpy.ndarray, shape (m, k, k)
        Kernels summing to 1, row index downwards (image convention); the ideal image point is
        at the centre pixel (k // 2, k // 2).

    Notes
    -----
    Distortion (W311) is excluded: it is a shift of the whole spot, applied as a geometric remap
    by :func:`apply_distortion`. Each ray is split between the four nearest pixel centres with
    bilinear weights, which keeps the kernel centroid equal to the spot centroid to rounding
    error. Rays falling outside the kernel are dropped and the kernel renormalised (only
    possible when ``kernel_size`` is given or capped).
    """
    pitch = _checks.positive("pixel_pitch_m", pixel_pitch_m)
    spots = spot_diagram(field_xy_m, coefficients, wavelength_m=wavelength_m,
                         f_number=f_number, field_radius_m=field_radius_m, pupil_xy=pupil_xy,
                         include_distortion=False)
    col = spots[..., 0] / pitch          # + right = + column
    row = -spots[..., 1] / pitch         # + up = - row
    if kernel_size is None:
        reach = float(np.max(np.abs(np.concatenate([col.ravel(), row.ravel(), [0.0]]))))
        kernel_size = min(2 * int(np.ceil(reach)) + 3, MAX_KERNEL_SIZE)
    k = _checks.integer_in_range("kernel_size", kernel_size, 1, 4 * MAX_KERNEL_SIZE)
    if k % 2 == 0:
        raise ValueError(f"kernel_size = {kernel_size!r}: must be odd")
    m = spots.shape[0]
    centre = k // 2
    c0 = np.floor(col)
    r0 = np.floor(row)
    fc = col - c0
    fr = row - r0
    kernels = np.zeros(m * k * k)
    field_index = np.broadcast_to(np.arange(m)[:, None], col.shape)
    for dr, dc, weight in ((0, 0, (1 - fr) * (1 - fc)), (0, 1, (1 - fr) * fc),
                           (1, 0, fr * (1 - fc)), (1, 1, fr * fc)):
        rr = (r0 + dr).astype(np.int64) + centre
        cc = (c0 + dc).astype(np.int64) + centre
        inside = (rr >= 0) & (rr < k) & (cc >= 0) & (cc < k)
        flat = (field_index * k + rr) * k + cc
        np.add.at(kernels, flat[inside], weight[inside])
    kernels = kernels.reshape(m, k, k)
    total = kernels.sum(axis=(1, 2), keepdims=True)
    return kernels / np.where(total > 0.0, total, 1.0)


def _tile_weights(n_pixels: int, n_tiles: int):
    """Tile centres and piecewise-linear partition-of-unity weights along one axis."""
    centres = (np.arange(n_tiles) + 0.5) * n_pixels / n_tiles - 0.5
    u = np.arange(n_pixels, dtype=float)
    eye = np.eye(n_tiles)
    if n_tiles == 1:
        return centres, np.ones((1, n_pixels))
    weights = np.stack([np.interp(u, centres, eye[j]) for j in range(n_tiles)])
    return centres, weights


def _fft_convolve_full(image, kernel) -> np.ndarray:
    """Full linear convolution of ``image`` with ``kernel`` over axes 0 and 1, by real FFTs.

    Parameters
    ----------
    image : numpy.ndarray, shape (r, c) or (r, c, channels), float64
    kernel : numpy.ndarray, shape (kr, kc) or (kr, kc, 1), float64
        Broadcast against ``image`` on the axes after the first two.

    Returns
    -------
    numpy.ndarray, shape (r + kr - 1, c + kc - 1[, channels])

    Notes
    -----
    The same transforms as ``scipy.signal.fftconvolve(image, kernel, mode="full", axes=(0, 1))``
    (``scipy.fft.rfftn`` on each operand, zero-padded to the next 5-smooth length of the full
    size, product, ``irfftn``, cropped to the full size), so the result has the same bits;
    tests/optics/test_aberrations.py checks that against scipy.signal. Done here because importing
    ``scipy.signal`` costs 0.8-2 s (its docstring processing at import, scipy 1.16-1.17)
    against nothing for ``scipy.fft``, which scipy.ndimage has already imported.
    """
    from scipy import fft as sp_fft
    full = [image.shape[a] + kernel.shape[a] - 1 for a in (0, 1)]
    padded = [sp_fft.next_fast_len(n, True) for n in full]
    spectrum = sp_fft.rfftn(image, padded, axes=(0, 1)) * sp_fft.rfftn(kernel, padded, axes=(0, 1))
    out = sp_fft.irfftn(spectrum, padded, axes=(0, 1))
    return out[:full[0], :full[1]]


def apply_field_psf(image, coefficients: SeidelCoefficients, *, pixel_pitch_m: float,
                    wavelength_m: float, f_number: float, field_radius_m: float | None = None,
                    tiles: tuple[int, int] = (8, 8), pupil_xy=None) -> np.ndarray:
    """Blur an image with the field-dependent Seidel PSF (tiled, interpolated convolution).

    Parameters
    ----------
    image : array_like, shape (rows, cols) or (rows, cols, channels)
        Ideal image (any linear quantity: irradiance, photons, electrons).
    coefficients : SeidelCoefficients
        [waves] at ``wavelength_m``; W311 is ignored here (see :func:`apply_distortion`).
    pixel_pitch_m, wavelength_m, f_number : float
        [m], [m], [1].
    field_radius_m : float, optional
        Image height of H = 1 [m]; default the half-diagonal of the array.
    tiles : (int, int)
        Number of field tiles along rows and columns; one PSF per tile centre.

    Returns
    -------
    numpy.ndarray of float64, same shape as ``image``

    Notes
    -----
    out = sum_t PSF_t * (w_t image) (Nagy & O'Leary 1998): the image is split with bilinear
    weights w_t that sum to 1 at every pixel (hat functions between tile centres, constant
    beyond the outer centres), each weighted part is convolved with the PSF of its tile centre
    (FFT convolution restricted to the tile's support), and the parts are added. This conserves
    the total signal (except what the PSF carries over the image border) and varies the PSF
    continuously over the field. The loop is over tiles, not pixels. Geometrical PSF:
    diffraction is not included.

    A uniform field does not stay exactly uniform under a field-dependent PSF, and that is
    physical: to second order, out = 1 - div(c) + 1/2 sum_ij d_i d_j M_ij, with c(x) the PSF
    centroid and M(x) its second-moment tensor at field point x (a coma centroid that grows
    with H acts like a distortion). The piecewise-linear tile weights concentrate the second
    term near the tile centres; use tiles much larger than the PSF (the default 8 x 8 on a
    full frame) so that the PSF varies slowly from tile to tile.
    """
    img = np.asarray(image, dtype=float)
    if img.ndim not in (2, 3):
        raise ValueError(f"image shape = {img.shape!r}: must be (rows, cols) or "
                         "(rows, cols, channels)")
    rows, cols = img.shape[:2]
    pitch = _checks.positive("pixel_pitch_m", pixel_pitch_m)
    n_tr = _checks.integer_in_range("tiles[0]", tiles[0], 1, rows)
    n_tc = _checks.integer_in_range("tiles[1]", tiles[1], 1, cols)
    if field_radius_m is None:
        field_radius_m = 0.5 * pitch * np.hypot(rows, cols)
    centres_r, w_r = _tile_weights(rows, n_tr)
    centres_c, w_c = _tile_weights(cols, n_tc)
    cr, cc = np.meshgrid(centres_r, centres_c, indexing="ij")
    field_xy = np.stack([(cc - 0.5 * (cols - 1)) * pitch, (0.5 * (rows - 1) - cr) * pitch],
                        axis=-1).reshape(-1, 2)
    kernels = psf_kernels(field_xy, coefficients, wavelength_m=wavelength_m, f_number=f_number,
                          field_radius_m=field_radius_m, pixel_pitch_m=pitch, pupil_xy=pupil_xy)
    half = kernels.shape[-1] // 2
    out = np.zeros_like(img)
    extra = (None,) * (img.ndim - 2)
    for i in range(n_tr):
        r_sup = np.nonzero(w_r[i])[0]
        r_lo, r_hi = r_sup[0], r_sup[-1] + 1
        for j in range(n_tc):
            c_sup = np.nonzero(w_c[j])[0]
            c_lo, c_hi = c_sup[0], c_sup[-1] + 1
            weight = w_r[i, r_lo:r_hi, None] * w_c[j, None, c_lo:c_hi]
            part = img[r_lo:r_hi, c_lo:c_hi] * weight[(...,) + extra]
            kernel = kernels[i * n_tc + j][(...,) + extra]
            blurred = _fft_convolve_full(part, kernel)
            # place the full convolution, clipped to the image
            top, left = r_lo - half, c_lo - half
            rr0, cc0 = max(top, 0), max(left, 0)
            rr1 = min(top + blurred.shape[0], rows)
            cc1 = min(left + blurred.shape[1], cols)
            out[rr0:rr1, cc0:cc1] += blurred[rr0 - top:rr1 - top, cc0 - left:cc1 - left]
    return out


def apply_distortion(image, W311: float, *, pixel_pitch_m: float, wavelength_m: float,
                     f_number: float, field_radius_m: float | None = None) -> np.ndarray:
    """Geometric remap of an image by Seidel distortion.

    Parameters
    ----------
    image : array_like, shape (rows, cols) or (rows, cols, channels)
        Ideal (undistorted) image.
    W311 : float
        Distortion coefficient [waves] at ``wavelength_m``, full field.
    pixel_pitch_m, wavelength_m, f_number : float
        [m], [m], [1].
    field_radius_m : float, optional
        Image height of H = 1 [m]; default the half-diagonal of the array.

    Returns
    -------
    numpy.ndarray of float64, same shape as ``image``
        The distorted image; pixels whose source lies outside the input are 0.

    Notes
    -----
    An ideal image point at height h moves radially to h' = h (1 + d (h / h_max)^2) with
    d = -2 N lambda W311 / h_max (module docstring; W311 > 0 is barrel). For each output pixel
    the source height h is found by Newton's method on this cubic (a fixed number of
    iterations, ``DISTORTION_NEWTON_ITERATIONS``) and the input is sampled there with bilinear
    interpolation. The irradiance change of the stretched or compressed area (the Jacobian) is
    not applied: the remap moves image content, it does not rescale it.
    """
    img = np.asarray(image, dtype=float)
    if img.ndim not in (2, 3):
        raise ValueError(f"image shape = {img.shape!r}: must be (rows, cols) or "
                         "(rows, cols, channels)")
    w311 = _checks.finite("W311", W311)
    pitch = _checks.positive("pixel_pitch_m", pixel_pitch_m)
    lam = _checks.positive("wavelength_m", wavelength_m)
    n_f = _checks.positive("f_number", f_number)
    rows, cols = img.shape[:2]
    if field_radius_m is None:
        field_radius_m = 0.5 * pitch * np.hypot(rows, cols)
    h_max = _checks.positive("field_radius_m", field_radius_m)
    d = -2.0 * n_f * lam * w311 / h_max
    if d == 0.0:
        return img.copy()
    pos = pixel_positions((rows, cols), pitch)
    h_out = np.hypot(pos[..., 0], pos[..., 1])
    h_in = h_out.copy()
    for _ in range(DISTORTION_NEWTON_ITERATIONS):
        q = d * (h_in / h_max) ** 2
        h_in = h_in - (h_in * (1.0 + q) - h_out) / (1.0 + 3.0 * q)
    scale = np.where(h_out > 0.0, h_in / np.where(h_out > 0.0, h_out, 1.0), 1.0)
    src_x = pos[..., 0] * scale
    src_y = pos[..., 1] * scale
    src_col = src_x / pitch + 0.5 * (cols - 1)
    src_row = 0.5 * (rows - 1) - src_y / pitch
    coords = np.stack([src_row, src_col])
    if img.ndim == 2:
        return ndimage.map_coordinates(img, coords, order=1, mode="constant", cval=0.0)
    return np.stack([ndimage.map_coordinates(img[..., ch], coords, order=1, mode="constant",
                                             cval=0.0) for ch in range(img.shape[-1])], axis=-1)


def apply_seidel(image, coefficients: SeidelCoefficients, *, pixel_pitch_m: float,
                 wavelength_m: float, f_number: float, field_radius_m: float | None = None,
                 tiles: tuple[int, int] = (8, 8), pupil_xy=None) -> np.ndarray:
    """Field-dependent Seidel blur followed by the distortion remap.

    Parameters are those of :func:`apply_field_psf` and :func:`apply_distortion`.

    Returns
    -------
    numpy.ndarray of float64, same shape as ``image``

    Notes
    -----
    The PSF of each field point is evaluated at its ideal (undistorted) image height; the
    distortion then moves the blurred spot as a whole. This ordering is exact for the
    third-order model, where W311 only shifts the spot.
    """
    blurred = apply_field_psf(image, coefficients, pixel_pitch_m=pixel_pitch_m,
                              wavelength_m=wavelength_m, f_number=f_number,
                              field_radius_m=field_radius_m, tiles=tiles, pupil_xy=pupil_xy)
    return apply_distortion(blurred, coefficients.W311, pixel_pitch_m=pixel_pitch_m,
                            wavelength_m=wavelength_m, f_number=f_number,
                            field_radius_m=field_radius_m)

"""Seidel aberrations: spot sizes, centroid shifts and distortion against third-order theory.

Closed forms (derived in each test from eps = -2 N lambda grad W, see optics.aberrations, with
the uniform-pupil averages <rho^2> = 1/2, <rho^4> = 1/3, <rho^6> = 1/4,
<rho^2 cos^2 theta> = 1/4; cf. Mahajan 1998, "Optical Imaging and Aberrations I", ch. 4 and
Wyant & Creath 1992, section 5).
"""

from __future__ import annotations

import numpy as np
import pytest

from optics.aberrations import (
    SeidelCoefficients,
    apply_distortion,
    apply_field_psf,
    pixel_positions,
    psf_kernels,
    seidel_wavefront,
    spot_diagram,
    spot_statistics,
)

LAMBDA = 550e-9     # [m]
N = 4.0             # image-space f-number
PITCH = 3.45e-6     # [m]
H_MAX = 3.0e-3      # field radius [m]
SCALE = 2 * N * LAMBDA  # 4.4 um per wave of normalised wavefront slope


def _stats(h, **coefficients):
    spots = spot_diagram([[0.0, h * H_MAX]], SeidelCoefficients(**coefficients),
                         wavelength_m=LAMBDA, f_number=N, field_radius_m=H_MAX)
    return spot_statistics(spots)


def test_wavefront_astigmatism_uses_cos_squared_not_cos_2theta():
    # W222 H^2 rho^2 cos^2(theta) (Wyant & Creath 1992 eq. 31): at theta = 90 deg (sagittal)
    # it vanishes; a cos(2 theta) form would give -W222.
    w = SeidelCoefficients(W222=1.0)
    assert seidel_wavefront(1.0, 1.0, np.pi / 2, w) == pytest.approx(0.0, abs=1e-15)
    assert seidel_wavefront(1.0, 1.0, 0.0, w) == pytest.approx(1.0)


def test_spherical_rms_spot_radius():
    # W040: eps = -SCALE * 4 W040 rho^2 (x, y), |eps| = 4 SCALE W040 rho^3,
    # RMS = 4 SCALE W040 sqrt(<rho^6>) = 2 SCALE W040; centroid 0 (analytic).
    st = _stats(0.7, W040=1.5)
    assert st.rms_radius_m[0] == pytest.approx(2 * SCALE * 1.5, rel=5e-3)
    np.testing.assert_allclose(st.centroid_m[0], 0.0, atol=1e-3 * SCALE)


@pytest.mark.parametrize("h", [0.5, 1.0])
def test_field_curvature_rms_spot_radius(h):
    # W220 H^2 rho^2 is defocus a = W220 H^2: eps = -2 a SCALE (x, y),
    # RMS = 2 a SCALE sqrt(<rho^2>) = sqrt(2) a SCALE; centroid 0 (analytic).
    st = _stats(h, W220=2.0)
    assert st.rms_radius_m[0] == pytest.approx(np.sqrt(2) * 2.0 * h ** 2 * SCALE, rel=5e-3)
    np.testing.assert_allclose(st.centroid_m[0], 0.0, atol=1e-3 * SCALE)


def test_astigmatism_rms_spot_radius_at_paraxial_focus():
    # W222 H^2 y^2: eps_y = -2 SCALE W222 H^2 y, eps_x = 0;
    # RMS = 2 SCALE W222 H^2 sqrt(<y^2>) = SCALE W222 H^2; centroid 0 (analytic).
    st = _stats(0.8, W222=3.0)
    assert st.rms_radius_m[0] == pytest.approx(SCALE * 3.0 * 0.64, rel=5e-3)
    np.testing.assert_allclose(st.centroid_m[0], 0.0, atol=1e-3 * SCALE)


@pytest.mark.parametrize("h", [0.4, 1.0])
def test_coma_centroid_shift_and_rms(h):
    # W131 H rho^2 y: eps_y = -SCALE W131 H rho^2 (2 + cos 2 theta), eps_x = -SCALE W131 H rho^2
    # sin 2 theta. Centroid shift (meridional) = -SCALE W131 H * 2 <rho^2> = -SCALE W131 H;
    # RMS about the centroid = SCALE W131 H sqrt(2/3) (analytic, uniform pupil).
    st = _stats(h, W131=2.0)
    assert st.centroid_m[0, 1] == pytest.approx(-SCALE * 2.0 * h, rel=2e-3)
    assert st.centroid_m[0, 0] == pytest.approx(0.0, abs=1e-3 * SCALE)
    assert st.rms_radius_m[0] == pytest.approx(SCALE * 2.0 * h * np.sqrt(2 / 3), rel=5e-3)


def test_distortion_is_a_pure_shift_of_the_spot():
    # W311 H^3 y: eps_y = -SCALE W311 H^3 for every ray (analytic): zero spot size.
    st = _stats(0.9, W311=1.0)
    assert st.rms_radius_m[0] == pytest.approx(0.0, abs=1e-15)
    assert st.centroid_m[0, 1] == pytest.approx(-SCALE * 0.9 ** 3, rel=1e-12)


def test_spots_rotate_with_the_field_direction():
    # The meridional axis points from the axis to the field point: a field point on the +x axis
    # has its coma centroid shifted along x (by rotational symmetry of the lens).
    spots = spot_diagram([[H_MAX, 0.0]], SeidelCoefficients(W131=1.0), wavelength_m=LAMBDA,
                         f_number=N, field_radius_m=H_MAX)
    c = spot_statistics(spots).centroid_m[0]
    assert c[0] == pytest.approx(-SCALE, rel=2e-3) and abs(c[1]) < 1e-3 * SCALE


def test_psf_kernel_centroid_matches_spot_centroid():
    # Bilinear splatting keeps the first moment: kernel centroid = spot centroid / pitch.
    k = psf_kernels([[0.0, H_MAX]], SeidelCoefficients(W131=2.0, W040=0.5),
                    wavelength_m=LAMBDA, f_number=N, field_radius_m=H_MAX, pixel_pitch_m=PITCH)
    kernel = k[0]
    assert kernel.sum() == pytest.approx(1.0)
    r, c = np.indices(kernel.shape) - kernel.shape[0] // 2
    row_centroid = (kernel * r).sum()
    # coma centroid -2 SCALE (towards the axis, i.e. downwards = + row) in pixels:
    spots = spot_diagram([[0.0, H_MAX]], SeidelCoefficients(W131=2.0, W040=0.5),
                         wavelength_m=LAMBDA, f_number=N, field_radius_m=H_MAX)
    centroid = spot_statistics(spots).centroid_m[0] / PITCH
    assert row_centroid == pytest.approx(-centroid[1], abs=1e-9)
    assert (kernel * c).sum() == pytest.approx(centroid[0], abs=1e-9)
    assert row_centroid == pytest.approx(2.0 * SCALE / PITCH, rel=2e-3)


def test_tiled_convolution_moves_a_point_source_by_the_coma_centroid():
    # A point source at a tile centre (weights 1 there) is replaced by that tile's PSF: its
    # centroid moves by the analytic coma shift -SCALE W131 H (towards the axis), and the
    # signal is conserved.
    rows, cols = 96, 128
    tiles = (2, 2)
    img = np.zeros((rows, cols))
    r0, c0 = 23, 31  # tile (0, 0) centre: (0.5 * 96 / 2 - 0.5, 0.5 * 128 / 2 - 0.5) = (23.5, 31.5)
    img[r0:r0 + 2, c0:c0 + 2] = 0.25  # centred on (23.5, 31.5)
    h_max = 0.5 * PITCH * np.hypot(rows, cols)
    out = apply_field_psf(img, SeidelCoefficients(W131=3.0), pixel_pitch_m=PITCH,
                          wavelength_m=LAMBDA, f_number=N, tiles=tiles)
    assert out.sum() == pytest.approx(1.0, rel=1e-9)
    rr, cc = np.indices(out.shape)
    centroid = np.array([(out * rr).sum(), (out * cc).sum()])
    pos = np.array([(rows - 1) / 2 - 23.5, 31.5 - (cols - 1) / 2]) * PITCH  # (y up, x right)
    pos_xy = np.array([pos[1], pos[0]])
    h = np.hypot(*pos_xy) / h_max
    shift = -SCALE * 3.0 * h * pos_xy / np.hypot(*pos_xy)  # (x, y) [m]
    expected = np.array([23.5 - shift[1] / PITCH, 31.5 + shift[0] / PITCH])
    np.testing.assert_allclose(centroid, expected, atol=0.02)  # 0.02 px


def test_tiled_convolution_of_uniform_field_is_uniform_inside():
    # With a field-independent PSF (spherical aberration only) every tile has the same kernel;
    # the tile weights sum to 1 (partition of unity), so a uniform image stays uniform away
    # from the border (analytic). With field-dependent PSFs a uniform field is *not* exactly
    # uniform, physically: out = 1 - div(centroid) + 1/2 d2(second moment) (see
    # apply_field_psf Notes), so that case is not asserted here.
    img = np.ones((64, 80, 3))
    out = apply_field_psf(img, SeidelCoefficients(W040=1.0), pixel_pitch_m=PITCH,
                          wavelength_m=LAMBDA, f_number=N, tiles=(4, 5))
    # 1e-4: the sunflower pupil pattern is rotated to each field direction, so the binned
    # kernels differ at the 1e-5 level.
    np.testing.assert_allclose(out[12:-12, 12:-12], 1.0, atol=1e-4)


def test_tiled_convolution_conserves_signal():
    # Every kernel sums to 1 and the weights partition the image: total signal is conserved
    # when the PSFs stay inside the image (zero border here).
    img = np.zeros((64, 80))
    img[16:-16, 16:-16] = 1.0
    out = apply_field_psf(img, SeidelCoefficients(W040=1.0, W131=2.0, W222=1.0, W220=1.0),
                          pixel_pitch_m=PITCH, wavelength_m=LAMBDA, f_number=N, tiles=(4, 5))
    assert out.sum() == pytest.approx(img.sum(), rel=1e-12)


@pytest.mark.parametrize("w311", [2.0, -2.0])
def test_distortion_percentage_matches_w311(w311):
    # Distortion(H) = (h' - h) / h = -2 N lambda W311 H^2 / h_max (analytic; W311 > 0 barrel).
    # Measured with a ramp image I = x (ideal image-plane x [m]): bilinear interpolation is exact
    # on a linear function, so the remapped value at an output pixel is the source x exactly,
    # and the source height follows from the radial mapping.
    rows, cols = 121, 161
    pos = pixel_positions((rows, cols), PITCH)
    h_max = 0.5 * PITCH * np.hypot(rows, cols)
    out = apply_distortion(pos[..., 0], w311, pixel_pitch_m=PITCH, wavelength_m=LAMBDA,
                           f_number=N)
    for r, c in [(10, 150), (60, 20), (100, 120)]:
        x_out, y_out = pos[r, c]
        ratio = out[r, c] / x_out        # h_in / h_out along the radial line
        h_in = np.hypot(x_out, y_out) * ratio
        measured_pct = (1.0 / ratio - 1.0) * 100.0
        expected_pct = -2 * N * LAMBDA * w311 * (h_in / h_max) ** 2 / h_max * 100.0
        assert measured_pct == pytest.approx(expected_pct, abs=1e-6)  # 1e-6 % (float noise)


def test_distortion_moves_a_point_source_radially():
    # A small blob at (x, y) lands at (x, y) (1 - 2 N lambda W311 H^2 / h_max); blob centroid
    # within 0.05 px (the centroid of a remapped blob carries a small second-order bias).
    rows, cols = 121, 161
    pos = pixel_positions((rows, cols), PITCH)
    h_max = 0.5 * PITCH * np.hypot(rows, cols)
    src = np.array([0.30 * cols * PITCH, 0.25 * rows * PITCH])
    blob = np.exp(-np.sum((pos - src) ** 2, axis=-1) / (2 * (0.8 * PITCH) ** 2))
    out = apply_distortion(blob, 2.0, pixel_pitch_m=PITCH, wavelength_m=LAMBDA, f_number=N)
    centroid = (out[..., None] * pos).sum(axis=(0, 1)) / out.sum()
    factor = 1 - 2 * N * LAMBDA * 2.0 * (np.hypot(*src) / h_max) ** 2 / h_max
    np.testing.assert_allclose(centroid / PITCH, src * factor / PITCH, atol=0.05)


@pytest.mark.parametrize("image_shape, kernel_shape", [((37, 53, 3), (9, 9, 1)), ((100, 81), (15, 15)),
                                                       ((5, 7, 1), (3, 3, 1))])
def test_fft_convolution_is_scipy_signal_bit_for_bit(image_shape, kernel_shape):
    # Independent implementation: scipy.signal.fftconvolve (mode "full", axes (0, 1)), which the
    # tile convolution of apply_field_psf replaced to spare scipy.signal's import; same bits.
    from scipy import signal
    from optics.aberrations import _fft_convolve_full
    rng = np.random.default_rng(3)
    image, kernel = rng.random(image_shape), rng.random(kernel_shape)
    expected = signal.fftconvolve(image, kernel, mode="full", axes=(0, 1))
    got = _fft_convolve_full(image, kernel)
    assert got.shape == expected.shape
    assert np.array_equal(got, expected)

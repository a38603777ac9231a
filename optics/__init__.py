"""CCD camera optics: radiance, spectral response, Seidel aberrations, vignetting, EMVA 1288 sensor.

Works on plain numpy arrays and does not import ``hifi``: the camera physics is
usable and testable without the simulator.
Importing is cheap and has no side effects.

Modules
-------
sensor       EMVA 1288 linear sensor: :class:`SensorModel`, noise kernels
emva         EMVA 1288 closed forms, figures of merit, saturation capacity, data-sheet presets
bayer        RGGB mosaic and bilinear demosaicing
aberrations  Seidel wavefront, ray aberrations, spot diagrams, field-dependent PSF, distortion
radiometry   camera equation, cos^4 and mechanical vignetting, photons per pixel
spectral     filter x silicon QE channel responses, spectral -> per-channel photon irradiance
sun          solar position (PSA), air mass, clear-sky broadband and spectral irradiance
illumination sun and sky on Lambertian facets per channel (photon radiance), shadow-ray facets
"""

from .aberrations import SeidelCoefficients, apply_distortion, apply_field_psf, apply_seidel
from .bayer import demosaic_bilinear, mosaic
from .illumination import (
    SunLight,
    lambertian_photon_radiance,
    scene_photon_radiance,
    sky_photon_radiance,
    sun_facing,
    sunlight,
)
from .radiometry import (
    field_angle,
    image_irradiance,
    mechanical_vignetting,
    natural_vignetting,
    photons_per_pixel,
)
from .sensor import PRESETS, SensorModel, emva_figures
from .spectral import channel_photon_irradiance, channel_response_curves
from .sun import clear_sky_irradiance, clear_sky_spectral_irradiance, solar_position

__all__ = [
    "SensorModel", "PRESETS", "emva_figures",
    "mosaic", "demosaic_bilinear",
    "SeidelCoefficients", "apply_field_psf", "apply_distortion", "apply_seidel",
    "field_angle", "image_irradiance", "natural_vignetting", "mechanical_vignetting",
    "photons_per_pixel",
    "channel_response_curves", "channel_photon_irradiance",
    "solar_position", "clear_sky_irradiance", "clear_sky_spectral_irradiance",
    "SunLight", "sunlight", "sun_facing", "lambertian_photon_radiance", "sky_photon_radiance",
    "scene_photon_radiance",
]

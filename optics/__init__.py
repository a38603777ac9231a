"""CCD camera optics: radiance, spectral response, Seidel aberrations, vignetting, EMVA 1288 sensor.

Works on plain numpy arrays and does not import ``hifi``. Importing is cheap and has no side
effects.
"""

from .bayer import demosaic_bilinear, mosaic
from .sensor import PRESETS, SensorModel, emva_figures

__all__ = ["SensorModel", "PRESETS", "emva_figures", "mosaic", "demosaic_bilinear"]

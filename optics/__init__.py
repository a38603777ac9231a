"""CCD camera optics: radiance, spectral response, Seidel aberrations, vignetting, EMVA 1288 sensor."""

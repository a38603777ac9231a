"""GNSS: RINEX reading, broadcast ephemerides, error models, receiver model and solver."""

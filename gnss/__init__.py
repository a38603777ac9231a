"""GNSS: RINEX reading, broadcast ephemerides, error models, receiver model and solver.

The numerical core works on plain arrays and xarray Datasets and does not import ``hifi``.
Public times are ``numpy.datetime64`` on the GPS time scale (GPST).

    import gnss
    nav = gnss.read_nav("brdc.nav")
    obs = gnss.read_obs("station.obs")
    sv = gnss.sv_states(nav, prns, t_gps)
    pred = gnss.model_pseudoranges(nav, receiver_ecef, t_gps, prns)
    sol = gnss.solve(obs, nav)
"""

from .gpstime import gpst_to_utc, utc_to_gpst
from .orbit import sv_states
from .precise import read_clk, read_sp3
from .receiver import model_pseudoranges
from .rinex import read_nav, read_obs
from .solver import solve

__all__ = ["read_nav", "read_obs", "sv_states", "model_pseudoranges", "solve", "read_sp3", "read_clk",
           "utc_to_gpst", "gpst_to_utc"]

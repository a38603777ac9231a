"""RINEX 3.04: a ``gnss_receiver`` dataset as the observation file a real receiver would log,
with the navigation file the simulation used beside it (``hifi export DIR/NAME.nc --format
rinex --out DIR``).

The exporter lives beside the ``gnss_receiver`` model, not in :mod:`hifi.exporters`: it writes
through :mod:`gnss`, which the core does not import. ``hifi export`` finds it by its entry point
(group ``hifi.exporters``, name ``rinex``) like every other format."""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from hifi.exporters import Exporter, ExportError
from hifi.exporters._common import require


def write_rinex(ds, path: Path) -> Path:
    """Write ``path/<sensor>.rnx`` (observations: C, L, D, S of every signal, loss-of-lock and
    signal-strength indices; :func:`gnss.rinex_out.write_obs`) and a copy of the navigation
    file named in the dataset's ``nav_file`` attribute. Epochs are the receiver's time tags
    (GPST plus its clock offset), as a receiver dates its observations."""
    import xarray as xr                          # here: the CLI loads every exporter for its help

    from gnss.rinex_out import write_obs

    require(ds, "rinex", ("code", "phase", "doppler", "cn0", "lli", "time_tag"),
            "the raw observables of a gnss_receiver dataset:")
    nav = Path(str(ds.attrs.get("nav_file", "")))
    if not nav.is_file():
        raise ExportError(f"rinex: the navigation file the run used, nav_file = {str(nav)!r}, is not there; "
                          f"allowed: a dataset whose nav_file still exists (it is copied beside the observations)")
    t = np.asarray(ds["time_tag"].values, dtype="datetime64[ns]")
    obs = xr.Dataset({v: (("epoch", "sv", "signal"), np.asarray(ds[v].values)) for v in
                      ("code", "phase", "doppler", "cn0", "lli")},
                     coords={"epoch": t, "sv": ds["sv"].values, "signal": ds["signal"].values})
    approx = np.asarray(ds["true_position_ecef"].values, dtype=float).reshape(-1, 3)[0] \
        if "true_position_ecef" in ds else np.zeros(3)
    path.mkdir(parents=True, exist_ok=True)
    name = str(ds.attrs.get("sensor_name", "gnss")) or "gnss"
    channels = None
    if any(str(x).startswith("R") for x in ds["sv"].values):
        from gnss.rinex import read_nav
        from gnss.solver import glonass_channels
        glo = [str(x) for x in ds["sv"].values if str(x).startswith("R")]
        k = glonass_channels(read_nav(nav, systems=("R",)), glo)
        channels = {sv: int(c) for sv, c in zip(glo, k) if np.isfinite(c)}
    write_obs(obs, path / f"{name}.rnx", marker_name=name.upper()[:60], approx_position_ecef=approx,
              glonass_channels=channels)
    shutil.copyfile(nav, path / nav.name)
    return path                                  # the directory, moved into place whole


#: Registered in the entry-point group ``hifi.exporters`` as ``rinex``.
EXPORTER = Exporter(name="rinex", write=write_rinex, suffix="", scope="sensor", per_frame=False,
                    summary="RINEX 3.04 observations (C L D S of every signal) of a gnss_receiver, with its nav file")

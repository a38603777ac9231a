"""Raw sensor packets in a pcap file (``hifi export DIR/NAME.nc --format pcap``).

Dispatches on the dataset's ``sensor_model``: an ``ouster`` dataset becomes Ouster UDP lidar
packets with the sensor's metadata JSON beside the pcap
(:func:`hifi.exporters._pcap_ouster.write_ouster_pcap`). Velodyne models are being added in
parallel (issue 13); any other model raises :class:`ExportError` naming the ones supported.
"""

from __future__ import annotations

from pathlib import Path

from ._common import Exporter, ExportError
from ._pcap_ouster import write_ouster_pcap

#: sensor_model -> writer ``(ds, path) -> list of paths``.
WRITERS = {"ouster": write_ouster_pcap}


def write_pcap(ds, path: Path) -> list:
    """Write ``ds`` as the raw packets its sensor sends (see :data:`WRITERS`).

    Raises
    ------
    ExportError
        The dataset's model has no packet writer (the message lists the models that have one).
    """
    model = ds.attrs.get("sensor_model")
    writer = WRITERS.get(model)
    if writer is None:
        raise ExportError(f"pcap: sensor_model {model!r} has no packet format; supported models: "
                          f"{', '.join(sorted(WRITERS))}")
    return writer(ds, path)


#: Registered in the entry-point group ``hifi.exporters`` as ``pcap``.
EXPORTER = Exporter(name="pcap", write=write_pcap, suffix=".pcap", scope="sensor", per_frame=False,
                    summary="raw UDP packets as the sensor sends them (Ouster: lidar packets of the metadata's "
                            "profile + metadata JSON)")

"""Raw sensor packets in a pcap file: what a lidar sends on its Ethernet port, for its own drivers.

``hifi export DIR/NAME.nc --format pcap`` dispatches on the dataset's ``sensor_model`` to the
writer of that sensor family (:data:`PCAP_WRITERS`); each writes the pcap and, where the
family's decoders need one, the calibration or metadata file beside it.
"""

from __future__ import annotations

from pathlib import Path

from ._common import Exporter, ExportError


def _velodyne(ds, path: Path) -> list[Path]:
    # imported when used, so that importing hifi.exporters stays cheap
    from ._pcap_velodyne import write_velodyne_pcap
    return write_velodyne_pcap(ds, path)


def _ouster(ds, path: Path) -> list[Path]:
    from ._pcap_ouster import write_ouster_pcap
    return write_ouster_pcap(ds, path)


#: Model name -> writer ``write(ds, path) -> list[Path]`` (the pcap first).
PCAP_WRITERS = {
    "vlp16": _velodyne,
    "hdl32e": _velodyne,
    "hdl64e_s2": _velodyne,
    "ouster": _ouster,
}


def write_pcap(ds, path: Path) -> list[Path]:
    """Write ``ds`` as its sensor's raw packets (see :data:`PCAP_WRITERS`).

    Raises
    ------
    ExportError
        The dataset's ``sensor_model`` has no packet format here; the message names it and
        the models that have one.
    """
    model = ds.attrs.get("sensor_model")
    writer = PCAP_WRITERS.get(model)
    if writer is None:
        raise ExportError(f"pcap: sensor_model {model!r} has no packet format; supported models: "
                          f"{', '.join(sorted(PCAP_WRITERS))}")
    return writer(ds, Path(path))


#: Registered in the entry-point group ``hifi.exporters`` as ``pcap``.
EXPORTER = Exporter(name="pcap", write=write_pcap, suffix=".pcap", scope="sensor", per_frame=False,
                    summary="raw sensor UDP packets in a pcap (Velodyne VLP-16, HDL-32E, HDL-64E S2 with the "
                            "calibration beside it; Ouster lidar packets of the metadata's profile with the "
                            "metadata JSON beside it)")

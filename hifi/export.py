"""The built-in exporters' writers and readers under one name (``from hifi.export import ...``).

The formats themselves live in :mod:`hifi.exporters` (one module per format, registered in the
entry-point group ``hifi.exporters``); this module gathers their public functions so that
``write_pcd``, ``read_pcd``, ``write_las`` ... are importable from one place, and
:data:`FORMATS` lists every registered format.
"""

from __future__ import annotations

from .exporters import (ExportError, Exporter, ExportWarning, available_exporters, export, load_exporter,
                        register_exporter)
from .exporters.evd import EVD_RECORD, read_evd, write_evd
from .exporters.kitti import KittiScan, read_kitti_bin, write_kitti
from .exporters.mcap import write_mcap
from .exporters.semantickitti import SEMANTIC_KITTI_LABELS, write_semantickitti
from .exporters.las import (LAS_ADJUSTED_GPS_OFFSET_S, LAS_INTENSITY_FULL_SCALE, LAS_SCALE_M,
                            gps_seconds_from_utc, las_classification, write_las)
from .exporters.pcd import PCD_FIELDS, PcdCloud, read_pcd, write_pcd
from .exporters.ply import PLY_PROPERTIES, read_ply, write_ply
from .exporters.ptx import read_ptx, write_ptx

__all__ = ["EVD_RECORD"  # noqa: F822  (FORMATS comes from __getattr__)
           , "ExportError", "ExportWarning", "Exporter", "FORMATS", "KittiScan", "LAS_ADJUSTED_GPS_OFFSET_S",
           "LAS_INTENSITY_FULL_SCALE", "LAS_SCALE_M", "PCD_FIELDS", "PLY_PROPERTIES", "PcdCloud",
           "available_exporters", "export", "gps_seconds_from_utc", "las_classification", "load_exporter",
           "read_evd", "read_kitti_bin", "read_pcd", "read_ply", "read_ptx", "register_exporter",
           "SEMANTIC_KITTI_LABELS", "write_evd", "write_kitti", "write_las", "write_mcap", "write_pcd", "write_ply",
           "write_ptx", "write_semantickitti"]


def __getattr__(name):
    if name == "FORMATS":            # every registered format, entry points included
        return tuple(available_exporters())
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

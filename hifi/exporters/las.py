"""ASPRS LAS 1.4 (point format 6) through laspy: intensity, classification, GPS time."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import numpy as np

from ..dataset import POINTS_NOISY
from ..timebase import Epoch
from ._common import Exporter, ExportError, detected_returns, require

#: Offset of LAS "adjusted standard GPS time" [s]: GPS seconds since the GPS epoch minus 1e9
#: (ASPRS LAS 1.4 R15, Global Encoding bit 0).
LAS_ADJUSTED_GPS_OFFSET_S = 1_000_000_000

#: LAS coordinate scale [m]: 0.1 mm, so a coordinate read back is within half of it, 0.05 mm,
#: of the dataset value, and int32 coordinates span +-214 km around the offset.
LAS_SCALE_M = 1e-4

#: Intensity [1] mapped to the LAS full scale 65535 (see :func:`write_las`).
LAS_INTENSITY_FULL_SCALE = 1.0


def gps_seconds_from_utc(start_utc: str, t_s) -> tuple[np.ndarray, np.ndarray]:
    """GPS time of instants ``start_utc + t_s`` as integer seconds and a fraction.

    ``start_utc`` is the dataset's ISO 8601 attribute; see :meth:`hifi.timebase.Epoch.gps_seconds`.
    """
    try:
        epoch = Epoch.from_utc(str(start_utc))
    except ValueError:
        raise ExportError(f"start_utc = {start_utc!r}: expected an ISO 8601 UTC time such as "
                          f"'2024-05-01T12:00:00Z'") from None
    return epoch.gps_seconds(t_s)


def las_classification(object_id, *, annotation=None, class_id=None) -> np.ndarray:
    """LAS classification (uint8) of returns from their class annotation or object id.

    Parameters
    ----------
    object_id : array_like of int
        Object hit by each return, -1 for none [1].
    annotation : array_like of uint8, optional
        Semantic class id of each return (same shape as ``object_id``) [1].
    class_id : sequence of int, optional
        Class id of every object, indexed by object id [1].

    Returns
    -------
    numpy.ndarray of uint8
        Same shape as ``object_id``.

    Notes
    -----
    In order of preference: ``annotation`` when given; else ``class_id[object_id]`` when
    ``class_id`` is given (object ids outside it, and -1, give 0); else 0, ASPRS "created, never
    classified". The ids are hifi's class ids (the order of the scenario's ``class`` names),
    written as they are: they are not the ASPRS standard codes (2 ground, 6 building, ...).

    Raises
    ------
    ExportError
        ``class_id`` is not a sequence of integers, or a class id is outside 0..255.
    """
    oid = np.asarray(object_id, dtype=np.int64)
    if annotation is not None:
        cls = np.broadcast_to(np.asarray(annotation), oid.shape)
    elif class_id is not None:
        lut = np.atleast_1d(np.asarray(class_id))
        if lut.ndim != 1 or not np.issubdtype(lut.dtype, np.integer):
            raise ExportError(f"attribute class_id = {class_id!r}: expected a sequence of integer "
                              f"class ids indexed by object id")
        ok = (oid >= 0) & (oid < lut.size)
        cls = np.where(ok, np.append(lut, 0)[np.where(ok, oid, lut.size)], 0)
    else:
        return np.zeros(oid.shape, dtype=np.uint8)
    if cls.size and (cls.min() < 0 or cls.max() > 255):
        raise ExportError(f"LAS classification must be 0..255; the dataset's class ids span "
                          f"{cls.min()}..{cls.max()}")
    return cls.astype(np.uint8)


def write_las(ds, path: Path, *, intensity_full_scale: float = LAS_INTENSITY_FULL_SCALE) -> Path:
    """ASPRS LAS 1.4, point data record format 6, through laspy: the detected returns.

    Parameters
    ----------
    ds : xarray.Dataset
        Range-sensor dataset with ``x_noisy y_noisy z_noisy intensity object_id timestamp
        detected`` and the global attribute ``start_utc``; optional: a per-point ``annotation``
        variable (uint8) or a global attribute ``class_id`` (class id per object id), see
        :func:`las_classification`.
    path : pathlib.Path
        Output file.
    intensity_full_scale : float
        Intensity [1] written as 65535.

    Returns
    -------
    pathlib.Path

    Notes
    -----
    * Coordinates: the reported (noisy) point in the scene frame (local ENU, no CRS record).
      Scale :data:`LAS_SCALE_M` = 0.1 mm on every axis; offset = the midpoint of the points'
      extent rounded to a whole metre (0 when empty). A coordinate read back is within 0.05 mm
      of the dataset value; points spanning more than about 429 km on an axis raise
      :class:`ExportError`.
    * Intensity: ``round(65535 * clip(intensity / intensity_full_scale, 0, 1))``, uint16. The
      LAS specification normalises intensity to 16 bits by the sensor's dynamic range; hifi's
      intensity is relative to a white Lambertian target at normal incidence at 1 m, so the
      default full scale 1.0 is that target (brighter returns, closer than 1 m, saturate).
    * Classification: :func:`las_classification`.
    * GPS time: adjusted standard GPS time, GPS seconds since 1980-01-06 minus 1e9, with Global
      Encoding bit 0 set; GPST from ``start_utc`` + ``timestamp`` with the leap-second table
      (:func:`gps_seconds_from_utc`). float64 resolves it to about 0.1 us.
    * ``return_number`` = ``number_of_returns`` = 1 (first return only); ``point_source_id``,
      ``scan_angle``, ``user_data`` 0; ``system_identifier`` ``"hifi <sensor_model>"``.

    References
    ----------
    ASPRS, "LAS Specification 1.4 - R15", 2019 (point format 6, Global Encoding, intensity).
    laspy, https://laspy.readthedocs.io
    """
    try:
        import laspy
        from laspy.header import GpsTimeType
    except ImportError:
        raise ImportError("LAS export needs laspy: pip install laspy") from None
    require(ds, "LAS", POINTS_NOISY + ("intensity", "object_id", "timestamp", "detected"))
    if "start_utc" not in ds.attrs:
        raise ExportError(f"LAS needs the global attribute start_utc (UTC epoch of t = 0) for GPS time; "
                          f"the dataset (sensor_model {ds.attrs.get('sensor_model')!r}) lacks it")
    names = list(POINTS_NOISY) + ["intensity", "object_id", "timestamp"]
    if "annotation" in ds.variables:
        names.append("annotation")
    det = detected_returns(ds, names)
    xyz = np.stack([np.asarray(det[v], dtype=float) for v in POINTS_NOISY], axis=-1)
    if xyz.size:
        offsets = np.round((xyz.min(axis=0) + xyz.max(axis=0)) / 2.0)
    else:
        offsets = np.zeros(3)
    ints = np.round((xyz - offsets) / LAS_SCALE_M)
    limit = np.iinfo(np.int32).max
    if ints.size and np.abs(ints).max() > limit:
        raise ExportError(f"LAS: the points span more than {2 * limit * LAS_SCALE_M / 1e3:.0f} km on an axis, "
                          f"beyond int32 coordinates at scale {LAS_SCALE_M} m")
    classification = las_classification(det["object_id"], annotation=det.get("annotation"),
                                        class_id=ds.attrs.get("class_id"))
    sec, frac = gps_seconds_from_utc(ds.attrs["start_utc"], det["timestamp"])
    gps_time = (sec - LAS_ADJUSTED_GPS_OFFSET_S).astype(float) + frac
    inten = np.clip(np.nan_to_num(np.asarray(det["intensity"], dtype=float) / intensity_full_scale), 0.0, 1.0)

    header = laspy.LasHeader(point_format=6, version="1.4")
    header.scales = np.full(3, LAS_SCALE_M)
    header.offsets = offsets
    header.global_encoding.gps_time_type = GpsTimeType.STANDARD
    header.system_identifier = f"hifi {ds.attrs.get('sensor_model', '')}"[:32]
    header.generating_software = f"hifi {ds.attrs.get('hifi_version', '')}".strip()[:32]
    # Creation date = the simulated epoch, not the day of export, so exports are reproducible.
    header.creation_date = _dt.datetime.fromisoformat(ds.attrs["start_utc"].replace("Z", "+00:00")).date()
    las = laspy.LasData(header)
    n = xyz.shape[0]
    las.X, las.Y, las.Z = (ints[:, i].astype(np.int32) for i in range(3))
    las.intensity = np.round(inten * 65535.0).astype(np.uint16)
    las.return_number = np.ones(n, dtype=np.uint8)
    las.number_of_returns = np.ones(n, dtype=np.uint8)
    las.classification = classification
    las.gps_time = gps_time
    las.write(str(path))
    return path


#: Registered in the entry-point group ``hifi.exporters`` as ``las``.
EXPORTER = Exporter(name="las", write=write_las, suffix=".las", scope="sensor", per_frame=False,
                    summary="ASPRS LAS 1.4 point format 6 (laspy): intensity, classification, adjusted GPS time")

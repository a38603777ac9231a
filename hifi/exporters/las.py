"""ASPRS LAS 1.4 (point format 6) through laspy: intensity, classification, GPS time."""

from __future__ import annotations

import datetime as _dt
from pathlib import Path

import numpy as np

from ..run.dataset import POINTS_NOISY
from ..api.timebase import Epoch
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

    ``start_utc`` is the dataset's ISO 8601 attribute; see :meth:`hifi.api.timebase.Epoch.gps_seconds`.
    """
    try:
        epoch = Epoch.from_utc(str(start_utc))
    except ValueError:
        raise ExportError(f"start_utc = {start_utc!r}: expected an ISO 8601 UTC time such as "
                          f"'2024-05-01T12:00:00Z'") from None
    return epoch.gps_seconds(t_s)


#: ASPRS standard point classes (LAS 1.4 R15, Table 17) and the hifi class names that map to
#: them, matched case-insensitively with blanks and hyphens as underscores and a plural ``s``
#: dropped (:func:`asprs_code`). A class not listed gets a user-definable code 64, 65, ... in
#: the order of its hifi class id (:func:`asprs_class_map`): vehicles, people, signs, glass ...
#: have no ASPRS code. Choices: ``grass`` is low vegetation (3), not ground; ``wall`` is a
#: building (6); ``vegetation`` alone is high vegetation (5).
ASPRS_CLASSES = {
    1: ("unclassified", "unlabelled", "unlabeled", "unknown", "other"),
    2: ("ground", "terrain", "earth", "soil", "dirt", "gravel", "sand", "bare_earth", "floor"),
    3: ("low_vegetation", "grass", "lawn", "meadow", "crop"),
    4: ("medium_vegetation", "bush", "shrub", "hedge"),
    5: ("high_vegetation", "vegetation", "tree", "forest", "foliage"),
    6: ("building", "wall", "house", "roof", "facade"),
    7: ("low_point", "noise"),
    9: ("water", "lake", "river", "sea"),
    10: ("rail", "railway", "railroad"),
    11: ("road_surface", "road", "asphalt", "street", "pavement", "lane"),
    13: ("wire_guard", "shield_wire"),
    14: ("wire_conductor", "wire", "power_line", "cable"),
    15: ("transmission_tower", "tower", "pylon"),
    16: ("wire_structure_connector", "insulator"),
    17: ("bridge_deck", "bridge"),
    18: ("high_noise",),
}
_ASPRS_BY_NAME = {name: code for code, names in ASPRS_CLASSES.items() for name in names}

#: First ASPRS user-definable class code (LAS 1.4 R15, Table 17: 64-255 user definable).
ASPRS_USER_CODE_MIN = 64

#: User id and record id of the VLR holding the full hifi class -> LAS code table as text.
HIFI_CLASS_MAP_VLR = ("hifi", 1)


def asprs_code(class_name: str) -> int | None:
    """ASPRS standard class code of a hifi class name, or None when it has none (see :data:`ASPRS_CLASSES`)."""
    key = "_".join(str(class_name).strip().lower().replace("-", " ").split())
    if key in _ASPRS_BY_NAME:
        return _ASPRS_BY_NAME[key]
    if key.endswith("s") and key[:-1] in _ASPRS_BY_NAME:
        return _ASPRS_BY_NAME[key[:-1]]
    return None


def asprs_class_map(class_names) -> np.ndarray:
    """LAS classification code (uint8) of every hifi class id, indexed by class id.

    Parameters
    ----------
    class_names : sequence of str
        hifi class names indexed by class id (``annotation``'s ``flag_meanings``; id 0 is
        ``unlabelled``).

    Returns
    -------
    numpy.ndarray of uint8
        ``asprs_code(name)`` where it exists; otherwise 64, 65, ... in the order of class id.

    Raises
    ------
    ExportError
        More classes without an ASPRS code than the 192 user-definable codes.
    """
    codes, user = [], ASPRS_USER_CODE_MIN
    for name in class_names:
        code = asprs_code(name)
        if code is None:
            if user > 255:
                raise ExportError(f"LAS: more than {256 - ASPRS_USER_CODE_MIN} classes without an ASPRS code; "
                                  f"class {name!r} has no user-definable code left")
            code, user = user, user + 1
        codes.append(code)
    return np.asarray(codes, dtype=np.uint8)


def las_classification(object_id, *, annotation=None, class_id=None, class_names=None,
                       object_class=None) -> np.ndarray:
    """LAS classification (uint8) of returns from their class annotation or object id.

    Parameters
    ----------
    object_id : array_like of int
        Object hit by each return, -1 for none [1].
    annotation : array_like of uint8, optional
        Semantic class id of each return (same shape as ``object_id``) [1].
    class_id : sequence of int, optional
        Class id of every object, indexed by object id [1].
    class_names : sequence of str, optional
        hifi class names indexed by class id (``annotation``'s ``flag_meanings``): with it the
        class ids of ``annotation`` or ``class_id`` are mapped to ASPRS codes
        (:func:`asprs_class_map`).
    object_class : sequence of str, optional
        Class name of every object, indexed by object id (the ``object_class`` coordinate).

    Returns
    -------
    numpy.ndarray of uint8
        Same shape as ``object_id``.

    Notes
    -----
    In order of preference: ``annotation`` when given; else the class of the object hit,
    ``object_class[object_id]`` or ``class_id[object_id]`` (object ids outside them, and -1,
    give 0); else 0, ASPRS "created, never classified". With class names (``class_names`` or
    ``object_class``) the result is an ASPRS code: the standard code of the class name
    (:data:`ASPRS_CLASSES`; ``unlabelled`` is 1, "unclassified") or a user-definable code
    64+. Without names (a dataset built by hand) the class ids are written as they are.

    Raises
    ------
    ExportError
        ``class_id`` is not a sequence of integers, or a class id is outside 0..255.
    """
    oid = np.asarray(object_id, dtype=np.int64)
    if object_class is not None and annotation is None:
        names = [str(c) for c in np.asarray(object_class).ravel()]
        class_names = list(dict.fromkeys(names))               # ids in order of first object
        class_id = [class_names.index(c) for c in names]
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
    if class_names is None:
        return cls.astype(np.uint8)
    lut = asprs_class_map(class_names)
    cls = np.asarray(cls, dtype=np.int64)
    if cls.size and cls.max() >= lut.size:
        raise ExportError(f"LAS: class id {int(cls.max())} has no name ({lut.size} class names)")
    codes = lut[cls]
    if object_class is not None and annotation is None:      # misses and unknown objects: 0
        codes = np.where((oid >= 0) & (oid < len(names)), codes, 0)
    return codes.astype(np.uint8)


def las_crs_wkt(lat_deg: float, lon_deg: float, height_m: float) -> str:
    """OGC WKT2 (ISO 19162:2019) of the scene frame: local ENU at a geodetic origin on WGS 84.

    Parameters
    ----------
    lat_deg, lon_deg : float
        Geodetic latitude and longitude of the scene origin [deg] (``origin_lat_deg``, ...).
    height_m : float
        Ellipsoidal height of the scene origin [m].

    Returns
    -------
    str
        A ``PROJCRS`` with the EPSG method 9837 "Geographic/topocentric conversions" and a 3-D
        Cartesian east, north, up system in metres: exactly hifi's scene frame (the frame
        ``pymap3d.enu2geodetic`` uses for the GNSS receiver).

    Notes
    -----
    WKT1 (OGC 01-009) has no topocentric conversion, so a ``LOCAL_CS`` could only name the
    origin in text; this WKT2 record lets PROJ (``pyproj.CRS.from_wkt``) place the points on
    the globe. Checked with pyproj 3.7 / PROJ 9.5: E, N, U -> lat, lon, h agrees with pymap3d
    to 1e-9 m.
    """
    deg = 'ANGLEUNIT["degree",0.0174532925199433]'
    m = 'LENGTHUNIT["metre",1]'
    return (
        f'PROJCRS["hifi scene frame: local ENU at lat {lat_deg!r} deg, lon {lon_deg!r} deg, h {height_m!r} m",'
        f'BASEGEOGCRS["WGS 84",DATUM["World Geodetic System 1984",ELLIPSOID["WGS 84",6378137,298.257223563,{m}]],'
        f'PRIMEM["Greenwich",0,{deg}],ID["EPSG",4979]],'
        f'CONVERSION["topocentric at the scenario origin",'
        f'METHOD["Geographic/topocentric conversions",ID["EPSG",9837]],'
        f'PARAMETER["Latitude of topocentric origin",{float(lat_deg)!r},{deg},ID["EPSG",8834]],'
        f'PARAMETER["Longitude of topocentric origin",{float(lon_deg)!r},{deg},ID["EPSG",8835]],'
        f'PARAMETER["Ellipsoidal height of topocentric origin",{float(height_m)!r},{m},ID["EPSG",8836]]],'
        f'CS[Cartesian,3],AXIS["topocentric East (U)",east,ORDER[1],{m}],'
        f'AXIS["topocentric North (V)",north,ORDER[2],{m}],'
        f'AXIS["topocentric height (W)",up,ORDER[3],{m}]]'
    )


def _lookup_description(name: str) -> str:
    """A LAS classification-lookup description: ASCII letters, digits and blanks, 15 bytes."""
    text = "".join(c if (c.isascii() and c.isalnum()) else " " for c in str(name))
    return " ".join(text.split())[:15]


def write_las(ds, path: Path, *, intensity_full_scale: float | None = None) -> Path:
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
    intensity_full_scale : float, optional
        Intensity written as 65535; default: the ``valid_max`` attribute of ``intensity`` (the
        sensor's integer code range, e.g. 255 for a Velodyne byte), else
        :data:`LAS_INTENSITY_FULL_SCALE`.

    Returns
    -------
    pathlib.Path

    Notes
    -----
    * Coordinates: the reported (noisy) point in the scene frame, local east-north-up at the
      scenario origin; when the dataset has ``origin_lat_deg``, ``origin_lon_deg`` and
      ``origin_height_m`` an OGC WKT VLR (``LASF_Projection`` 2112, WKT2, Global Encoding WKT
      bit set) describes that frame as a topocentric projected CRS on WGS 84 (:func:`las_crs_wkt`;
      ``las.header.parse_crs()`` with pyproj).
      Scale :data:`LAS_SCALE_M` = 0.1 mm on every axis; offset = the midpoint of the points'
      extent rounded to a whole metre (0 when empty). A coordinate read back is within 0.05 mm
      of the dataset value; points spanning more than about 429 km on an axis raise
      :class:`ExportError`.
    * Intensity: ``round(65535 * clip(intensity / intensity_full_scale, 0, 1))``, uint16. The
      LAS specification normalises intensity to 16 bits by the sensor's dynamic range (LAS 1.4
      R15, point record "Intensity"): for a sensor that reports an integer code with
      ``valid_max`` (the Velodynes' byte), that is its full scale; a relative intensity without
      it uses 1.0, a white Lambertian target at normal incidence at 1 m.
    * Classification: :func:`las_classification`, ASPRS codes from the class names of
      ``annotation`` (its ``flag_meanings``) or of ``object_class``: standard codes where the
      class has one (:data:`ASPRS_CLASSES`), user-definable 64+ otherwise. The mapping is
      written twice: the LAS 1.4 Classification Lookup VLR (``LASF_Spec`` 0: code -> 15-character
      description) and a ``hifi`` VLR (record 1) holding ``code name`` per hifi class as UTF-8 text.
    * GPS time: adjusted standard GPS time, GPS seconds since 1980-01-06 minus 1e9, with Global
      Encoding bit 0 set; GPST from ``start_utc`` + ``timestamp`` with the leap-second table
      (:func:`gps_seconds_from_utc`). float64 resolves it to about 0.1 us.
    * ``return_number`` / ``number_of_returns`` from
      :func:`hifi.exporters._common.detected_returns`: 1 / 1 for single-return sensors; a
      dual-return pulse with two echoes gives 1 (nearer) and 2 (farther) of 2, one echo 1 of 1
      (its copy in the second slot is dropped); ``point_source_id``,
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
    class_names = _class_names(ds)
    object_class = ds["object_class"].values if "object_class" in ds.variables else None
    classification = las_classification(det["object_id"], annotation=det.get("annotation"),
                                        class_id=ds.attrs.get("class_id"), class_names=class_names,
                                        object_class=object_class)
    sec, frac = gps_seconds_from_utc(ds.attrs["start_utc"], det["timestamp"])
    gps_time = (sec - LAS_ADJUSTED_GPS_OFFSET_S).astype(float) + frac
    if intensity_full_scale is None:
        intensity_full_scale = float(ds["intensity"].attrs.get("valid_max", LAS_INTENSITY_FULL_SCALE))
    inten = np.clip(np.nan_to_num(np.asarray(det["intensity"], dtype=float) / intensity_full_scale), 0.0, 1.0)

    header = laspy.LasHeader(point_format=6, version="1.4")
    header.scales = np.full(3, LAS_SCALE_M)
    header.offsets = offsets
    header.global_encoding.gps_time_type = GpsTimeType.STANDARD
    header.system_identifier = f"hifi {ds.attrs.get('sensor_model', '')}"[:32]
    header.generating_software = f"hifi {ds.attrs.get('hifi_version', '')}".strip()[:32]
    # Creation date = the simulated epoch, not the day of export, so exports are reproducible.
    header.creation_date = _dt.datetime.fromisoformat(ds.attrs["start_utc"].replace("Z", "+00:00")).date()
    if class_names is None and object_class is not None and "annotation" not in det:
        class_names = list(dict.fromkeys(str(c) for c in np.asarray(object_class).ravel()))
    if class_names is not None:
        codes = asprs_class_map(class_names)
        lookup = laspy.vlrs.known.ClassificationLookupVlr()
        for code in sorted({int(c) for c in codes}):
            lookup[code] = _lookup_description(" ".join(n for n, c in zip(class_names, codes) if c == code))
        header.vlrs.append(lookup)
        table = "".join(f"{int(c)} {n}\n" for n, c in zip(class_names, codes))
        header.vlrs.append(laspy.VLR(user_id=HIFI_CLASS_MAP_VLR[0], record_id=HIFI_CLASS_MAP_VLR[1],
                                     description="hifi class -> LAS code",
                                     record_data=("# LAS classification code, hifi class name\n" + table)
                                     .encode("utf-8")))
    origin = [ds.attrs.get(k) for k in ("origin_lat_deg", "origin_lon_deg", "origin_height_m")]
    if all(v is not None for v in origin):
        header.vlrs.append(laspy.vlrs.known.WktCoordinateSystemVlr(las_crs_wkt(*(float(v) for v in origin))))
        header.global_encoding.wkt = True
    las = laspy.LasData(header)
    las.X, las.Y, las.Z = (ints[:, i].astype(np.int32) for i in range(3))
    las.intensity = np.round(inten * 65535.0).astype(np.uint16)
    las.return_number = det["return_number"]
    las.number_of_returns = det["number_of_returns"]
    las.classification = classification
    las.gps_time = gps_time
    las.write(str(path))
    return path


def _class_names(ds):
    """hifi class names indexed by class id, from ``annotation``'s CF ``flag_meanings`` (or None)."""
    if "annotation" not in ds.variables:
        return None
    meanings = ds["annotation"].attrs.get("flag_meanings")
    values = ds["annotation"].attrs.get("flag_values")
    if meanings is None:
        return None
    names = str(meanings).split()
    if values is not None and list(np.atleast_1d(values)) != list(range(len(names))):
        raise ExportError(f"annotation: flag_values {values!r} are not 0..{len(names) - 1} for the "
                          f"{len(names)} flag_meanings")
    return names


#: Registered in the entry-point group ``hifi.exporters`` as ``las``.
EXPORTER = Exporter(name="las", write=write_las, suffix=".las", scope="sensor", per_frame=False,
                    summary="ASPRS LAS 1.4 point format 6 (laspy): intensity, classification, adjusted GPS time")

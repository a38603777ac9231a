"""Textures at the hit: a scene-file part's base-colour texture and reflectance map, sampled
where each ray lands.

A part of a glTF or OBJ file loaded with parts (:mod:`hifi.world.scene_files`) may carry a
base-colour texture (glTF ``pbrMetallicRoughness.baseColorTexture``, MTL ``map_Kd``) over its
texture coordinates, and the scenario may give it a reflectance map
(``[scene_files.STEM] reflectance_maps``, :mod:`hifi.run.scene_parts`). The part's
:class:`~hifi.world.scene.SceneObject` then holds a :class:`SurfaceTexture`, and
:class:`HitTextures` answers, per hit:

- :meth:`HitTextures.colour`: the linear RGB reflectance a camera sees, the file's base
  colour at the hit: ``baseColorFactor x texture`` (glTF 2.0) or ``Kd x map_Kd`` (MTL);
- :meth:`HitTextures.reflectance`: the diffuse reflectance a lidar sees at its wavelength: the
  reflectance map's value where the part has one, else the material's reflectance scaled by the
  hit's luminance relative to the material's own (:func:`luminance_scaled_reflectance`).

The hit's texture coordinates are found after the cast, from what the caster returns (the hit
point and the face), for the hits on textured objects only (:meth:`HitTextures.texcoords`,
through each face's affine map from points to coordinates, :func:`texcoord_maps`): the caster
and its kernels are untouched, and a scene without textures casts and measures exactly as
before (:class:`HitTextures` then indexes the per-object table, the operation the sensors did
themselves).

Conventions: texture coordinates are trimesh's, ``v`` up with the origin at the image's
bottom-left (OBJ's convention; trimesh turns glTF's, whose origin is the top-left, into it on
loading: ``v = 1 - v_glTF``); an image is an array of rows from the top. Sampling is bilinear
between texel centres with the sampler's wrap mode per axis (OpenGL's rule, which glTF's
samplers name), on values decoded to linear first (glTF 2.0: "the transfer function SHOULD be
decoded before performing linear interpolation").

References
----------
Khronos Group, *glTF 2.0 Specification* (2021): 3.8.3 (texture coordinates: the origin is the
image's upper left corner), 3.9.2 (base colour: ``baseColorFactor`` times the texture, whose
texels are sRGB-encoded and decoded to linear before filtering), 3.8.4.3 (wrapping: repeat,
mirrored repeat, clamp to edge), 5.26 (samplers: ``wrapS``, ``wrapT``, default 10497 REPEAT).
M. Segal and K. Akeley, *The OpenGL Graphics System: A Specification, Version 4.6 (Core
Profile)*, Khronos Group, 2019, 8.14.2 (coordinate wrapping and texel selection: texel centres
at half-integers, the REPEAT, MIRRORED_REPEAT and CLAMP_TO_EDGE index rules).
IEC 61966-2-1:1999, *Default RGB colour space - sRGB* (the transfer function, 5.2).
C. Ericson, *Real-Time Collision Detection*, Morgan Kaufmann, 2005, 3.4 (barycentric
coordinates of a point by dot products).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..constants import DEGENERATE_TRIANGLE_REL, REC709_LUMINANCE_RGB

#: glTF sampler wrap codes (WebGL enums, glTF 2.0 5.26) -> the names used here.
GLTF_WRAP = {10497: "repeat", 33071: "clamp", 33648: "mirror"}

#: Wrap modes of :func:`sample_bilinear`, per axis.
WRAP_MODES = ("repeat", "clamp", "mirror")

#: glTF's default sampler: REPEAT on both axes (glTF 2.0, 5.26).
DEFAULT_WRAP = ("repeat", "repeat")

#: Pillow modes of a reflectance map (a greyscale image of linear reflectance) -> full scale:
#: 8-bit ``L`` (and ``LA``, its alpha dropped), 16-bit ``I;16``/``I;16B``/``I`` (what Pillow
#: makes of a 16-bit PNG or TIFF), 32-bit float ``F`` (the value itself).
REFLECTANCE_MAP_MODES = {"L": 255.0, "LA": 255.0, "I;16": 65535.0, "I;16L": 65535.0, "I;16B": 65535.0,
                         "I": 65535.0, "F": 1.0}


def srgb_to_linear(encoded) -> np.ndarray:
    """sRGB-encoded values (0..1) to linear ones (0..1): the sRGB transfer function's inverse.

    Parameters
    ----------
    encoded : array_like
        Encoded values, 0..1 (an 8-bit texel over 255).

    Returns
    -------
    ndarray
        ``c / 12.92`` for ``c <= 0.04045``, else ``((c + 0.055) / 1.055) ** 2.4``
        (IEC 61966-2-1:1999, 5.2).
    """
    c = np.asarray(encoded, dtype=float)
    return np.where(c <= 0.04045, c / 12.92, ((c + 0.055) / 1.055) ** 2.4)


#: Linear value of each 8-bit sRGB code (texel value 0..255 -> 0..1).
SRGB8_TO_LINEAR = srgb_to_linear(np.arange(256) / 255.0)


def luminance(rgb) -> np.ndarray:
    """Relative luminance of linear RGB, ``0.2126 R + 0.7152 G + 0.0722 B`` (..., 3) -> (...)
    (:data:`hifi.constants.REC709_LUMINANCE_RGB`)."""
    c = np.asarray(rgb, dtype=float)
    w = REC709_LUMINANCE_RGB
    return w[0] * c[..., 0] + w[1] * c[..., 1] + w[2] * c[..., 2]


@dataclass(frozen=True, eq=False)
class TextureImage:
    """A decoded image that a part samples over its texture coordinates.

    Attributes
    ----------
    name : str
        Where it comes from, for messages (the image file, or the embedded image of a file).
    texels : ndarray
        ``(H, W, 3)`` uint8, sRGB-encoded (a base-colour texture) or ``(H, W)`` float32,
        linear (a reflectance map), rows from the top.
    wrap : tuple of 2 str
        Wrap mode along u and along v (:data:`WRAP_MODES`).
    srgb : bool
        The texels are sRGB-encoded (decoded to linear before interpolation).
    """

    name: str
    texels: np.ndarray
    wrap: tuple = DEFAULT_WRAP
    srgb: bool = True

    def sample(self, uv) -> np.ndarray:
        """:func:`sample_bilinear` of this image at ``uv`` ((n, 2), trimesh's convention):
        (n, 3) linear RGB or (n,) reflectance."""
        return sample_bilinear(self.texels, uv, self.wrap, lut=SRGB8_TO_LINEAR if self.srgb else None)


#: Hits looked up at once: the lookups' temporaries (a dozen arrays of 3 float64 per hit) then
#: stay in the processor's caches. Measured on two cores, 307,200 hits on a 1024 x 1024 texture
#: at random coordinates: 142 ms in one pass, 55 ms in chunks of 8192, 65 ms of 32768.
TEXTURE_CHUNK_ROWS = 8192

#: Memory of a textured face's map from points to texture coordinates (:func:`texcoord_maps`:
#: 2 x 4 float64) [B].
TEXCOORD_MAP_BYTES_PER_FACE = 64


@dataclass(frozen=True, eq=False)
class PartTexture:
    """What a scene-file part brings for its texture, before the scene holds its mesh.

    Attributes
    ----------
    uv : (V, 2) float64
        Texture coordinates of each vertex of the part's mesh (trimesh's convention, ``v`` up).
    base_colour : TextureImage or None
        Its base-colour texture (glTF ``baseColorTexture``, MTL ``map_Kd``).
    factor_rgb : (3,) float
        What multiplies the texture: glTF ``baseColorFactor`` (linear), MTL ``Kd``.
    reflectance_map : TextureImage or None
        From ``[scene_files.STEM] reflectance_maps``: reflectance at the lidar wavelength.
    """

    uv: np.ndarray
    base_colour: TextureImage | None
    factor_rgb: tuple
    reflectance_map: TextureImage | None = None

    def arrays(self) -> list:
        """The arrays it holds: the texture coordinates and the texels of its images."""
        return [self.uv] + [i.texels for i in (self.base_colour, self.reflectance_map) if i is not None]

    def bind(self, vertices: np.ndarray, faces: np.ndarray) -> SurfaceTexture:
        """The :class:`SurfaceTexture` of this part over its mesh (body frame [m]; the whole
        mesh, whose face indices the hits give)."""
        return SurfaceTexture(texcoord_maps(vertices, faces, self.uv), self.base_colour,
                              np.asarray(self.factor_rgb, dtype=float), self.reflectance_map)


@dataclass(frozen=True, eq=False)
class SurfaceTexture:
    """A scene object's texture, for per-hit lookups (:class:`HitTextures`).

    Attributes
    ----------
    maps : (F, 2, 4) float64
        Per face of the whole mesh, the affine map from a body-frame point [m] to its texture
        coordinates (:func:`texcoord_maps`); kept whole when an MPI rank reduces the object to
        its share of the faces (hits name whole-mesh faces).
    base_colour : TextureImage or None
    factor_rgb : (3,) float64
    reflectance_map : TextureImage or None
    """

    maps: np.ndarray
    base_colour: TextureImage | None
    factor_rgb: np.ndarray
    reflectance_map: TextureImage | None = None

    def arrays(self) -> list:
        """The arrays it adds to the scene's memory: the face maps and the texels of its
        images."""
        return [self.maps] + [i.texels for i in (self.base_colour, self.reflectance_map) if i is not None]


def wrap_index(i, n: int, mode: str) -> np.ndarray:
    """Texel indices ``i`` (integers, any) wrapped into ``0..n-1`` (OpenGL 4.6, 8.14.2).

    Parameters
    ----------
    i : array_like of int
    n : int
        Texels along the axis.
    mode : str
        ``repeat`` (``i mod n``), ``clamp`` (CLAMP_TO_EDGE: ``0`` below, ``n - 1`` above) or
        ``mirror`` (MIRRORED_REPEAT: ``m = i mod 2n``, then ``m`` if ``m < n`` else
        ``2n - 1 - m``).
    """
    i = np.asarray(i, dtype=np.int64)
    if mode == "repeat":
        return np.mod(i, n)
    if mode == "clamp":
        return np.clip(i, 0, n - 1)
    if mode == "mirror":
        m = np.mod(i, 2 * n)
        return np.where(m < n, m, 2 * n - 1 - m)
    raise ValueError(f"wrap mode {mode!r}: expected one of {', '.join(WRAP_MODES)}")


def sample_bilinear(texels, uv, wrap=DEFAULT_WRAP, *, lut=None) -> np.ndarray:
    """Bilinear sample of an image at texture coordinates.

    Parameters
    ----------
    texels : (H, W) or (H, W, C) array
        The image, rows from the top.
    uv : (n, 2) array_like
        Texture coordinates, ``v`` up (origin at the image's bottom-left: OBJ's convention,
        and trimesh's for every file); NaN rows give NaN.
    wrap : tuple of 2 str
        Wrap mode along u and along v (:func:`wrap_index`).
    lut : (256,) float array, optional
        Applied to every texel before interpolation (:data:`SRGB8_TO_LINEAR` for an sRGB image
        of uint8); None: the texel values as they are.

    Returns
    -------
    (n,) or (n, C) float64
        The image at each coordinate.

    Notes
    -----
    OpenGL's linear filter (4.6, 8.14.2): with ``x = u W - 1/2`` and ``y = (1 - v) H - 1/2``
    (texel centres at half-integers; ``1 - v`` turns ``v`` up into rows from the top), the
    four texels ``(floor(x) + {0, 1}, floor(y) + {0, 1})``, each wrapped by its axis's mode,
    weighted by ``(1 - a)(1 - b)``, ``a (1 - b)``, ``(1 - a) b`` and ``a b`` with
    ``a = x - floor(x)``, ``b = y - floor(y)``.
    """
    texels = np.asarray(texels)
    uv = np.asarray(uv, dtype=float).reshape(-1, 2)
    h, w = texels.shape[:2]
    flat = texels.reshape(h * w, -1)                 # texel (row j, column i) at j W + i
    ok = np.isfinite(uv[:, 0]) & np.isfinite(uv[:, 1])
    every = bool(ok.all())
    x = (uv[:, 0] if every else uv[ok, 0]) * w - 0.5
    y = (1.0 - (uv[:, 1] if every else uv[ok, 1])) * h - 0.5
    x0, y0 = np.floor(x), np.floor(y)
    a, b = x - x0, y - y0
    i0, i1 = wrap_index(x0, w, wrap[0]), wrap_index(x0 + 1.0, w, wrap[0])
    r0, r1 = wrap_index(y0, h, wrap[1]) * w, wrap_index(y0 + 1.0, h, wrap[1]) * w
    got = np.zeros((x.size, flat.shape[1]))
    for index, weight in ((r0 + i0, (1.0 - a) * (1.0 - b)), (r0 + i1, a * (1.0 - b)),
                          (r1 + i0, (1.0 - a) * b), (r1 + i1, a * b)):
        t = flat.take(index, axis=0)
        got += (lut.take(t) if lut is not None else t) * weight[:, None]
    if texels.ndim == 2:
        got = got[:, 0]
    if every:
        return got
    out = np.full((uv.shape[0],) + texels.shape[2:], np.nan)
    out[ok] = got
    return out


def texcoord_maps(vertices, faces, uv) -> np.ndarray:
    """Per face, the affine map from a point to its texture coordinates.

    Parameters
    ----------
    vertices : (V, 3) float
        Body frame [m].
    faces : (F, 3) int
    uv : (V, 2) float
        Texture coordinates per vertex.

    Returns
    -------
    (F, 2, 4) float64
        ``M`` with ``uv(p) = M[:, :, :3] p + M[:, :, 3]`` [1/m, 1]: the corners' coordinates
        interpolated with the barycentric coordinates of p's projection on the face's plane
        (:data:`TEXCOORD_MAP_BYTES_PER_FACE` each).

    Notes
    -----
    For a face (a, b, c) with edges ``e0 = b - a``, ``e1 = c - a``, the barycentric coordinates
    of a point p (Ericson 2005, 3.4, by dot products) are ``w_b = g_b . (p - a)``,
    ``w_c = g_c . (p - a)`` with ``g_b = (d11 e0 - d01 e1) / D``, ``g_c = (d00 e1 - d01 e0) / D``,
    ``d_ij = e_i . e_j``, ``D = d00 d11 - d01^2``: linear in p, so
    ``uv(p) = uv_a + w_b (uv_b - uv_a) + w_c (uv_c - uv_a)`` is an affine map, computed once
    per face here instead of once per hit. A zero-area face (``D`` below
    ``DEGENERATE_TRIANGLE_REL^2 d00 d11``) maps every point to its corners' mean.
    """
    v = np.asarray(vertices, dtype=float)
    f = np.asarray(faces, dtype=np.int64)
    uv = np.asarray(uv, dtype=float)
    a = v[f[:, 0]]
    e0, e1 = v[f[:, 1]] - a, v[f[:, 2]] - a
    d00 = np.einsum("ij,ij->i", e0, e0)
    d01 = np.einsum("ij,ij->i", e0, e1)
    d11 = np.einsum("ij,ij->i", e1, e1)
    denom = d00 * d11 - d01 * d01
    good = denom > DEGENERATE_TRIANGLE_REL**2 * d00 * d11
    inv = np.divide(1.0, denom, out=np.zeros_like(denom), where=good)[:, None]
    g_b = (d11[:, None] * e0 - d01[:, None] * e1) * inv
    g_c = (d00[:, None] * e1 - d01[:, None] * e0) * inv
    uv_a = uv[f[:, 0]]
    out = np.empty((len(f), 2, 4))
    out[:, :, :3] = ((uv[f[:, 1]] - uv_a)[:, :, None] * g_b[:, None, :]
                     + (uv[f[:, 2]] - uv_a)[:, :, None] * g_c[:, None, :])
    mean = (uv_a + uv[f[:, 1]] + uv[f[:, 2]]) / 3.0
    out[:, :, 3] = np.where(good[:, None], uv_a - np.einsum("fij,fj->fi", out[:, :, :3], a), mean)
    return out


def texcoords_at(texture: SurfaceTexture, points_body, face_index) -> np.ndarray:
    """Texture coordinates of points on faces of a textured mesh.

    Parameters
    ----------
    texture : SurfaceTexture
    points_body : (n, 3) float
        Points on the mesh, its body frame [m].
    face_index : (n,) int
        The (whole-mesh) face each lies on.

    Returns
    -------
    (n, 2) float64
        The face's corner coordinates interpolated with the point's barycentric coordinates
        (:func:`texcoord_maps`).
    """
    m = texture.maps.take(np.asarray(face_index, dtype=np.int64), axis=0)       # (n, 2, 4)
    p = np.asarray(points_body, dtype=float)
    return np.einsum("nij,nj->ni", m[:, :, :3], p) + m[:, :, 3]


def luminance_scaled_reflectance(reflectance, colour_rgb, material_rgb) -> np.ndarray:
    """Reflectance at a lidar wavelength of a textured hit, from its visible colour.

    Parameters
    ----------
    reflectance : (n,) float
        The material's diffuse reflectance at the lidar's wavelength, 0..1.
    colour_rgb : (n, 3) float
        The hit's linear RGB reflectance (:meth:`HitTextures.colour`).
    material_rgb : (n, 3) float
        The material's own RGB reflectance (``color_rgb``).

    Returns
    -------
    (n,) float64
        ``reflectance * Y(colour_rgb) / Y(material_rgb)`` clipped to 0..1, Y the relative
        luminance (:func:`luminance`); ``reflectance`` itself where ``Y(material_rgb)`` is 0
        (a black material: no ratio).

    Notes
    -----
    An assumption, not a measurement: every texel keeps the material's ratio of near-infrared
    to visible reflectance, so a texel twice as bright as the material in the visible is twice
    as bright at the lidar's wavelength (white paint on asphalt brightens in proportion, as
    road markings do in lidar intensity: Kashani et al. 2015, Park et al. 2023). Visible colour
    predicts near-infrared reflectance poorly across materials: chlorophyll absorbs red and
    leaves reflect about half at 905 nm (the library's ``vegetation``: luminance 0.09, 0.55 at
    905 nm), and carbon-black paints are dark at 905 nm whatever their visible colour (Lim et
    al. 2022). Within one material whose texture varies mostly in brightness (paint and dirt
    on asphalt, grout between tiles) it is the simplest defensible rule; a reflectance map
    (``[scene_files.STEM] reflectance_maps``) overrides it where it fails. The clip at 1 is
    reached by a texel brighter than ``Y(material) / reflectance`` times the material: white
    road paint (luminance 0.82) on the library's ``asphalt_worn`` (luminance 0.176, 0.278 at
    905 nm) gives 1.29, clipped to 1, where the library's ``road_paint_white`` has 0.75.

    References
    ----------
    A. G. Kashani, M. J. Olsen, C. E. Parrish and N. Wilson, "A review of LiDAR radiometric
    processing: from ad hoc intensity correction to rigorous radiometric calibration",
    Sensors 15(11), 28099-28128, 2015.
    B.-K. D. Park, J. R. Sayer, A. D. Clover and M. P. Reed, "Longitudinal degradation of
    pavement marking detectability for mobile LiDAR sensing technology in real-world use",
    Sensors 23(13), 5815, 2023.
    Lim et al., "Near-infrared reflective dark-tone bilayer system for LiDAR-based autonomous
    vehicles", Macromolecular Research 30, 2022 (as cited by :mod:`hifi.materials`).
    """
    rho = np.asarray(reflectance, dtype=float)
    y_ref = luminance(material_rgb)
    y_hit = luminance(colour_rgb)
    ratio = np.divide(y_hit, y_ref, out=np.ones_like(y_hit), where=y_ref > 0.0)
    return np.clip(rho * ratio, 0.0, 1.0)


class HitTextures:
    """Per-hit colour and reflectance of a scene's textured objects.

    Built once per sensor (``HitTextures(scene)`` in ``setup``); with no textured object in the
    scene (``bool(lookup)`` is False) every method is the table lookup ``table[object_id]``.

    Parameters
    ----------
    scene : hifi.world.scene.Scene
    """

    def __init__(self, scene):
        self.scene = scene
        self._objects = [o for o in scene.objects if getattr(o, "texture", None) is not None]
        n = len(scene.objects)
        self._textured = np.zeros(n + 1, dtype=bool)            # per object id, and -1 last
        self._textured[[o.index for o in self._objects]] = True
        self._by_index = {o.index: o for o in self._objects}
        self._poses: dict = {}

    def __bool__(self) -> bool:
        return bool(self._objects)

    def _groups(self, object_id, want):
        """``(object, rows)`` per textured object hit whose texture ``want(texture)`` holds, at
        most :data:`TEXTURE_CHUNK_ROWS` rows at a time."""
        oid = np.asarray(object_id)
        rows = np.flatnonzero(self._textured[np.where(oid >= 0, oid, -1)])
        if rows.size == 0:
            return
        if len(self._objects) > 1:                # rows by object, in order within each
            rows = rows[np.argsort(oid[rows], kind="stable")]
        ids = oid[rows]
        starts = np.flatnonzero(np.r_[True, ids[1:] != ids[:-1]])
        ends = np.r_[starts[1:], rows.size]
        for s, e in zip(starts, ends):
            obj = self._by_index[int(ids[s])]
            if want(obj.texture):
                for a in range(s, e, TEXTURE_CHUNK_ROWS):
                    yield obj, rows[a:min(a + TEXTURE_CHUNK_ROWS, e)]

    def _body_points(self, obj, points_scene, times) -> np.ndarray:
        """Hit points in ``obj``'s body frame: its pose at each hit's time (a moving object) or
        its one pose (a static one)."""
        scene = self.scene
        if not scene.is_moving(obj.name):
            pose = self._poses.get(obj.name)
            if pose is None:
                pose = self._poses[obj.name] = scene.pose_at(obj.name, 0.0)
            return pose.inverse_apply(points_scene)
        return scene.pose_at(obj.name, times).inverse_apply(points_scene)

    def texcoords(self, hits, times) -> np.ndarray:
        """Texture coordinates of every hit on a textured object ((n, 2); NaN elsewhere).

        Parameters
        ----------
        hits : hifi.caster.Hits
            The hits of a cast (the final segment's surface, through mirrors).
        times : float or (n,) float
            Each ray's emission time [s] (a moving object's pose is taken there).
        """
        out = np.full((len(hits), 2), np.nan)
        for obj, rows in self._groups(hits.object_id, lambda t: True):
            out[rows] = self._texcoords(obj, hits, times, rows)
        return out

    def _texcoords(self, obj, hits, times, rows) -> np.ndarray:
        t = np.asarray(times, dtype=float)
        t_rows = t if t.ndim == 0 else np.broadcast_to(t, (len(hits),))[rows]
        points = self._body_points(obj, hits.point[rows], t_rows)
        return texcoords_at(obj.texture, points, hits.face_index[rows])

    def colour(self, table, hits, times) -> np.ndarray:
        """Linear RGB reflectance of each hit (n, 3).

        Parameters
        ----------
        table : (n_objects + 1, 3) float
            Per object id (and -1 last) the material's ``color_rgb``
            (``scene.object_table("color_rgb")``).
        hits : hifi.caster.Hits
        times : float or (n,) float
            Each ray's emission time [s].

        Returns
        -------
        (n, 3) float64
            ``table[object_id]``; on an object with a base-colour texture, the file's base
            colour at the hit instead: ``factor_rgb`` (glTF ``baseColorFactor``, MTL ``Kd``)
            times the texture's linear RGB there (glTF 2.0, 3.9.2), whatever material the
            scenario maps the part to (the texture is the part's look; the material gives what
            the file cannot: its near-infrared reflectance, roughness, mirror fraction and
            class).
        """
        out = np.asarray(table)[hits.object_id]
        if not self._objects:
            return out
        for obj, rows in self._groups(hits.object_id, lambda t: t.base_colour is not None):
            tex = obj.texture
            out[rows] = tex.factor_rgb * tex.base_colour.sample(self._texcoords(obj, hits, times, rows))
        return out

    def reflectance(self, table, hits, times) -> np.ndarray:
        """Diffuse reflectance of each hit at a lidar's wavelength (n,).

        Parameters
        ----------
        table : (n_objects + 1,) float
            Per object id (and -1 last) the material's reflectance at that wavelength
            (``scene.object_table("reflectivity", wavelength_m=...)``).
        hits : hifi.caster.Hits
        times : float or (n,) float
            Each ray's emission time [s].

        Returns
        -------
        (n,) float64
            ``table[object_id]``; on an object with a reflectance map, the map's value at the
            hit (whatever the wavelength); on one with a base-colour texture only,
            :func:`luminance_scaled_reflectance` of the table's value by the hit's colour
            (:meth:`colour`) against the material's ``color_rgb``.
        """
        out = np.asarray(table)[hits.object_id]
        if not self._objects:
            return out
        scene = self.scene
        for obj, rows in self._groups(hits.object_id, lambda t: True):
            tex = obj.texture
            uv = self._texcoords(obj, hits, times, rows)
            if tex.reflectance_map is not None:
                out[rows] = np.clip(tex.reflectance_map.sample(uv), 0.0, 1.0)
            elif tex.base_colour is not None:
                material_rgb = np.asarray(scene.materials[obj.material_index].color_rgb, dtype=float)
                colour = tex.factor_rgb * tex.base_colour.sample(uv)
                out[rows] = luminance_scaled_reflectance(out[rows], colour, np.broadcast_to(material_rgb,
                                                                                            colour.shape))
        return out


# -- reading images -------------------------------------------------------------------------------

def colour_texels(image, name: str) -> np.ndarray:
    """The RGB texels of a Pillow image (uint8, rows from the top), its alpha dropped.

    Raises
    ------
    ValueError
        Naming ``name``: Pillow cannot decode it (a truncated or corrupt file).
    """
    try:
        image.load()
        rgb = image.convert("RGB")
        texels = np.asarray(rgb, dtype=np.uint8)
    except (OSError, ValueError, SyntaxError) as exc:    # what Pillow raises for bad image data
        raise ValueError(f"its texture image {name} cannot be decoded ({type(exc).__name__}: {exc})") from None
    if texels.ndim != 3 or texels.shape[0] == 0 or texels.shape[1] == 0:
        raise ValueError(f"its texture image {name} holds no pixels")
    return np.ascontiguousarray(texels)


def read_reflectance_map(path, wrap=DEFAULT_WRAP) -> TextureImage:
    """A reflectance map: a greyscale image of diffuse reflectance at the lidar wavelength.

    Parameters
    ----------
    path : path-like
        PNG, TIFF or any greyscale image Pillow reads: 8-bit (value / 255), 16-bit
        (value / 65535) or 32-bit float (the value), linear (no sRGB transfer function: a
        measurement, as glTF's non-colour textures are linear).
    wrap : tuple of 2 str
        Wrap modes along u and v.

    Returns
    -------
    TextureImage
        Its texels as float32 reflectance, 0..1.

    Raises
    ------
    ValueError
        The file is missing or unreadable, not greyscale (the modes of
        :data:`REFLECTANCE_MAP_MODES`), or a float image has values outside 0..1.
    """
    import PIL.Image
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"file not found (looked for {path})")
    try:
        with PIL.Image.open(path) as image:
            image.load()
            mode = image.mode
            if mode not in REFLECTANCE_MAP_MODES:
                raise ValueError(f"a {mode} image; a reflectance map is greyscale (Pillow modes "
                                 f"{', '.join(REFLECTANCE_MAP_MODES)})")
            grey = image.getchannel(0) if mode == "LA" else image
            values = np.asarray(grey, dtype=np.float64)
    except (OSError, SyntaxError) as exc:
        raise ValueError(f"cannot be decoded as an image ({type(exc).__name__}: {exc})") from None
    if values.ndim != 2 or values.size == 0:
        raise ValueError("holds no pixels")
    full = REFLECTANCE_MAP_MODES[mode]
    texels = (values / full).astype(np.float32)
    if not np.all(np.isfinite(texels)) or texels.min() < 0.0 or texels.max() > 1.0:
        raise ValueError(f"holds values from {values.min():g} to {values.max():g}; a reflectance map's values "
                         f"are 0..{full:g}")
    return TextureImage(str(path), np.ascontiguousarray(texels), tuple(wrap), srgb=False)

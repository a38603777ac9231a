"""Scene files with parts: a glTF 2.0 or OBJ file read as its tree of nodes.

A mesh file named by an object's ``mesh`` is normally flattened into one mesh
(:func:`hifi.api.meshes.load_mesh_file`). A file loaded *with parts* (``[scene_files.STEM]`` in
the scenario, or ``parts = true`` beside ``mesh``; docs/scenario_files.md, "Scene files with
parts") keeps what the file says about its pieces, read by trimesh
(``trimesh.load_scene(path, process=False)``):

- glTF (``.gltf`` with its buffers, or ``.glb``): every node of the default scene, with its
  local transform and its name; a node's mesh is one part per primitive (a mesh of several
  primitives gets one child per primitive, named ``NODE/MATERIAL``), each with its material
  (``pbrMetallicRoughness.baseColorFactor`` gives its colour);
- OBJ (with the MTL file its ``mtllib`` names): one part per object (``o``) or group (``g``)
  and material (``usemtl``), named as trimesh names them (``OBJECT_MATERIAL``, or the
  material's name in a file without objects and groups), at the identity (OBJ has no
  transforms); the MTL ``Kd`` gives the colour.

A material's base-colour texture (glTF ``baseColorTexture`` with its sampler's wrap modes, MTL
``map_Kd`` with its ``-clamp`` option) is decoded with the file
(:class:`hifi.world.textures.TextureImage`), and every part keeps its texture coordinates
(:attr:`FileNode.uv`), for the sensors to sample at each hit (:mod:`hifi.world.textures`). An
image the file names that is missing or that Pillow cannot decode stops the reading, naming it;
a texture hifi cannot place (another coordinate set than the first, a texture transform, an
MTL option other than ``-clamp``, a part without coordinates) is left out with a note
(:attr:`SceneFile.notes`).

:func:`read_scene_file` returns the nodes parents first, each with a rigid local pose
(rotation and translation relative to its parent node, or to the object's own frame for a
root node) and its mesh in its own frame. A node transform with scale or shear (glTF allows
any affine matrix) cannot be a pose: it is split into the nearest rotation and the rest, which
is baked into the node's vertices (:func:`split_rigid`), so every vertex lands exactly where the
file puts it while the bodies of the scene stay rigid frames.

:func:`derived_material` gives the hifi material of a file material that the scenario does not
map to one of its own.
"""

from __future__ import annotations

import gc
import json
import mmap
import re
import struct
import urllib.parse
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import trimesh

from ..api.meshes import check_gltf_file
from ..constants import REC709_LUMINANCE_RGB, RIGID_TRANSFORM_TOL
from .scene import UNLABELLED, Material
from .textures import DEFAULT_WRAP, GLTF_WRAP, TextureImage, colour_texels

#: Files that can be loaded with parts (their suffixes, lower case).
PART_FILE_SUFFIXES = (".gltf", ".glb", ".obj")

#: What a node without a name in the file, or a primitive without a material, is called.
_UNNAMED_MATERIAL = "material"


@dataclass(frozen=True)
class FileMaterial:
    """A material as the file gives it.

    Attributes
    ----------
    name : str
        Its name in the file (unique in the file; an unnamed material is ``material``,
        ``material_1``, ...).
    color_rgb : tuple of 3 float
        Diffuse colour, linear, 0..1: glTF ``baseColorFactor`` (its default, white, where the
        material gives none) or MTL ``Kd``, as trimesh holds them (8 bits per channel).
    source : str
        Where ``color_rgb`` comes from (``glTF baseColorFactor``, ``glTF default
        baseColorFactor``, ``MTL Kd``), for messages.
    texture : hifi.world.textures.TextureImage or None
        Its base-colour texture (glTF ``baseColorTexture``, MTL ``map_Kd``), decoded; the base
        colour at a point is ``color_rgb`` times the texture there.
    """

    name: str
    color_rgb: tuple
    source: str
    texture: TextureImage | None = None


@dataclass
class FileNode:
    """A node of a scene file: a rigid frame, with a mesh part or without.

    Attributes
    ----------
    name : str
        Unique in the file: the node's name (trimesh's, which numbers duplicates ``NAME_1``
        and calls an unnamed glTF node by its index); a primitive of a mesh with several is
        ``NODE/MATERIAL`` (``NODE/K`` without a material).
    parent : int or None
        Index of the parent node in :attr:`SceneFile.nodes`; None for a root node (whose
        parent is the object's own frame).
    rotation : (3, 3) float
        Rotation of the node frame relative to its parent (body -> parent).
    translation : (3,) float
        Origin of the node frame in its parent's frame [m].
    mesh : trimesh.Trimesh or None
        The part's triangles in the node frame [m] (vertices float64, faces int64, no
        visuals), or None for a node without triangles.
    material : str or None
        Name of the part's :class:`FileMaterial`; None where the file gives the part none.
    node_name : str
        The name of the file's node that holds the part (for a primitive, its node's name),
        which the scenario's ``classes`` globs match.
    ancestors : tuple of str
        The ``node_name`` of every node above, nearest first.
    uv : (V, 2) float64 or None
        Texture coordinates of each vertex of ``mesh`` (trimesh's convention: ``v`` up, origin
        at the image's bottom-left; glTF's are turned to it on loading); None where the file
        gives none.
    """

    name: str
    parent: int | None
    rotation: np.ndarray
    translation: np.ndarray
    mesh: trimesh.Trimesh | None = field(default=None, repr=False)
    material: str | None = None
    node_name: str = ""
    ancestors: tuple = ()
    uv: np.ndarray | None = field(default=None, repr=False)


@dataclass
class SceneFile:
    """A scene file read with its parts (:func:`read_scene_file`).

    Attributes
    ----------
    path : pathlib.Path
    nodes : list of FileNode
        Every node of the file, each after its parent (depth first, in the order of trimesh's
        scene graph).
    materials : dict of str to FileMaterial
        The materials the parts use, by name, in the order of first use.
    notes : list of str
        Textures left out, one line each (for the scenario's warnings).
    """

    path: Path
    nodes: list
    materials: dict
    notes: list = field(default_factory=list)

    @property
    def n_faces(self) -> int:
        """Triangles of all the parts."""
        return sum(len(n.mesh.faces) for n in self.nodes if n.mesh is not None)


def split_rigid(matrix) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """A 4 x 4 affine transform as a rigid pose and the linear rest: ``A = R L``.

    Parameters
    ----------
    matrix : (4, 4) float
        ``p_out = A p + t`` with ``A = matrix[:3, :3]``, ``t = matrix[:3, 3]``.

    Returns
    -------
    rotation : (3, 3) float
        R: A itself when A is a rotation (within :data:`hifi.constants.RIGID_TRANSFORM_TOL`),
        else the rotation nearest to A (``U V^T`` of the singular value decomposition
        ``A = U S V^T``, with the sign of U's last column flipped when that is a reflection).
    translation : (3,) float
        t [m].
    linear : (3, 3) float or None
        ``L = R^T A`` (scale, shear and a reflection, if any), None when A is a rotation.
        ``R (L p) + t = A p + t``: baking L into the vertices and placing them with (R, t)
        puts them where the matrix does.
    """
    m = np.asarray(matrix, dtype=float)
    a, t = m[:3, :3], m[:3, 3].copy()
    if np.max(np.abs(a.T @ a - np.eye(3))) <= RIGID_TRANSFORM_TOL and np.linalg.det(a) > 0:
        return a.copy(), t, None
    u, _, vt = np.linalg.svd(a)
    r = u @ vt
    if np.linalg.det(r) < 0:
        u[:, -1] *= -1.0
        r = u @ vt
    return r, t, r.T @ a


def derived_material(material: FileMaterial, name: str) -> Material:
    """The hifi material of a file material the scenario does not map.

    Parameters
    ----------
    material : FileMaterial
    name : str
        The scene's name for it.

    Returns
    -------
    hifi.world.scene.Material
        ``color_rgb``: the file's colour (linear RGB, 0..1); ``reflectivity`` [1]: its relative
        luminance ``0.2126 R + 0.7152 G + 0.0722 B`` (:data:`hifi.constants.REC709_LUMINANCE_RGB`),
        at every wavelength (no ``spectrum``); no mirror, Lambertian, class ``unlabelled``.

    Notes
    -----
    A file's colour is a visible-light albedo: glTF's ``baseColorFactor`` is linear (glTF 2.0,
    schema ``material.pbrMetallicRoughness``: "These values are linear"), MTL's ``Kd`` is "the
    diffuse reflectivity" in RGB (Alias|Wavefront, *File Formats* 4.2, 1995, the MTL chapter).
    The lidar's reflectivity is the diffuse reflectance at its near-infrared wavelength, which
    no such file holds; the luminance stands in for it. That is an assumption, not a
    measurement: paints and plastics are often brighter at 905 nm than their visible colour
    (vegetation much brighter), so map the materials that matter to measured ones (the library,
    :mod:`hifi.materials`, has reflectances at 865, 905 and 1550 nm) in ``[scene_files.STEM]
    materials``. glTF's ``metallicFactor`` and ``roughnessFactor`` are not read; a base-colour
    texture modulates this material per hit (:class:`hifi.world.textures.HitTextures`).
    """
    rgb = tuple(float(c) for c in np.clip(np.asarray(material.color_rgb, dtype=float), 0.0, 1.0))
    reflectivity = float(np.clip(np.dot(REC709_LUMINANCE_RGB, rgb), 0.0, 1.0))
    return Material(name, reflectivity, 0.0, rgb, UNLABELLED, 0.0)


def unique_name(base: str, taken) -> str:
    """``base``, or ``base_1``, ``base_2``, ... : the first not in ``taken``."""
    if base not in taken:
        return base
    k = 1
    while f"{base}_{k}" in taken:
        k += 1
    return f"{base}_{k}"


def _file_material(visual) -> tuple[tuple, str] | None:
    """Colour (linear RGB, 0..1) and its source of a trimesh visual's material; None when the
    part has no material."""
    mat = getattr(visual, "material", None)
    if mat is None:
        return None
    if isinstance(mat, trimesh.visual.material.PBRMaterial):
        factor = mat.baseColorFactor
        if factor is None:              # glTF 2.0 material.pbrMetallicRoughness: default [1, 1, 1, 1]
            return (1.0, 1.0, 1.0), "glTF default baseColorFactor"
        return _unit_rgb(factor), "glTF baseColorFactor"
    simple = mat if isinstance(mat, trimesh.visual.material.SimpleMaterial) else mat.to_simple()
    return _unit_rgb(simple.diffuse), "MTL Kd"


def _unit_rgb(color) -> tuple:
    """RGB in 0..1 of trimesh's colour (uint8 RGBA, or floats)."""
    c = np.asarray(color)
    rgb = c[:3].astype(float) / (255.0 if c.dtype.kind in "ui" else 1.0)
    return tuple(float(v) for v in rgb)


# -- textures ---------------------------------------------------------------------------------------

#: Options of an MTL texture statement and how many values each takes (Alias|Wavefront, *File
#: Formats* 4.2, the MTL chapter, "Options for texture map statements"); ``-o``, ``-s`` and
#: ``-t`` take one to three numbers.
_MTL_OPTIONS = {"-blendu": 1, "-blendv": 1, "-bm": 1, "-boost": 1, "-cc": 1, "-clamp": 1, "-imfchan": 1,
                "-mm": 2, "-o": 3, "-s": 3, "-t": 3, "-texres": 1, "-type": 1}

#: MTL options that leave a colour texture's mapping and values as they are: blending
#: switches, the resolution hint, the bump multiplier (bump maps only).
_MTL_HARMLESS = {"-blendu", "-blendv", "-texres", "-bm"}


@dataclass(frozen=True)
class _TextureRef:
    """A base-colour texture as the file names it, before it is decoded."""

    label: str                        # for messages: the image file as the file names it, or the embedded image
    file: Path | None                 # the image file; None: embedded (trimesh decodes it)
    wrap: tuple = DEFAULT_WRAP
    unsupported: str | None = None    # why hifi leaves it out


def _gltf_header(path: Path) -> dict:
    """The JSON of a ``.gltf`` file or of a ``.glb``'s first chunk (glTF 2.0, "GLB File Format
    Specification": 12-byte header, then chunk length, chunk type ``JSON``, the JSON)."""
    if path.suffix.lower() == ".glb":
        with open(path, "rb") as f:          # the JSON chunk only, not the binary one
            length, kind = struct.unpack("<II", f.read(20)[12:20])
            if kind != 0x4E4F534A:           # 'JSON'
                raise ValueError("its first chunk is not JSON")
            data = f.read(length)
    else:
        data = path.read_bytes()
    header = json.loads(data)
    if not isinstance(header, dict):
        raise ValueError("its JSON is not an object")
    return header


def _gltf_texture_refs(path: Path) -> list:
    """Per material of a glTF file (index order): ``(name, baseColorFactor, _TextureRef or
    None)``."""
    try:
        header = _gltf_header(path)
    except (ValueError, struct.error, UnicodeDecodeError) as exc:
        raise ValueError(f"its glTF JSON cannot be read ({exc})") from None
    textures, images, samplers = (header.get(k, []) for k in ("textures", "images", "samplers"))
    out = []
    for i, mat in enumerate(header.get("materials", [])):
        pbr = mat.get("pbrMetallicRoughness", {}) if isinstance(mat, dict) else {}
        info = pbr.get("baseColorTexture")
        ref = None
        if isinstance(info, dict):
            try:
                tex = textures[info["index"]]
                sampler = samplers[tex["sampler"]] if "sampler" in tex else {}
                source = tex.get("source")
                image = images[source] if source is not None else None
            except (KeyError, IndexError, TypeError):
                raise ValueError(f"its material {i} names a baseColorTexture the file does not hold "
                                 f"({info!r})") from None
            wrap = tuple(GLTF_WRAP.get(sampler.get(k, 10497), "repeat") for k in ("wrapS", "wrapT"))
            uri = image.get("uri") if isinstance(image, dict) else None
            if isinstance(uri, str) and not uri.startswith("data:"):
                ref = _TextureRef(repr(uri), path.parent / urllib.parse.unquote(uri), wrap)
            else:
                ref = _TextureRef(f"{source if source is not None else '?'} (embedded in {path.name})", None, wrap)
            why = []
            if info.get("texCoord", 0) != 0:
                why.append(f"it uses TEXCOORD_{info['texCoord']} (hifi reads TEXCOORD_0)")
            if "KHR_texture_transform" in (info.get("extensions") or {}):
                why.append("it has a KHR_texture_transform")
            if image is None:
                why.append("its texture has no image source hifi reads (an extension's)")
            if why:
                ref = _TextureRef(ref.label, ref.file, wrap, "; ".join(why))
        name = mat.get("name") if isinstance(mat, dict) else None
        out.append((name, pbr.get("baseColorFactor"), ref))
    return out


def _mtl_texture_refs(path: Path) -> dict:
    """MTL material name -> :class:`_TextureRef` of its ``map_Kd``, for the MTL files an OBJ
    file names (``mtllib``; the image is looked for beside the MTL file, then beside the OBJ
    file, as trimesh does)."""
    with open(path, "rb") as f:
        try:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as m:
                libs = [x.decode("utf-8", "replace").strip()
                        for x in re.findall(rb"(?m)^[ \t]*mtllib[ \t]+([^\r\n]+)", m)]
        except ValueError:                    # an empty file cannot be mapped
            libs = []
    refs: dict[str, _TextureRef] = {}
    for lib in libs:
        mtl = path.parent / lib
        if not mtl.is_file():
            continue                          # trimesh reads the OBJ without it; no texture named
        name = None
        for line in mtl.read_text(encoding="utf-8", errors="replace").splitlines():
            words = line.split()
            if not words:
                continue
            key = words[0].lower()
            if key == "newmtl":
                name = " ".join(words[1:])
            elif key == "map_kd" and name is not None:
                refs[name] = _mtl_ref(words[1:], mtl, path)
    return refs


def _mtl_ref(words: list, mtl: Path, obj: Path) -> _TextureRef:
    """The :class:`_TextureRef` of a ``map_Kd`` statement's words (options, then the file)."""
    wrap = ("repeat", "repeat")
    options = []
    k = 0
    while k < len(words) and words[k].lower() in _MTL_OPTIONS:
        opt = words[k].lower()
        n = _MTL_OPTIONS[opt]
        args = []
        k += 1
        while len(args) < n and k < len(words) - 1:
            if opt in ("-o", "-s", "-t") and args and not _is_number(words[k]):
                break
            args.append(words[k])
            k += 1
        if opt == "-clamp":
            if args and args[0].lower() == "on":
                wrap = ("clamp", "clamp")
        elif opt not in _MTL_HARMLESS:
            options.append(" ".join([opt, *args]))
    file_name = " ".join(words[k:])
    target = mtl.parent / file_name
    if not target.is_file() and (obj.parent / file_name).is_file():
        target = obj.parent / file_name
    why = f"its map_Kd has the option(s) {', '.join(options)}, which hifi does not apply" if options else None
    return _TextureRef(repr(file_name), target, wrap, why)


def _is_number(word: str) -> bool:
    try:
        float(word)
    except ValueError:
        return False
    return True


class _Textures:
    """The base-colour textures of one file: which a trimesh material has, decoded once each."""

    def __init__(self, path: Path, suffix: str):
        self.path = path
        self.gltf = _gltf_texture_refs(path) if suffix in (".gltf", ".glb") else None
        self.mtl = _mtl_texture_refs(path) if suffix == ".obj" else None
        self._texels: dict = {}               # image key -> texels
        self._images: dict = {}               # (image key, wrap) -> TextureImage
        self.notes: list[str] = []
        for ref in self._refs():              # a missing image file stops the reading, naming it
            if ref.file is not None and not ref.file.is_file():
                raise ValueError(f"its texture image {ref.label} is missing (looked for {ref.file})")

    def _refs(self):
        if self.gltf is not None:
            return [r for _, _, r in self.gltf if r is not None]
        return list(self.mtl.values())

    def _ref_of(self, mat) -> _TextureRef | None:
        """The texture reference of a trimesh material (None: it has none)."""
        if self.mtl is not None:
            return self.mtl.get(getattr(mat, "name", None))
        rgba = mat.baseColorFactor if isinstance(mat, trimesh.visual.material.PBRMaterial) else None
        key = None if rgba is None else tuple(int(c) for c in np.asarray(rgba).reshape(-1))
        candidates = []
        for i, (name, factor, ref) in enumerate(self.gltf):
            f = None if factor is None else tuple(
                int(c) for c in trimesh.visual.color.to_rgba(np.asarray(factor, dtype=float)).reshape(-1))
            if name == mat.name and f == key:
                candidates.append((i, ref))
        refs = {ref for _, ref in candidates}
        if len(refs) > 1:
            raise ValueError(f"its materials {', '.join(str(i) for i, _ in candidates)} share the name {mat.name!r} "
                             f"and baseColorFactor but not their baseColorTexture, so hifi cannot tell which "
                             f"part has which texture; give the materials distinct names")
        return next(iter(refs)) if refs else None

    def texture(self, visual, material_name: str) -> TextureImage | None:
        """The decoded base-colour texture of a part's trimesh visual (None: none, or left out
        with a note)."""
        mat = getattr(visual, "material", None)
        ref = self._ref_of(mat) if mat is not None else None
        if ref is None:
            return None
        if ref.unsupported is not None:
            self.note(f"material {material_name!r}: its texture {ref.label} is left out: {ref.unsupported}")
            return None
        if ref.file is not None:
            key = ("file", ref.file)
            if key not in self._texels:
                import PIL.Image
                try:
                    with PIL.Image.open(ref.file) as image:
                        self._texels[key] = colour_texels(image, ref.label)
                except (OSError, SyntaxError) as exc:    # not an image Pillow knows (PIL.UnidentifiedImageError)
                    raise ValueError(f"its texture image {ref.label} cannot be decoded ({type(exc).__name__}: "
                                     f"{exc})") from None
        else:
            image = getattr(mat, "baseColorTexture", None)
            if image is None:                  # trimesh leaves out an image it cannot decode, silently
                raise ValueError(f"its texture image {ref.label} cannot be decoded")
            key = ("embedded", id(image))
            if key not in self._texels:
                self._texels[key] = colour_texels(image, ref.label)
        if (key, ref.wrap) not in self._images:
            self._images[(key, ref.wrap)] = TextureImage(ref.label, self._texels[key], ref.wrap, srgb=True)
        return self._images[(key, ref.wrap)]

    def note(self, line: str) -> None:
        """Add a line to :attr:`notes` (once)."""
        if line not in self.notes:
            self.notes.append(line)


def _uv_of(geom) -> np.ndarray | None:
    """A trimesh geometry's texture coordinates, one row per vertex (float64), or None."""
    uv = getattr(geom.visual, "uv", None)
    if uv is None:
        return None
    uv = np.asarray(uv, dtype=np.float64)
    if uv.ndim != 2 or uv.shape[0] != len(geom.vertices) or uv.shape[1] < 2:
        return None
    return np.ascontiguousarray(uv[:, :2])


def read_scene_file(path, scale: float = 1.0) -> SceneFile:
    """Read a glTF or OBJ file with its parts (module docstring).

    Parameters
    ----------
    path : path-like
        A ``.gltf``, ``.glb`` or ``.obj`` file.
    scale : float
        Factor on every coordinate of the file (a file in millimetres: 0.001); it scales the
        translations of the nodes and their vertices.

    Returns
    -------
    SceneFile

    Raises
    ------
    ValueError
        The file (or a buffer or other file it names) is missing, cut short or unreadable, or
        it holds no triangles; the message says which.
    """
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix not in PART_FILE_SUFFIXES:
        raise ValueError(f"only {', '.join(PART_FILE_SUFFIXES)} files have parts")
    check_gltf_file(path)
    textures = _Textures(path, suffix)       # a missing texture image stops here, before trimesh
    # OBJ: one geometry per object or group and material (trimesh's split_objects and
    # split_groups); without them it merges every face of a material into one geometry.
    options = {"split_objects": True, "split_groups": True} if suffix == ".obj" else {}
    try:
        loaded = trimesh.load_scene(str(path), process=False, **options)
    except FileNotFoundError as exc:
        raise ValueError(f"a file it refers to is missing ({exc})") from None
    except Exception as exc:  # trimesh raises many types for corrupt files; re-raise as one
        raise ValueError(f"trimesh could not read it ({type(exc).__name__}: {exc})") from exc
    nodes: list[FileNode] = []
    materials: dict[str, FileMaterial] = {}
    named: dict[int, str] = {}                # id of trimesh's material -> its name here
    used_geometry: set[str] = set()
    # Names taken so far and children per parent index, kept as the nodes are added: scanning
    # the nodes for them at every node made a file of a few thousand nodes take seconds.
    taken: set[str] = set()
    children: dict[int | None, int] = {}
    tf = loaded.graph.transforms
    root = (np.diag([scale, scale, scale, 1.0]), np.eye(3), np.zeros(3))
    # depth first, children in trimesh's order: (node, parent node, parent index, parent's
    # transform from the file root, parent's rigid pose, parent's node name, ancestors)
    base = loaded.graph.base_frame
    stack = [(c, base, None, root, "", ()) for c in reversed(tf.children.get(base, []))]
    while stack:
        key, parent_key, parent, (w_parent, r_parent, t_parent), parent_node, ancestors = stack.pop()
        edge = tf.edge_data.get((parent_key, key), {})
        matrix = np.asarray(edge.get("matrix", np.eye(4)), dtype=float)
        world = w_parent @ matrix
        r, t, linear = split_rigid(world)
        geom_name = edge.get("geometry")
        geom = loaded.geometry.get(geom_name) if geom_name is not None else None
        if not isinstance(geom, trimesh.Trimesh) or len(geom.faces) == 0:
            geom = None
        # trimesh gives each primitive of a glTF mesh of several its own child node at the
        # identity, named after the node with a random suffix; name it by its material.
        primitive = (geom is not None and bool(geom.metadata.get("from_gltf_primitive"))
                     and parent is not None and np.array_equal(matrix, np.eye(4)))
        material = None
        uv = _uv_of(geom) if geom is not None else None
        if geom is not None:
            found = _file_material(geom.visual)
            if found is not None:
                mat = geom.visual.material
                if id(mat) not in named:
                    base = mat.name if isinstance(mat.name, str) and mat.name else _UNNAMED_MATERIAL
                    texture = textures.texture(geom.visual, base)
                    same = materials.get(base)
                    if same is not None and same.color_rgb == found[0] and same.texture is texture:
                        named[id(mat)] = base
                    else:
                        named[id(mat)] = unique_name(base, materials)
                        materials[named[id(mat)]] = FileMaterial(named[id(mat)], *found, texture)
                material = named[id(mat)]
                if uv is None and materials[material].texture is not None:
                    textures.note(f"node {str(key)!r} (material {material!r}) has no texture coordinates: its "
                                  f"texture {materials[material].texture.name} is left out there")
        if primitive:
            siblings = children.get(parent, 0)
            name = unique_name(f"{nodes[parent].name}/{material if material is not None else siblings}", taken)
            node_name = parent_node
            above = ancestors[1:]
        else:
            name = unique_name(str(key), taken)
            node_name = str(key)
            above = ancestors
        mesh = None
        if geom is not None:
            vertices = np.asarray(geom.vertices, dtype=np.float64)
            faces = np.asarray(geom.faces, dtype=np.int64)
            if linear is not None:
                vertices = vertices @ linear.T
            elif geom_name in used_geometry:   # an instance: its own arrays, never shared
                vertices, faces = vertices.copy(), faces.copy()
            used_geometry.add(geom_name)
            mesh = trimesh.Trimesh(np.ascontiguousarray(vertices), np.ascontiguousarray(faces),
                                   process=False, validate=False)
        nodes.append(FileNode(name, parent, r_parent.T @ r, r_parent.T @ (t - t_parent), mesh, material,
                              node_name, above, uv))
        taken.add(name)
        children[parent] = children.get(parent, 0) + 1
        index = len(nodes) - 1
        for child in reversed(tf.children.get(key, [])):
            stack.append((child, key, index, (world, r, t), node_name, (node_name, *above)))
    del loaded
    gc.collect()                             # trimesh's scene graph and caches hold cycles
    out = SceneFile(path, nodes, materials, textures.notes)
    if out.n_faces == 0:
        raise ValueError("the file holds no triangles")
    return out

"""The scenario side of scene files with parts: ``[scene_files.STEM]`` and the parts of an object.

An object whose ``mesh`` is a glTF or OBJ file is loaded *with parts* when the scenario has a
table ``[scene_files.STEM]`` for the file (STEM: its name without the extension) or the object
says ``parts = true`` (``parts = false`` keeps one object even with the table). Each node of the
file (:func:`hifi.world.scene_files.read_scene_file`) becomes a body named ``OBJECT/NODE``
riding on the object's own body with the node's local pose; each node with triangles is a scene
object of its own, with its own object id, material and class. The table maps the file's
materials to the scenario's and its nodes to classes::

    [scene_files.street]
    materials = { "Asphalt*" = "asphalt_worn", "Glass*" = "glass" }   # file material -> material
    classes = { "Car*" = "car" }                                  # node or material -> class
    reflectance_maps = { "Asphalt*" = "asphalt_905nm.png" }       # node or material -> image

Keys are globs (:func:`fnmatch.fnmatchcase`: ``*``, ``?``, ``[seq]``, case-sensitive); the
first entry in the table's order that matches wins. ``materials`` globs match a part's material
name in the file. ``classes`` globs match, in this order of precedence, the name of the part's
node, its material's name, then the names of the nodes above it, nearest first (so ``"Car*"``
labels every part under a node ``Car`` that no entry names more closely). A part that
``materials`` does not map takes :func:`hifi.world.scene_files.derived_material` of its file
material (one :class:`~hifi.errors.ScenarioWarning` per file lists them); a part without a
material in the file takes hifi's ``default``. A part that ``classes`` does not map has its
material's class.

A part with texture coordinates keeps its file material's base-colour texture and the image
``reflectance_maps`` gives it (matched as ``classes`` is; a greyscale image of its reflectance
at the lidar wavelength, read when the scenario is loaded) as a
:class:`hifi.world.textures.PartTexture`, which the scene binds to the part's mesh
(:mod:`hifi.world.textures`: the sensors sample it per hit).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from fnmatch import fnmatchcase
from pathlib import Path
from typing import Any

import numpy as np

from .. import materials as library
from ..api.params import Param, Validator, check_params
from ..world.scene import Material
from ..world.scene_files import unique_name
from ..world.textures import TEXCOORD_MAP_BYTES_PER_FACE

#: Keys of a ``[scene_files.STEM]`` table.
SCENE_FILE_PARAMS = {
    "materials": Param("any", default=None,
                       doc="{ \"glob\" = \"material\" }: a part whose material name in the file matches the glob "
                           "(fnmatch, case-sensitive; the first matching entry wins) takes that material: a [materials.NAME], "
                           "\"default\" or a library material (docs/materials.md); unmapped parts take the file's "
                           "colour (reflectivity: its luminance)"),
    "classes": Param("any", default=None,
                     doc="{ \"glob\" = \"class\" }: the class of a part whose node name, else material name, else "
                         "the name of a node above it matches the glob (the first matching entry wins); "
                         "unmapped parts have their material's class"),
    "reflectance_maps": Param("any", default=None,
                              doc="{ \"glob\" = \"image file\" }: a part matched as classes match (node, material, "
                                  "nodes above) takes its diffuse reflectance at the lidar wavelength from the "
                                  "greyscale image (linear, 0..1 at full scale; relative to the scenario file) over "
                                  "its texture coordinates, instead of its material's scaled by its texture"),
}


@dataclass
class PartSpec:
    """One node of an object's scene file, as the scene builds it.

    Attributes
    ----------
    name : str
        Its body's name, ``OBJECT/NODE`` (numbered ``_1``, ``_2``, ... where taken).
    parent : str
        The body it rides on: the object, or the part of its parent node.
    rotation : (3, 3) float
        Local rotation relative to ``parent`` (body -> parent).
    translation : (3,) float
        Local position in ``parent``'s frame [m].
    mesh : trimesh.Trimesh or None
        Its triangles in its own frame (handed to the scene, then None); None: a node without
        triangles, a body only.
    material : str
        The scene material: a scenario material, ``default``, a library material, or a derived one
        (:attr:`hifi.run.scenario.Scenario.part_materials`).
    class_name : str or None
        From ``classes``; None: the material's class.
    file_material : str or None
        The part's material name in the file.
    n_faces : int
        Its triangles.
    texture : hifi.world.textures.PartTexture or None
        Its texture coordinates with its base-colour texture and reflectance map; None: its
        material alone.
    texture_bytes : int
        Memory its texture adds [B]: its texture coordinates and images (an image several parts
        share counted at the first) and, in the scene, its faces' maps to texture coordinates
        (:data:`hifi.world.textures.TEXCOORD_MAP_BYTES_PER_FACE` each).
    """

    name: str
    parent: str
    rotation: np.ndarray
    translation: np.ndarray
    mesh: Any = field(default=None, repr=False)
    material: str = "default"
    class_name: str | None = None
    file_material: str | None = None
    n_faces: int = 0
    texture: Any = field(default=None, repr=False)
    texture_bytes: int = 0


@dataclass
class _Table:
    """A validated ``[scene_files.STEM]`` and which of its globs matched a part."""

    materials: dict
    classes: dict
    reflectance_maps: dict = field(default_factory=dict)   # glob -> TextureImage (wrap repeat)
    matched_materials: set = field(default_factory=set)
    matched_classes: set = field(default_factory=set)
    matched_maps: set = field(default_factory=set)
    file_materials: dict = field(default_factory=dict)     # path -> the file's material names
    file_nodes: dict = field(default_factory=dict)         # path -> the file's node names


def lookup_material(name: str, materials: dict) -> Material:
    """The material a scene-file mapping names, through :func:`hifi.materials.resolve` (the
    scenario's own ``[materials.NAME]``, ``default``, or a library material).

    Raises
    ------
    hifi.materials.UnknownMaterial
        Naming the allowed materials.
    """
    return library.resolve(name, materials)


def _first_match(globs: dict, candidates) -> tuple[str, str] | None:
    """``(glob, value)`` of the first entry of ``globs`` matching the first candidate any
    entry matches (candidates in order of precedence); None when none matches."""
    for candidate in candidates:
        for glob, value in globs.items():
            if fnmatchcase(candidate, glob):
                return glob, value
    return None


class SceneFiles:
    """Validation state of a scenario's scene files: the ``[scene_files]`` tables, the
    materials derived from files, the warnings for :func:`hifi.run.checks.warn_scene`.

    Parameters
    ----------
    v : hifi.api.params.Validator
    raw : Any
        The ``scene_files`` value of the scenario.
    materials : dict
        The scenario's validated ``[materials]``.
    """

    def __init__(self, v: Validator, raw: Any, materials: dict, base_dir: Path | None = None):
        self.v = v
        self.materials = materials
        self.base_dir = Path(base_dir) if base_dir is not None else Path(".")
        if not isinstance(raw, dict):
            raise v.error("expected tables [scene_files.STEM] (STEM: a mesh file's name without its extension)",
                          key="scene_files", value=raw)
        self.tables: dict[str, _Table] = {}
        for stem, table in raw.items():
            key = f"scene_files.{stem}"
            spec = check_params(table, SCENE_FILE_PARAMS, v.error, key)
            self.tables[stem] = _Table(self._mapping(f"{key}.materials", spec["materials"], check_material=True),
                                       self._mapping(f"{key}.classes", spec["classes"], check_material=False),
                                       self._maps(f"{key}.reflectance_maps", spec["reflectance_maps"]))
        #: Materials derived from the files' own, by name (Scenario.part_materials).
        self.derived: dict[str, Material] = {}
        self._derived_of: dict[tuple, str] = {}          # (file, file material) -> derived name
        self._source: dict[str, str] = {}                 # derived name -> where its colour comes from
        #: Files loaded with parts: path -> the first object's key, the file's stem, {unmapped file
        #: material: derived name}, the parts without a material, whether a table names the file.
        self._files: dict[Path, dict] = {}
        self._stems_seen: set[str] = set()

    def _mapping(self, key: str, raw: Any, *, check_material: bool) -> dict:
        if raw is None:
            return {}
        what = "material" if check_material else "class"
        if not isinstance(raw, dict):
            raise self.v.error(f"expected a table {{ \"glob\" = \"{what}\" }}", key=key, value=raw)
        for glob, value in raw.items():
            if not glob:
                raise self.v.error("expected non-empty globs (keys)", key=key, value=raw)
            if not isinstance(value, str) or not value:
                raise self.v.error(f"expected a {what} name (a string) for {glob!r}", key=key, value=raw)
            if check_material:
                try:
                    lookup_material(value, self.materials)
                except library.UnknownMaterial as exc:
                    raise self.v.error(f"{glob!r} names material {value!r}: {exc}", key=key, value=raw) from None
        return dict(raw)

    def _maps(self, key: str, raw: Any) -> dict:
        """``reflectance_maps``: each image read now (glob -> TextureImage), so a bad one stops
        loading with its key."""
        from ..world.textures import read_reflectance_map
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            raise self.v.error("expected a table { \"glob\" = \"image file\" }", key=key, value=raw)
        out = {}
        for glob, value in raw.items():
            if not glob:
                raise self.v.error("expected non-empty globs (keys)", key=key, value=raw)
            if not isinstance(value, str) or not value:
                raise self.v.error(f"expected an image file name (a string) for {glob!r}", key=key, value=raw)
            try:
                out[glob] = read_reflectance_map((self.base_dir / value).resolve())
            except ValueError as exc:
                raise self.v.error(f"reflectance map {value!r} for {glob!r}: {exc}", key=key, value=value) from None
        return out

    def wants_parts(self, mesh: str, parts: bool | None) -> bool:
        """Whether the object of mesh file ``mesh`` is loaded with parts (``parts`` its key)."""
        return parts if parts is not None else Path(mesh).stem in self.tables

    def parts(self, index: int, name: str, mesh: str, mesh_path: Path, scene_file, names: dict) -> list:
        """The :class:`PartSpec` of object ``objects[index]`` (``name``) from its read
        ``scene_file`` (:class:`hifi.world.scene_files.SceneFile`); part names are entered in
        ``names`` (the namespace of objects and sensors) as belonging to ``objects[index]``."""
        stem = Path(mesh).stem
        self._stems_seen.add(stem)
        table = self.tables.get(stem) or _Table({}, {})
        table.file_materials[mesh_path] = list(scene_file.materials)
        table.file_nodes[mesh_path] = [n.node_name for n in scene_file.nodes]
        first = mesh_path not in self._files          # a file of several objects is counted once
        use = self._files.setdefault(mesh_path, {"key": f"objects[{index}].mesh", "mesh": mesh, "stem": stem,
                                                 "unmapped": {}, "no_material": 0,
                                                 "table": stem in self.tables})
        if first:
            use["notes"] = list(scene_file.notes)
        out: list[PartSpec] = []
        counted: set[int] = set()                     # texture arrays this object already counts
        for node in scene_file.nodes:
            part_name = unique_name(f"{name}/{node.name}", names)
            names[part_name] = f"objects[{index}]"
            parent = name if node.parent is None else out[node.parent].name
            part = PartSpec(part_name, parent, node.rotation, node.translation, node.mesh,
                            file_material=node.material)
            node.mesh = None                          # the part holds the only reference
            if part.mesh is not None:
                part.n_faces = len(part.mesh.faces)
                self._assign(part, node, table, scene_file, use if first else None)
                part.texture = self._texture(part, node, table, scene_file, stem)
                if part.texture is not None:      # its face maps in the scene, then what it holds
                    part.texture_bytes = part.n_faces * TEXCOORD_MAP_BYTES_PER_FACE
                    for arr in part.texture.arrays():
                        if id(arr) not in counted:
                            counted.add(id(arr))
                            part.texture_bytes += int(arr.nbytes)
            out.append(part)
        return out

    def _texture(self, part: PartSpec, node, table: _Table, scene_file, stem: str):
        """The :class:`hifi.world.textures.PartTexture` of a part with triangles: its file
        material's base-colour texture and the reflectance map ``reflectance_maps`` gives it
        (matched as ``classes`` is), over its texture coordinates; None without either."""
        from ..world.textures import PartTexture, TextureImage
        file_material = scene_file.materials.get(node.material) if node.material is not None else None
        base = file_material.texture if file_material is not None else None
        names = [node.node_name, node.material or "", *node.ancestors]
        table.matched_maps.update(g for g in table.reflectance_maps if any(fnmatchcase(n, g) for n in names))
        hit = _first_match(table.reflectance_maps, names)
        rmap = None
        if hit is not None:
            if node.uv is None:
                raise self.v.error(f"{hit[0]!r} gives a reflectance map to part {part.name!r}, which has no texture "
                                   f"coordinates in {Path(scene_file.path).name} (glTF TEXCOORD_0, OBJ vt) to place "
                                   f"it by", key=f"scene_files.{stem}.reflectance_maps", value=hit[0])
            rmap = table.reflectance_maps[hit[0]]
            if base is not None and base.wrap != rmap.wrap:      # the base-colour texture's sampler
                rmap = TextureImage(rmap.name, rmap.texels, base.wrap, srgb=False)
        if node.uv is None or (base is None and rmap is None):
            return None
        factor = file_material.color_rgb if file_material is not None else (1.0, 1.0, 1.0)
        return PartTexture(node.uv, base, factor, rmap)

    def _assign(self, part: PartSpec, node, table: _Table, scene_file, use: dict | None) -> None:
        """The material and class of a part with triangles; ``use`` (None: the file was
        counted already) notes what the warnings list."""
        material = node.material or ""
        table.matched_materials.update(g for g in table.materials if fnmatchcase(material, g))
        names = [node.node_name, material, *node.ancestors]
        table.matched_classes.update(g for g in table.classes if any(fnmatchcase(n, g) for n in names))
        hit = _first_match(table.materials, [material])
        if hit is not None:
            resolved = lookup_material(hit[1], self.materials)
            if resolved.name not in self.materials and resolved.name != "default":
                self.materials[resolved.name] = resolved    # a library material, as an object's
            part.material = resolved.name
        elif node.material is None:
            part.material = "default"
            if use is not None:
                use["no_material"] += 1
        else:
            part.material = self._derive(scene_file, node.material)
            if use is not None:
                use["unmapped"][node.material] = part.material
        hit = _first_match(table.classes, names)
        if hit is not None:
            part.class_name = hit[1]

    def _derive(self, scene_file, material: str) -> str:
        """The name of the material derived from ``material`` of ``scene_file`` (made once)."""
        from ..world.scene_files import derived_material
        key = (scene_file.path, material)
        if key not in self._derived_of:
            taken = set(self.materials) | set(self.derived) | {"default"}
            name = unique_name(f"{Path(scene_file.path).stem}/{material}", taken)
            self.derived[name] = derived_material(scene_file.materials[material], name)
            self._source[name] = scene_file.materials[material].source
            self._derived_of[key] = name
        return self._derived_of[key]

    def finish(self, objects: list) -> list[str]:
        """Refuse a table no object uses; the warnings (one line each) for
        :func:`hifi.run.checks.warn_scene`."""
        v = self.v
        for stem in self.tables:
            if stem in self._stems_seen:
                continue
            files = sorted({o.mesh for o in objects if o.mesh_path is not None})
            same = [o for o in objects if o.mesh_path is not None and Path(o.mesh).stem == stem]
            if same:
                raise v.error(f"every object with a {stem!r} mesh file says parts = false, so this table is "
                              f"not used; remove it or the parts = false", key=f"scene_files.{stem}")
            raise v.error(f"matches no object's mesh file (the stem is the file name without its "
                          f"extension); mesh files: {', '.join(repr(f) for f in files) or 'none'}",
                          key=f"scene_files.{stem}")
        warnings = []
        for path, use in self._files.items():
            if use.get("notes"):
                key = f"scene_files.{use['stem']}" if use["table"] else use["key"]
                warnings.append(str(v.error(f"{use['mesh']}: " + "; ".join(use["notes"]), key=key)))
            if not use["unmapped"] and not use["no_material"]:
                continue
            parts = []
            if use["unmapped"]:
                listed = "; ".join(
                    f"{m!r} (reflectivity {self.derived[d].reflectivity:.3g}, color_rgb "
                    f"[{', '.join(f'{c:.3g}' for c in self.derived[d].color_rgb)}] from its {self._source[d]})"
                    for m, d in use["unmapped"].items())
                how = (f"not mapped by [scene_files.{use['stem']}] materials" if use["table"]
                       else f"(no [scene_files.{use['stem']}] table maps them)")
                parts.append(f"{use['mesh']}: its materials {how} take the file's colour, and its luminance as "
                             f"reflectivity (an assumption, not a measurement: map them to measured materials): "
                             f"{listed}")
            if use["no_material"]:
                parts.append(f"{use['no_material']} part(s) of {use['mesh']} without a material in the file take "
                             f"'default'")
            key = f"scene_files.{use['stem']}" if use["table"] else use["key"]
            warnings.append(str(v.error("; ".join(parts), key=key)))
        for stem, table in self.tables.items():
            files = list(table.file_materials)
            unused = [g for g in table.materials if g not in table.matched_materials]
            if unused:
                names = sorted({m for f in files for m in table.file_materials[f]})
                warnings.append(str(v.error(
                    f"{', '.join(repr(g) for g in unused)} match(es) no part's material; the materials of "
                    f"{', '.join(str(Path(f).name) for f in files)}: {', '.join(repr(m) for m in names) or 'none'}",
                    key=f"scene_files.{stem}.materials")))
            for what, globs, matched in (("classes", table.classes, table.matched_classes),
                                         ("reflectance_maps", table.reflectance_maps, table.matched_maps)):
                unused = [g for g in globs if g not in matched]
                if unused:
                    materials = sorted({m for f in files for m in table.file_materials[f]})
                    nodes = sorted({n for f in files for n in table.file_nodes[f]})
                    warnings.append(str(v.error(
                        f"{', '.join(repr(g) for g in unused)} match(es) no part (a node's name, a material's name "
                        f"or a name above a part); the materials: {', '.join(repr(m) for m in materials) or 'none'}; "
                        f"the nodes: {', '.join(repr(n) for n in nodes)}", key=f"scene_files.{stem}.{what}")))
        return warnings

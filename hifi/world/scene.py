"""Scene: triangle meshes with materials, semantic classes and rigid motion.

Every object and every sensor is a *body* with a parent (another body or the scene) and a local
pose that is either fixed or a keyframed :class:`~hifi.world.motion.Track`. Poses compose up the
parent chain, so the pose of anything can be asked for at any time with :meth:`Scene.pose_at`,
and with its velocity, acceleration, angular rate and angular acceleration with
:meth:`Scene.kinematics_at`.

A body's local motion is any object with ``at(t_s) -> Pose``; for :meth:`Scene.kinematics_at`
it also has ``kinematics(t_s) -> Kinematics`` (relative to the parent, parent axes) and a
``twice_differentiable`` flag (:class:`~hifi.world.motion.Track` has all three), so a new kind of
moving body (a vehicle integrated in the run) plugs into the same tree.
"""

from __future__ import annotations

import gc
from dataclasses import dataclass, field

import numpy as np
import trimesh

from ..constants import VELOCITY_FD_STEP_S
from .motion import Kinematics, Pose, Track, compose_kinematics

#: Rows of a vertex array reduced at once to one number (temporaries of a few tens of MB).
_ROW_BLOCK = 1 << 20

#: Single poses :meth:`Scene.pose_at` keeps (bodies x times; a closed loop asks for a few
#: bodies at a few times between two vehicle steps).
POSE_CACHE_SIZE = 512

#: Annotation id 0 is reserved for "no hit / unlabelled".
UNLABELLED = "unlabelled"


@dataclass(frozen=True)
class Material:
    """Surface material.

    Attributes
    ----------
    name : str
    reflectivity : float
        Diffuse (Lambertian) reflectance at the lidar wavelength, 0..1.
    mirror : float
        Fraction reflected specularly, 0..1; 1 is a perfect mirror that the ray follows.
    color_rgb : tuple of 3 float
        Diffuse reflectance in the camera's red, green, blue bands, 0..1.
    class_name : str
        Semantic class; mapped to a uint8 annotation id by the scene.
    roughness_rad : float
        Oren-Nayar roughness, the standard deviation of the surface's facet slopes [rad]; 0 is
        Lambertian (:func:`sensors.radiometry.oren_nayar_backscatter`).
    spectrum : tuple of two tuples, optional
        Diffuse reflectance by wavelength: ``(wavelengths_m, reflectance)``, the wavelengths
        [m] strictly increasing, the reflectances in 0..1 (:mod:`hifi.materials` gives one per
        library entry). None (the default): ``reflectivity`` at every wavelength.
    kind : str
        What the surface is to the rays (:data:`hifi.world.surfaces.KINDS`): ``"opaque"``
        (default: the diffuse and mirror fractions above), ``"glass"`` (a thin pane the rays
        pass, Fresnel reflection on both faces), ``"water"`` (a smooth water surface, Fresnel
        reflection; the rays follow the reflection), ``"retroreflector"`` (retroreflective
        sheeting: its return is concentrated back to the source).
    refractive_index : float, optional
        Refractive index of a glass or water surface at the lidar wavelength (>= 1); None: the
        kind's default (:data:`hifi.world.surfaces.DEFAULT_REFRACTIVE_INDEX`: 1.515 glass, 1.327
        water), None for the other kinds (NaN in :meth:`Scene.object_table`).
    transmittance : float
        Internal transmittance of a glass pane's bulk, one pass at normal incidence, its faces'
        reflections excluded, 0..1: 1 clear, lower tinted (:func:`hifi.world.surfaces.pane_optics`).
    retroreflection_cd_lx_m2 : float
        Coefficient of retroreflection R_A of a retroreflector [cd lx^-1 m^-2] at 0.2 deg
        observation and -4 deg entrance (ASTM D4956's first geometry); 0 for the other kinds.
    retroreflection_30deg_cd_lx_m2 : float, optional
        R_A at 0.2 deg observation and +30 deg entrance (ASTM D4956's second geometry), which
        sets how the return falls with the entrance angle; None: the ratio 30 / 70 of ASTM
        D4956 Type I white sheeting.

    A lidar asks :meth:`reflectance_at` for its own wavelength; ``reflectivity`` is what a model
    without a wavelength uses (and every model, when there is no ``spectrum``). The defaults of
    the last five fields are an opaque surface, what every material was before they existed.
    """

    name: str
    reflectivity: float = 0.5
    mirror: float = 0.0
    color_rgb: tuple = (0.5, 0.5, 0.5)
    class_name: str = UNLABELLED
    roughness_rad: float = 0.0
    spectrum: tuple | None = None
    kind: str = "opaque"
    refractive_index: float | None = None
    transmittance: float = 1.0
    retroreflection_cd_lx_m2: float = 0.0
    retroreflection_30deg_cd_lx_m2: float | None = None

    def __post_init__(self):
        from .surfaces import DEFAULT_REFRACTIVE_INDEX, KINDS
        if self.kind not in KINDS:
            raise ValueError(f"material {self.name!r}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.refractive_index is None:
            object.__setattr__(self, "refractive_index", DEFAULT_REFRACTIVE_INDEX.get(self.kind))
        elif not self.refractive_index >= 1.0:
            raise ValueError(f"material {self.name!r}: refractive_index must be >= 1, got {self.refractive_index!r}")
        if not 0.0 <= self.transmittance <= 1.0:
            raise ValueError(f"material {self.name!r}: transmittance must be in 0..1, got {self.transmittance!r}")
        if self.kind == "retroreflector" and not self.retroreflection_cd_lx_m2 > 0.0:
            raise ValueError(f"material {self.name!r}: a retroreflector needs retroreflection_cd_lx_m2 > 0, got "
                             f"{self.retroreflection_cd_lx_m2!r}")
        r30 = self.retroreflection_30deg_cd_lx_m2
        if r30 is not None and not 0.0 < r30 <= self.retroreflection_cd_lx_m2:
            raise ValueError(f"material {self.name!r}: retroreflection_30deg_cd_lx_m2 must be in (0, "
                             f"retroreflection_cd_lx_m2 = {self.retroreflection_cd_lx_m2!r}], got {r30!r}")
        if self.spectrum is not None:
            wl, refl = (np.asarray(a, dtype=float) for a in self.spectrum)
            if wl.ndim != 1 or wl.shape != refl.shape or wl.size < 1:
                raise ValueError(f"material {self.name!r}: spectrum must be two 1-D sequences of one length "
                                 f"(wavelengths_m, reflectance), got shapes {wl.shape} and {refl.shape}")
            if np.any(np.diff(wl) <= 0) or not np.all(wl > 0):
                raise ValueError(f"material {self.name!r}: spectrum wavelengths must be > 0 and strictly "
                                 f"increasing [m], got {tuple(wl)}")
            if not np.all((refl >= 0.0) & (refl <= 1.0)):
                raise ValueError(f"material {self.name!r}: spectrum reflectances must be in 0..1, got {tuple(refl)}")

    def reflectance_at(self, wavelength_m: float) -> float:
        """Diffuse reflectance at ``wavelength_m`` [m], 0..1.

        Linear in wavelength between the tabulated points of :attr:`spectrum`, held at the end
        values outside them (``numpy.interp``); without a spectrum, :attr:`reflectivity` at any
        wavelength (so a scenario that defines its materials itself keeps its outputs).
        """
        if self.spectrum is None:
            return self.reflectivity
        wl, refl = self.spectrum
        return float(np.interp(float(wavelength_m), wl, refl))


DEFAULT_MATERIAL = Material("default")


@dataclass
class Body:
    """A node of the pose tree: an object or a sensor."""

    name: str
    kind: str                     # "object" or "sensor"
    parent: str | None
    local: Pose | Track

    @property
    def has_track(self) -> bool:
        return isinstance(self.local, Track)


@dataclass
class SceneObject:
    """A rigid triangle mesh with a material, in its own body frame.

    ``vertices`` and ``faces`` are the whole mesh's, unless :meth:`keep_share` reduced them to
    one MPI rank's share: ``share`` is then the ascending whole-mesh indices of the faces kept,
    in that order, with the vertices they use (renumbered, in their order), and ``mesh`` is
    dropped. What needs the whole mesh (:attr:`bounds`, :attr:`radius_m`, the world bounds of
    a static object) is kept from before.
    """

    name: str
    mesh: trimesh.Trimesh | None
    material_index: int
    index: int = -1
    #: Semantic class of this object when it is not its material's (a part of a scene file
    #: mapped by ``[scene_files.STEM] classes``); None: the material's class.
    class_name: str | None = None
    #: Texture of a scene-file part (:class:`hifi.world.textures.SurfaceTexture`: texture
    #: coordinates, base-colour texture, reflectance map, over the whole mesh); None: its
    #: material alone.
    texture: object | None = field(default=None, repr=False)
    vertices: np.ndarray = field(init=False, repr=False)
    faces: np.ndarray = field(init=False, repr=False)
    #: Faces of the whole mesh (``len(faces)`` unless this is a share).
    n_faces: int = field(init=False)
    share: np.ndarray | None = field(init=False, default=None, repr=False)
    #: Scene-frame vertices of a shared static object (rows of ``vertices``), else None.
    world: np.ndarray | None = field(init=False, default=None, repr=False)
    #: (2, 3) lowest and highest scene-frame vertex of a shared static object's whole mesh.
    world_bounds: np.ndarray | None = field(init=False, default=None, repr=False)
    _bounds: np.ndarray | None = field(init=False, default=None, repr=False)
    _radius_m: float | None = field(init=False, default=None, repr=False)

    def __post_init__(self):
        self.vertices = np.ascontiguousarray(self.mesh.vertices, dtype=float)
        self.faces = np.ascontiguousarray(self.mesh.faces, dtype=np.int64)
        self.n_faces = len(self.faces)

    @property
    def bounds(self) -> np.ndarray | None:
        """(2, 3) lowest and highest body-frame coordinates of the vertices the faces use, of
        the whole mesh; None without faces.

        ``trimesh.Trimesh.bounds``' arithmetic (min and max over axis 0 of the referenced
        vertices), without its copy of them when every vertex is referenced: a 10 M-triangle
        mesh's bounds through trimesh peaked 203 MiB above its arrays.
        """
        if self._bounds is None and self.share is None and len(self.faces):
            v = self.vertices
            referenced = np.zeros(len(v), dtype=bool)
            referenced[self.faces] = True
            in_mesh = v if referenced.all() else v[referenced]
            self._bounds = np.array([in_mesh.min(axis=0), in_mesh.max(axis=0)])
        return self._bounds

    @property
    def radius_m(self) -> float:
        """Largest distance of a vertex of the whole mesh from the body origin [m] (0 without
        vertices)."""
        if self._radius_m is None:
            v = self.vertices
            # By blocks of rows: each row's norm is the same number, and so is the largest
            # (NaN included), without temporaries of the whole array.
            self._radius_m = float(np.max([np.max(np.linalg.norm(v[a:a + _ROW_BLOCK], axis=1))
                                           for a in range(0, len(v), _ROW_BLOCK)])) if len(v) else 0.0
        return self._radius_m

    def face_ids(self) -> np.ndarray | None:
        """Whole-mesh index of each row of ``faces`` ((m,) int64), or None if all are kept."""
        return self.share

    def face_rows(self, face_ids) -> np.ndarray:
        """Rows of ``faces`` holding these whole-mesh face indices (which must be kept here)."""
        face_ids = np.asarray(face_ids, dtype=np.int64)
        return face_ids if self.share is None else np.searchsorted(self.share, face_ids)

    def keep_share(self, face_ids, world: np.ndarray | None = None) -> None:
        """Keep only these faces of the mesh and the vertices they use (one rank's facet share).

        Parameters
        ----------
        face_ids : (m,) int
            Whole-mesh indices of the faces kept, ascending, each once.
        world : (v, 3) float64, optional
            For a static object, its scene-frame vertices (all of them): the kept rows are kept
            as :attr:`world` and their whole extent as :attr:`world_bounds`.

        The whole mesh's :attr:`bounds` and :attr:`radius_m` are computed first; the trimesh
        object is dropped, so the whole arrays are freed once nothing else holds them.
        """
        if self.share is not None:
            raise ValueError(f"object {self.name!r} is already reduced to a share of its faces")
        ids = np.asarray(face_ids, dtype=np.int64).reshape(-1)
        if ids.size and (ids[0] < 0 or ids[-1] >= self.n_faces or np.any(np.diff(ids) <= 0)):
            raise ValueError(f"a share of object {self.name!r} must list face indices in 0..{self.n_faces - 1}, "
                             "ascending, each once")
        _ = self.bounds, self.radius_m
        faces = self.faces[ids]
        # The whole faces go first (the trimesh mesh holds them in reference cycles).
        self.faces, self.mesh = faces, None
        gc.collect()
        used = np.zeros(len(self.vertices), dtype=bool)
        used[faces.reshape(-1)] = True
        remap = np.cumsum(used, dtype=np.int64)
        remap -= 1
        np.take(remap, faces, out=faces)
        del remap
        keep = np.flatnonzero(used)
        del used
        same = world is self.vertices             # placed at the origin: the same array (exact)
        if world is not None:
            self.world_bounds = np.array([world.min(axis=0), world.max(axis=0)]) if len(world) else None
        self.vertices = self.vertices[keep]
        self.world = self.vertices if same else None if world is None else world[keep]
        self.share = ids


class Scene:
    """Objects, materials, classes and the pose tree of a simulation."""

    def __init__(self):
        self.materials: list[Material] = []
        self.objects: list[SceneObject] = []
        self.bodies: dict[str, Body] = {}
        self.class_names: list[str] = [UNLABELLED]
        self._material_index: dict[str, int] = {}
        self._poses: dict[tuple, tuple] = {}       # (name, t) -> (driven versions, Pose): pose_at

    # -- building -------------------------------------------------------------------------
    def add_material(self, material: Material) -> int:
        """Register a material; returns its index. Its class gets the next free id."""
        if material.name in self._material_index:
            raise ValueError(f"material {material.name!r} is defined twice")
        self._add_class(material.class_name)
        self.materials.append(material)
        self._material_index[material.name] = len(self.materials) - 1
        return len(self.materials) - 1

    def _add_class(self, class_name: str) -> None:
        """Give ``class_name`` the next free annotation id, unless it has one."""
        if class_name not in self.class_names:
            if len(self.class_names) >= 256:
                raise ValueError("more than 255 semantic classes do not fit the uint8 annotation")
            self.class_names.append(class_name)

    def material_index(self, name: str) -> int:
        if name not in self._material_index:
            if name == DEFAULT_MATERIAL.name:
                return self.add_material(DEFAULT_MATERIAL)
            raise KeyError(name)
        return self._material_index[name]

    def add_body(self, name: str, kind: str, local: Pose | Track, parent: str | None = None) -> Body:
        """Add a node of the pose tree; ``parent`` must already exist (so there are no cycles)."""
        if name in self.bodies:
            raise ValueError(f"name {name!r} is used twice (objects and sensors share one namespace)")
        if parent is not None and parent not in self.bodies:
            raise ValueError(f"parent {parent!r} of {name!r} does not exist")
        body = Body(name, kind, parent, local)
        self.bodies[name] = body
        return body

    def add_object(self, name: str, mesh: trimesh.Trimesh, material: str = "default",
                   local: Pose | Track | None = None, parent: str | None = None,
                   class_name: str | None = None) -> SceneObject:
        """Add a mesh object; its index (object id) is its position in :attr:`objects`.

        ``class_name`` gives the object a semantic class of its own (the next free annotation
        id if new); None: its material's class.
        """
        self.add_body(name, "object", local if local is not None else Pose.identity(), parent)
        if class_name is not None:
            self._add_class(class_name)
        obj = SceneObject(name, mesh, self.material_index(material), index=len(self.objects),
                          class_name=class_name)
        self.objects.append(obj)
        return obj

    # -- lookup tables ----------------------------------------------------------------------
    @property
    def object_names(self) -> list[str]:
        return [o.name for o in self.objects]

    def object_table(self, attribute: str, *, wavelength_m: float | None = None) -> np.ndarray:
        """Per-object material attribute, with one extra trailing entry for "no hit" (id -1).

        ``"kind"`` gives int8 codes (:mod:`hifi.world.surfaces`: ``OPAQUE``, ``GLASS``,
        ``WATER``, ``RETROREFLECTOR``, and ``MIRROR`` for an opaque material whose ``mirror``
        reaches ``MIRROR_FOLLOW_THRESHOLD``), ``OPAQUE`` for "no hit".

        ``scene.object_table("reflectivity")[object_id]`` is then valid for every id including -1.
        With ``wavelength_m`` [m] (only for ``"reflectivity"``), each object's diffuse reflectance
        at that wavelength (:meth:`Material.reflectance_at`): what a lidar of that wavelength
        sees; a material without a spectrum gives its ``reflectivity`` whatever the wavelength.
        """
        if wavelength_m is not None:
            if attribute != "reflectivity":
                raise ValueError(f"wavelength_m applies to 'reflectivity' only, not to {attribute!r}")
            vals = [self.materials[o.material_index].reflectance_at(wavelength_m) for o in self.objects] + [np.nan]
            return np.asarray(vals, dtype=float)
        if attribute == "class_id":
            vals = [self.class_names.index(o.class_name if o.class_name is not None
                                           else self.materials[o.material_index].class_name)
                    for o in self.objects] + [0]
            return np.asarray(vals, dtype=np.uint8)
        if attribute == "kind":
            # the caster's codes (hifi.world.surfaces): a perfect mirror is its own code
            from ..constants import MIRROR_FOLLOW_THRESHOLD
            from .surfaces import KINDS, MIRROR
            codes = []
            for o in self.objects:
                m = self.materials[o.material_index]
                code = KINDS.index(m.kind)
                codes.append(MIRROR if code == 0 and m.mirror >= MIRROR_FOLLOW_THRESHOLD else code)
            return np.asarray(codes + [0], dtype=np.int8)
        if attribute == "color_rgb":
            vals = [self.materials[o.material_index].color_rgb for o in self.objects] + [(np.nan,) * 3]
            return np.asarray(vals, dtype=float)
        vals = [getattr(self.materials[o.material_index], attribute) for o in self.objects] + [np.nan]
        return np.asarray(vals, dtype=float)

    # -- motion -------------------------------------------------------------------------------
    def is_moving(self, name: str) -> bool:
        """True if the body or any ancestor has a track."""
        body = self.bodies[name]
        while body is not None:
            if body.has_track:
                return True
            body = self.bodies[body.parent] if body.parent is not None else None
        return False

    def rides_on_driven_body(self, name: str) -> bool:
        """True if body ``name`` or a body it rides on is driven during the run.

        A driven body's motion (a :class:`hifi.world.vehicle.VehicleTrack`, whose ``driven`` is true)
        is made step by step from the commands on the bus, so its poses after the current time
        do not exist yet: a model on it must compute each frame at its own time, never a block
        of frames ahead.
        """
        body = self.bodies[name]
        while body is not None:
            if getattr(body.local, "driven", False):
                return True
            body = self.bodies[body.parent] if body.parent is not None else None
        return False

    def pose_at(self, name: str, t_s) -> Pose:
        """Pose of body ``name`` in the scene frame at time(s) ``t_s`` [s].

        A scalar time gives a single pose, an array of n times a stack of n poses.

        Notes
        -----
        Single poses are kept (:data:`POSE_CACHE_SIZE` of them): in a closed loop the same
        body is asked for at the same time by every model and by the caster (a vehicle's pose
        three times per cast). A kept pose is the one computed for the same body and time with
        the same motions on its parent chain, a driven track's at the same ``version`` (it
        grows with the track; the other tracks never change). Its arrays are read-only (but for
        a body without parent and motion: its own pose, as given).
        """
        t = np.asarray(t_s, dtype=float)
        if t.ndim == 0:
            key = (name, t.tobytes())        # bytes: -0.0 and 0.0 apart, as the arithmetic keeps them
            versions = self._versions(name)
            hit = self._poses.get(key)
            if hit is not None and hit[0] == versions:
                return hit[1]
            pose = self._pose_at(name, t)
            if pose is not self.bodies[name].local:  # a fixed root body's own pose stays as given
                pose.translation.flags.writeable = False
                pose.quat.flags.writeable = False
            if len(self._poses) >= POSE_CACHE_SIZE:
                self._poses.clear()                  # one step (threads share the dict)
            self._poses[key] = (versions, pose)
            return pose
        return self._pose_at(name, t)

    def _versions(self, name: str) -> tuple:
        """The motion of each body on ``name``'s parent chain with its ``version`` (a driven
        track's; None for the others, which never change)."""
        out = ()
        body = self.bodies[name]
        while body is not None:
            out += (body.local, getattr(body.local, "version", None))
            body = self.bodies[body.parent] if body.parent is not None else None
        return out

    def _pose_at(self, name: str, t: np.ndarray) -> Pose:
        body = self.bodies[name]
        local = body.local.at(t) if isinstance(body.local, Track) else body.local
        if t.ndim > 0 and local.single:
            local = local.broadcast(t.size)
        if body.parent is None:
            return local
        parent = self.pose_at(body.parent, t) if t.ndim == 0 else self._pose_at(body.parent, t)
        return parent.compose(local)

    def kinematics_at(self, name: str, t_s) -> Kinematics:
        """Pose and its derivatives of body ``name`` relative to the scene frame, scene axes.

        Parameters
        ----------
        name : str
            A body (object or sensor).
        t_s : float or (n,) float
            Time(s) [s].

        Returns
        -------
        hifi.world.motion.Kinematics
            Pose (body -> scene), velocity [m/s], acceleration [m/s^2], angular rate [rad/s]
            and angular acceleration [rad/s^2] of the body relative to the scene; ``(3,)`` per
            quantity for a scalar time, ``(n, 3)`` for n times.

        Notes
        -----
        Each body's own motion is differentiated analytically (its ``kinematics``) and carried
        up the parent chain by :func:`hifi.world.motion.compose_kinematics`; no finite differences.
        Bodies on piecewise-linear tracks give piecewise-constant velocities (see
        :meth:`first_rough_body`).
        """
        t = np.asarray(t_s, dtype=float)
        t1 = np.atleast_1d(t)
        kin = self._kinematics(name, t1)
        if t.ndim == 0:
            pose = self.pose_at(name, float(t))
            return Kinematics(pose, kin.velocity[0], kin.acceleration[0], kin.angular_rate[0],
                              kin.angular_acceleration[0])
        return kin

    def _kinematics(self, name: str, t1: np.ndarray) -> Kinematics:
        body = self.bodies[name]
        local = body.local
        if isinstance(local, Pose):
            kin = Kinematics.at_rest(local if not local.single else local.broadcast(t1.size))
        else:
            kin = local.kinematics(t1)
        if body.parent is None:
            return kin
        return compose_kinematics(self._kinematics(body.parent, t1), kin)

    def first_rough_body(self, name: str) -> str | None:
        """The first body on ``name``'s parent chain (itself first) whose motion is not twice
        differentiable (a keyframed track interpolated linearly), or None."""
        body = self.bodies[name]
        while body is not None:
            if not getattr(body.local, "twice_differentiable", True):
                return body.name
            body = self.bodies[body.parent] if body.parent is not None else None
        return None

    def velocity_at(self, name: str, t_s) -> np.ndarray:
        """Linear velocity of body ``name``'s origin in the scene frame [m/s], shape (..., 3).

        Central difference with step :data:`~hifi.constants.VELOCITY_FD_STEP_S`; exact for the
        piecewise-linear positions of a track away from keyframes. The run starts at t = 0, so
        there (and before it) the difference is one-sided, forward: a track that moves from its
        first keyframe at t = 0 has its first segment's velocity at t = 0, not half of it (the
        track is held still before its first keyframe).
        """
        t = np.asarray(t_s, dtype=float)
        h = VELOCITY_FD_STEP_S
        lo = np.maximum(t - h, np.minimum(t, 0.0))
        dt = (t + h - lo)[..., None] if np.ndim(t) else t + h - lo
        return (self.pose_at(name, t + h).translation - self.pose_at(name, lo).translation) / dt

    def extent_m(self) -> float:
        """Bound on the distance of any point of any body from the scene origin [m] (>= 1 mm),
        so on the magnitude of every scene coordinate.

        The largest over bodies (objects and sensors) of: the object's vertex radius (largest
        vertex distance from its own origin; 0 for a sensor) plus, for the body and every
        ancestor up its own parent chain, its largest offset from its parent (largest norm of
        its fixed translation or of its track's keyframe positions; a linear track moves on
        straight lines between keyframes, so never farther; a spline track is bounded by its
        Bezier control points, :meth:`hifi.world.motion.Track.max_offset_m`). Rotations keep norms, so each point of a body lies
        within that sum of the scene origin whatever the poses. Used to scale float32 tolerances
        (``hifi.caster``); unlike a sum over all bodies, it does not grow with their number.
        """
        reach: dict[str, float] = {}

        def chain(name: str) -> float:
            """Sum of the largest offsets of ``name`` and its ancestors [m], memoised."""
            if name not in reach:
                body = self.bodies[name]
                if isinstance(body.local, Track):
                    own = body.local.max_offset_m()
                else:
                    pos = body.local.translation
                    own = float(np.max(np.linalg.norm(np.reshape(pos, (-1, 3)), axis=1))) if np.size(pos) else 0.0
                reach[name] = own + (chain(body.parent) if body.parent is not None else 0.0)
            return reach[name]

        radius = {o.name: o.radius_m for o in self.objects}
        bound = max([radius.get(name, 0.0) + chain(name) for name in self.bodies] or [0.0])
        return max(bound, 1e-3)

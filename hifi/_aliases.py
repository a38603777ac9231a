"""The modules' old flat names (``hifi.scene``, ``hifi.plot`` ...), importable as aliases.

hifi's modules moved into rooms (``hifi.world.scene``, ``hifi.viz.plot`` ...). An old name
imports the same module object as its new one (``hifi.scene is hifi.world.scene``), so code,
pickles and ``mock.patch`` targets written against it keep working. The names the
documentation promised (:data:`SILENT`) import without a word; every other old name warns with a
:class:`DeprecationWarning` that names the new path. In-repository code uses the new names only
(``tests/hifi/test_aliases.py``).

One mechanism: a :data:`sys.meta_path` finder (:func:`install`, called by ``hifi/__init__.py``)
that answers for the old names only, and hands back the new module.
"""

from __future__ import annotations

import sys
import warnings
from importlib import import_module
from importlib.abc import Loader, MetaPathFinder
from importlib.machinery import ModuleSpec

#: Old module name under ``hifi`` -> its new dotted path under ``hifi``.
MOVED = {
    **{m: f"api.{m}" for m in ("model", "params", "registry", "bus", "rng", "timebase", "estimate", "meshes")},
    **{m: f"world.{m}" for m in ("scene", "motion", "vehicle", "earth")},
    **{m: f"run.{m}" for m in ("scenario", "simulation", "timemanager", "output", "dataset", "checks",
                               "reference", "accessor")},
    **{m: f"runtime.{m}" for m in ("threads", "interrupt", "progress", "safety")},
    **{m: f"viz.{m}" for m in ("plot", "view", "imaging")},
    **{m: f"analysis.{m}" for m in ("lidar_stats", "metrics")},
}

#: Old names the documentation (README.md, docs/*.md, the notebooks) used: no warning.
SILENT = frozenset({"plot", "view", "metrics", "lidar_stats", "dataset", "motion", "scene", "model",
                    "params", "bus", "registry", "reference", "estimate", "vehicle", "safety"})

_PREFIX = "hifi."


def new_name(old: str) -> str | None:
    """The new full name of an old full module name (``"hifi.scene"`` -> ``"hifi.world.scene"``),
    None for a name that did not move."""
    if not old.startswith(_PREFIX):
        return None
    head, _, rest = old[len(_PREFIX):].partition(".")
    if head not in MOVED:
        return None
    return _PREFIX + MOVED[head] + ("." + rest if rest else "")


def _caller_stacklevel() -> int:
    """The stacklevel of the first frame outside the import machinery and this module, so that
    the warning points at the user's import statement. :func:`warnings.warn` does not count the
    frames of ``importlib._bootstrap`` (as it does not, neither does this)."""
    frame, level = sys._getframe(1), 1
    while frame is not None:
        name = frame.f_code.co_filename
        internal = "importlib" in name and "_bootstrap" in name
        if not internal:
            if name != __file__ and "importlib" not in name:
                return level
            level += 1
        frame = frame.f_back
    return 1


class _AliasLoader(Loader):
    """Loads an old name as the module of its new one (which it imports first)."""

    def __init__(self, new: str, warn: bool):
        self.new = new
        self.warn = warn

    def create_module(self, spec):
        if self.warn:
            warnings.warn(f"{spec.name} is deprecated: import {self.new} instead", DeprecationWarning,
                          stacklevel=_caller_stacklevel())
        module = import_module(self.new)
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec              # the import system set the alias's spec on it

    def get_code(self, fullname):
        """``python -m hifi.reference`` runs ``hifi.run.reference`` as ``__main__``."""
        return compile(f"import runpy\nrunpy.run_module({self.new!r}, run_name='__main__', alter_sys=True)\n",
                       f"<alias {fullname} -> {self.new}>", "exec")


class AliasFinder(MetaPathFinder):
    """Finds the old names of :data:`MOVED` (and their submodules) and nothing else."""

    @classmethod
    def find_spec(cls, fullname, path=None, target=None):
        new = new_name(fullname)
        if new is None:
            return None
        head = fullname[len(_PREFIX):].partition(".")[0]
        return ModuleSpec(fullname, _AliasLoader(new, warn=head not in SILENT))


def install() -> None:
    """Put :class:`AliasFinder` on :data:`sys.meta_path` (once)."""
    if AliasFinder not in sys.meta_path:
        sys.meta_path.append(AliasFinder)

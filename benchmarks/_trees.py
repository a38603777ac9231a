"""Trees of this repository at given commits, each installed into its own environment.

Shared by ``same_bytes.py`` (outputs of two commits) and ``bench_run.py`` (timings of two
commits). Since hifi finds its models through entry points (installed metadata), an older
checkout put first on ``PYTHONPATH`` would mix its sources with this checkout's entry points;
so each side here is a checkout of its own (a ``git worktree`` of the commit, or a copy of the
working tree: tracked and untracked, not ignored, files), installed non-editable (setuptools'
``build_py`` and ``egg_info``: the packages, package data and entry points of that side's
``pyproject.toml``) into a virtual environment of its own that sees the given site-packages for
the dependencies, with its console scripts (``hifi``) in its ``bin``.

Use::

    tmp = make_root("prefix_")
    worktrees = []
    try:
        side = prepare_side("base", "HEAD~1", resolve_commit("HEAD~1", "--base"), tmp,
                            base_site_packages(None), worktrees)
        subprocess.run([side.hifi, "run", ...], cwd=side.checkout, env=clean_env())
    finally:
        remove_root(tmp, worktrees, keep=False)
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

#: ``--head`` value that means the working tree (uncommitted edits included).
WORKTREE = "WORKTREE"


class TreeError(Exception):
    """A bad argument or a side that cannot be prepared: one line for the user."""


def _git(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True, text=True, check=check)


def resolve_commit(ref: str, option: str) -> str:
    """The full hash of ``ref``, or a one-line TreeError naming the option."""
    proc = _git("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False)
    if proc.returncode != 0 or not proc.stdout.strip():
        raise TreeError(f"{option} {ref!r} is not a commit of {REPO} "
                        f"(a hash, branch, tag or HEAD~N; {WORKTREE} for the working tree as --head)")
    return proc.stdout.strip()


def base_site_packages(python_env: Path | None) -> list[str]:
    """The site-packages folders the side environments see for the dependencies: those of the
    running interpreter, or of the environment at ``python_env`` (``--python-env``)."""
    if python_env is None:
        paths = sysconfig.get_paths()
        found = [paths["purelib"], paths["platlib"]]
    else:
        python = Path(python_env) / "bin" / "python"
        if not python.exists():
            raise TreeError(f"--python-env {str(python_env)!r} has no bin/python")
        out = subprocess.run([str(python), "-c", "import sysconfig; p = sysconfig.get_paths(); "
                              "print(p['purelib']); print(p['platlib'])"],
                             capture_output=True, text=True, check=True).stdout.split()
        found = out
    return list(dict.fromkeys(found))


@dataclass
class Side:
    """One side of a comparison: its checkout, its environment, its label."""

    label: str
    ref: str
    commit: str | None
    checkout: Path
    venv: Path

    @property
    def python(self) -> Path:
        return self.venv / "bin" / "python"

    @property
    def hifi(self) -> Path:
        return self.venv / "bin" / "hifi"

    def roots(self) -> dict[str, str]:
        """This side's own folders by placeholder: paths under them name the same file."""
        return {"<checkout>": str(self.checkout), "<env>": str(self.venv)}

    def describe(self) -> str:
        return f"{self.ref} ({self.commit[:10]})" if self.commit else "the working tree"


def clean_env() -> dict[str, str]:
    """The environment of the side processes: no PYTHONPATH, no virtual environment leaking in."""
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONNOUSERSITE"] = "1"
    return env


def make_root(prefix: str) -> Path:
    """A temporary folder for the sides, with ``shared`` linked to the repository's
    ``../shared`` when there is one (``../shared/data`` resolves beside each checkout as beside
    the repository)."""
    tmp = Path(tempfile.mkdtemp(prefix=prefix)).resolve()
    shared = REPO.parent / "shared"
    if shared.is_dir():
        (tmp / "shared").symlink_to(shared)
    return tmp


def remove_root(tmp: Path, worktrees: list[Path], keep: bool = False) -> None:
    """Remove the worktrees ``prepare_side`` added and the folder ``make_root`` made (with
    ``keep``, leave both and say where)."""
    if keep:
        print(f"kept {tmp}", file=sys.stderr)
        return
    for wt in worktrees:
        _git("worktree", "remove", "--force", str(wt), check=False)
    shutil.rmtree(tmp, ignore_errors=True)
    _git("worktree", "prune", check=False)


def _copy_working_tree(dest: Path) -> None:
    """Tracked and untracked (not ignored) files of the working tree, as they are now."""
    listing = _git("ls-files", "-z", "--cached", "--others", "--exclude-standard").stdout
    for rel in sorted(set(filter(None, listing.split("\0")))):
        src = REPO / rel
        if not (src.is_file() or src.is_symlink()):
            continue            # deleted in the working tree, or a submodule
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, target, follow_symlinks=False)


def prepare_side(label: str, ref: str, commit: str | None, tmp: Path, site_dirs: list[str],
                 worktrees: list[Path]) -> Side:
    """Check out (``commit``) or copy (``commit`` None: the working tree) one side into
    ``tmp/label`` and install it into its own environment ``tmp/venv-label``; a worktree added
    is appended to ``worktrees`` (for ``remove_root``)."""
    checkout = tmp / label
    if commit is None:
        checkout.mkdir()
        _copy_working_tree(checkout)
    else:
        proc = _git("worktree", "add", "--detach", "--quiet", str(checkout), commit, check=False)
        if proc.returncode != 0:
            raise TreeError(f"git worktree add of {ref!r} failed: {proc.stderr.strip().splitlines()[-1:]}")
        worktrees.append(checkout)
    side = Side(label, ref, commit, checkout, tmp / f"venv-{label}")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(side.venv)], check=True)
    own_site = subprocess.run([str(side.python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              capture_output=True, text=True, check=True, env=clean_env()).stdout.strip()
    Path(own_site, "_trees_base.pth").write_text("\n".join(site_dirs) + "\n")
    # setuptools' build_py and egg_info: the packages and package data a wheel of this side's
    # pyproject.toml would hold, and its metadata (entry points included), into the environment.
    # (pip install needs the wheel package for bdist_wheel, which the environment may lack.)
    proc = subprocess.run([str(side.python), "-c", "import setuptools; setuptools.setup()", "-q",
                           "build_py", "--build-lib", own_site, "egg_info", "--egg-base", own_site],
                          capture_output=True, text=True, env=clean_env(), cwd=checkout)
    if proc.returncode != 0:
        last = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise TreeError(f"installing {side.describe()} failed: {last}")
    _write_console_scripts(side, Path(own_site))
    where = subprocess.run([str(side.python), "-c", "import hifi; print(hifi.__file__)"],
                           capture_output=True, text=True, env=clean_env(), cwd=tmp)
    if where.returncode != 0 or not where.stdout.strip().startswith(str(side.venv)):
        raise TreeError(f"{side.describe()}: hifi imports from {where.stdout.strip() or where.stderr.strip()!r}, "
                        f"not from its own environment {side.venv}")
    return side


def _write_console_scripts(side: Side, site: Path) -> None:
    """The side's console scripts (``[console_scripts]`` of its entry points) in its ``bin``."""
    import configparser
    parser = configparser.ConfigParser(delimiters=("=",))
    parser.optionxform = str
    for info in site.glob("*.egg-info"):
        parser.read(info / "entry_points.txt", encoding="utf-8")
    if not parser.has_section("console_scripts"):
        raise TreeError(f"{side.describe()}: no console scripts in its entry points")
    for name, target in parser.items("console_scripts"):
        module, _, attr = target.strip().partition(":")
        script = side.venv / "bin" / name
        script.write_text(f"#!{side.python}\n"
                          "import importlib, sys\n"
                          f"obj = importlib.import_module({module.strip()!r})\n"
                          f"for part in {attr.strip()!r}.split('.'):\n"
                          "    obj = getattr(obj, part)\n"
                          "sys.exit(obj())\n")
        script.chmod(0o755)

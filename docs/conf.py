"""Sphinx configuration of hifi's documentation: the API reference, built from the numpydoc
docstrings, and the Markdown pages of docs/.

Build (warnings are errors)::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html
"""

from __future__ import annotations

from hifi import __version__

project = "hifi"
author = "hifi contributors"
copyright = "hifi contributors, BSD 3-Clause License"
version = release = __version__

extensions = [
    "sphinx.ext.autodoc",          # the docstrings of every public module, class and function
    "sphinx.ext.autosummary",      # one page per module, class and function, found recursively
    "numpydoc",                    # Parameters / Returns / Notes / References sections
    "myst_parser",                 # the Markdown pages of docs/ (scenario.md, datasets.md, ...)
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# _autosummary/ holds the stubs autosummary writes at each build (one per module, class and
# function); they are regenerated from the code, never edited, and not committed.
exclude_patterns = ["_build", "_templates", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]

# --- API reference -------------------------------------------------------------------------------

# Packages the reference covers (docs/api.rst lists the same six). Importing them is cheap and has
# no side effects (no MPI, no BVH, no threads): mpi imports mpi4py only when a job starts.
API_PACKAGES = ["hifi", "sensors", "gnss", "optics", "mpi", "autonomy"]

# Modules left out of the reference, by full name (the recursive templates in
# _templates/autosummary skip them and everything under them). None: every public module is in.
API_EXCLUDED_MODULES: list[str] = []

autosummary_generate = True
# The stubs are written afresh at every build: a stub left from an earlier build (a module since
# excluded, renamed or moved into a package) would be a page outside every toctree.
import shutil as _shutil                                           # noqa: E402
from pathlib import Path as _Path                                  # noqa: E402

_shutil.rmtree(_Path(__file__).resolve().parent / "_autosummary", ignore_errors=True)
# A name a package re-exports (hifi.Simulation is hifi.run.simulation.Simulation) is documented once,
# in the module that defines it: documenting it again under the package would describe one object
# twice (Sphinx's "duplicate object description").
autosummary_imported_members = False
autosummary_ignore_module_all = True
autosummary_context = {"excluded_modules": API_EXCLUDED_MODULES}

autodoc_default_options = {
    "member-order": "bysource",
    "show-inheritance": True,
}
# Type hints are shown in the signature; the docstring's Parameters section carries the unit and
# shape, which a hint cannot.
autodoc_typehints = "signature"
autodoc_preserve_defaults = True      # a default reads as written (np.inf), not as its repr

# numpydoc renders each class's members itself unless told not to; the class template lists them
# through autosummary, so numpydoc's own list would describe each member a second time.
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# --- Markdown pages ------------------------------------------------------------------------------

myst_heading_anchors = 3              # "#top-level" links between and inside the Markdown pages

# --- Warnings ------------------------------------------------------------------------------------

# numpydoc's References section is the bibliography of a model (house style: the paper each model
# comes from); an entry need not be cited as [1]_ in the text, so Sphinx's "Citation [R...] is not
# referenced" says nothing wrong. A citation the text names and the section lacks is still an
# error (docutils' "Unknown target name").
suppress_warnings = ["ref.citation"]

# --- HTML ----------------------------------------------------------------------------------------

html_theme = "alabaster"
html_title = f"hifi {release}"


# --- Links from the Markdown pages to files outside docs/ -----------------------------------------


from sphinx import addnodes as _addnodes                           # noqa: E402
from sphinx.transforms.post_transforms import SphinxPostTransform  # noqa: E402


class _UnlinkOutsideDocs(SphinxPostTransform):
    """Render a Markdown link to a repository file outside docs/ (``[README](../README.md)``) as
    its text: the link works where the pages are read as files (a repository browser), but the
    HTML build has no page for that file. A link to a missing page inside docs/ still warns."""

    default_priority = 8        # before myst's reference resolver (9), which would warn

    def run(self, **kwargs):
        srcdir = _Path(self.env.srcdir).resolve()
        for node in list(self.document.findall(_addnodes.pending_xref)):
            if node.get("reftype") != "myst" or node.get("refdomain") != "doc":
                continue
            target = node["reftarget"]
            if target in self.env.all_docs:
                continue
            if not (srcdir / target).resolve().is_relative_to(srcdir):
                node.replace_self(node[0].deepcopy())


def setup(app):
    app.add_post_transform(_UnlinkOutsideDocs)
    # A ```mermaid block (docs/architecture.md) is a diagram GitHub draws; Pygments has no mermaid
    # lexer, so the HTML shows the diagram's source as plain text instead of warning.
    from pygments.lexers.special import TextLexer
    app.add_lexer("mermaid", TextLexer)
    return {"parallel_read_safe": True, "parallel_write_safe": True}

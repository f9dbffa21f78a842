"""Sphinx configuration for the rlvr-gym docs.

Why Sphinx + MyST: it is what Gymnasium, Ray and PyTorch use, so readers of this field know its
layout; MyST lets every page stay plain Markdown (the README's dialect, with fenced code blocks
that tests/project/test_docs.py runs as written); and autodoc builds the API reference from the same
docstrings `help()` shows, so the reference cannot drift from the code. The build runs with
warnings as errors in CI (tests/project/test_docs.py), offline: no intersphinx, nothing fetched.
"""

from __future__ import annotations

project = "rlvr-gym"
author = "rlvr-gym contributors"
copyright = "rlvr-gym contributors"  # noqa: A001 - Sphinx's name for it

extensions = [
    "myst_parser",  # Markdown pages
    "sphinx.ext.autodoc",  # API reference from docstrings
    "sphinx.ext.napoleon",  # Google-style "Args:" sections in some docstrings
    "sphinxarg.ext",  # the CLI page from the real argparse parser
]

source_suffix = {".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build"]

# MyST: `{role}` and ```{directive} in Markdown; heading anchors so pages can link to sections;
# substitutions for the facts a page shows from the code ({{ sandbox_layers }}: the list
# `rlvr-gym sandbox-info` prints, so the page cannot drift from it).
myst_enable_extensions = ["colon_fence", "deflist", "substitution"]
myst_heading_anchors = 3


def _sandbox_layers() -> str:
    from rlvr_gym.verifiers.code.sandbox import LAYERS

    return "\n".join(
        ["| layer | what it is |", "|---|---|", *(f"| `{k}` | {v} |" for k, v in LAYERS.items())]
    )


myst_substitutions = {"sandbox_layers": _sandbox_layers()}

# autodoc: members in source order, signatures without the type clutter (types go in the text).
autodoc_member_order = "bysource"
autodoc_typehints = "description"
autodoc_default_options = {"members": True, "show-inheritance": True}
# Only what a reader needs to build the reference; anything heavier is imported lazily by the code.
autodoc_mock_imports: list[str] = []

html_theme = "furo"
html_title = "rlvr-gym"

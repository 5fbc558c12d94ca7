"""Sphinx configuration: the API reference is built by autodoc from the
*installed* package's docstrings (the nox session `docs` installs the wheel first)."""
import cuda.core

project = "cuda-core-ipcsafe"
author = "cuda-core-ipcsafe developers"
release = cuda.core.__ipcsafe_version__
version = release
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]
autodoc_default_options = {"members": True, "undoc-members": True, "show-inheritance": False}
autodoc_member_order = "bysource"
napoleon_use_ivar = True         # "Attributes" sections as field lists: dataclass fields are also listed by autodoc
autodoc_docstring_signature = True   # Cython's embedsignature first line becomes the signature
nitpicky = False
exclude_patterns = ["_build", "API.md"]
html_theme = "alabaster"
html_static_path = []

"""Where the longer explanation in a CUDAError message comes from (upstream module
path ``cuda.core._utils.enum_explanations_helpers``).

cuda-bindings' ``CUresult`` and ``cudaError_t`` members carry the CUDA headers'
per-error documentation as ``__doc__`` from cuda-bindings 12.9.6 on (12.x line)
and 13.2.0 on (13.x line). With such bindings an error's explanation is that
docstring turned into plain text (:func:`clean_enum_member_docstring`); with
older ones the caller's fallback table is used. Which source applies is decided
once per table by :func:`get_best_available_explanations`.
"""
from __future__ import annotations

import importlib.metadata
import re

__all__ = ["DocstringBackedExplanations", "clean_enum_member_docstring", "get_best_available_explanations"]

# The first releases of each line whose error enums carry usable docstrings.
_FIRST_12X_WITH_DOCSTRINGS = (12, 9, 6)
_FIRST_13X_WITH_DOCSTRINGS = (13, 2, 0)

# A Sphinx inline role: ``:role:`text``` or ``:domain:role:`text```; group 1 is the text.
_INLINE_ROLE = re.compile(r":(?:[a-z]+:)?[a-z]+:`([^`]+)`")
# A cross-reference target's leading "~." / "." (``~.cuInit()`` reads as ``cuInit()``).
_TARGET_PREFIX = re.compile(r"^~?\.")
_BOLD = re.compile(r"\*\*([^*]+)\*\*")
_ITALIC = re.compile(r"\*([^*]+)\*")
_WHITESPACE = re.compile(r"\s+")
# A hyphen that line wrapping left with a space on one side only ("non- linear",
# "word -word"); a spaced " - " separator has spaces on both sides and is kept.
_WRAPPED_HYPHEN = re.compile(r"(?<=\w)(?:- | -)(?=\w)")
# cuda-bindings' codegen turns the header's ``"Interactions with the CUDA Driver
# API"`` reference into a broken role; this is the broken form's start.
_BROKEN_INTERACTIONS_ROLE = "\n:py:obj:`~.Interactions`"


def _binding_version():
    """The installed cuda-bindings' ``(major, minor, patch)``; ``(0, 0, 0)`` when
    neither cuda-bindings nor cuda-python is installed."""
    from cuda.core._utils.version import binding_version

    try:
        return binding_version()
    except importlib.metadata.PackageNotFoundError:
        return (0, 0, 0)


def _binding_version_has_usable_enum_docstrings(version):
    """Whether cuda-bindings `version` (a ``(major, minor, patch)`` tuple) ships
    error enums whose members' ``__doc__`` explains them: 12.9.6 up to 13.0.0,
    and 13.2.0 on."""
    return _FIRST_12X_WITH_DOCSTRINGS <= version < (13, 0, 0) or version >= _FIRST_13X_WITH_DOCSTRINGS


def clean_enum_member_docstring(doc):
    """An error enum member's ``__doc__`` as one line of plain text (None stays None).

    Sphinx roles become their text (``:py:obj:`~.cuInit()``` reads ``cuInit()``),
    ``**bold**`` and ``*italic*`` markers go, runs of whitespace become one space,
    the ends are stripped, and hyphens split by line wrapping are joined again.
    """
    if doc is None:
        return None
    text = doc.replace(_BROKEN_INTERACTIONS_ROLE, ' "Interactions ')
    text = _INLINE_ROLE.sub(lambda match: _TARGET_PREFIX.sub("", match.group(1)), text)
    text = _BOLD.sub(r"\1", text)
    text = _ITALIC.sub(r"\1", text)
    text = _WHITESPACE.sub(" ", text).strip()
    return _WRAPPED_HYPHEN.sub("-", text)


class DocstringBackedExplanations:
    """Explanations read from an error enum's member docstrings, looked up like
    the fallback tables: ``get(code, default=None)``."""

    __slots__ = ("_enum_type",)

    def __init__(self, enum_type):
        self._enum_type = enum_type

    def get(self, code, default=None):
        """The cleaned docstring of the member numbered `code`; `default` when the
        enum has no such member or the member has no docstring."""
        try:
            member = self._enum_type(code)
        except ValueError:
            return default
        doc = member.__doc__
        if doc is None:
            return default
        return clean_enum_member_docstring(doc)


def get_best_available_explanations(enum_type, fallback):
    """The explanation source for `enum_type`: its member docstrings where the
    installed cuda-bindings has usable ones, else `fallback` (a table, or a
    callable returning one, called only then)."""
    if _binding_version_has_usable_enum_docstrings(_binding_version()):
        return DocstringBackedExplanations(enum_type)
    return fallback() if callable(fallback) else fallback

"""Explanations of runtime ``cudaError_t`` codes for CUDAError messages (upstream module
path ``cuda.core._utils.runtime_cuda_error_explanations``; needs cuda-bindings).

``RUNTIME_CUDA_ERROR_EXPLANATIONS.get(code)`` is the cleaned ``__doc__`` of the
``cudaError_t`` member numbered `code` where the installed cuda-bindings documents
its members (see :mod:`cuda.core._utils.enum_explanations_helpers`). With older
cuda-bindings it is an empty table: the message then carries the runtime's own
``cudaGetErrorString`` text, as it does for a code the bindings do not know.
"""
from __future__ import annotations

from cuda.bindings import runtime

from cuda.core._utils.enum_explanations_helpers import get_best_available_explanations


# The table used with cuda-bindings whose members carry no docstrings (none: the runtime's text stands).
def _load_fallback_explanations():
    return {}


RUNTIME_CUDA_ERROR_EXPLANATIONS = get_best_available_explanations(runtime.cudaError_t, _load_fallback_explanations)

"""Explanations of driver ``CUresult`` codes for CUDAError messages (upstream module
path ``cuda.core._utils.driver_cu_result_explanations``; needs cuda-bindings).

``DRIVER_CU_RESULT_EXPLANATIONS.get(code)`` is the cleaned ``__doc__`` of the
``CUresult`` member numbered `code` where the installed cuda-bindings documents
its members (see :mod:`cuda.core._utils.enum_explanations_helpers`). With older
cuda-bindings it is an empty table: the message then carries the driver's own
``cuGetErrorString`` text, as it does for a code the bindings do not know.
"""
from __future__ import annotations

from cuda.bindings import driver

from cuda.core._utils.enum_explanations_helpers import get_best_available_explanations


# The table used with cuda-bindings whose members carry no docstrings (none: the driver's text stands).
def _load_fallback_explanations():
    return {}


DRIVER_CU_RESULT_EXPLANATIONS = get_best_available_explanations(driver.CUresult, _load_fallback_explanations)

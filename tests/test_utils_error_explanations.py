"""Upstream 1.2.2's private helpers that its own tests import: the error-enum
explanations (cuda.core._utils.enum_explanations_helpers and the two tables),
cuda.core._utils.clear_error_support, and cuda_utils' _check_*_error,
precondition and the multiprocessing 'fork' warning."""
import warnings
from unittest.mock import patch

import pytest


class _Member:
    def __init__(self, doc):
        self.__doc__ = doc


class _Enum:
    """An enum-like callable: code -> member, ValueError for an unknown code."""

    def __init__(self, members):
        self._members = members

    def __call__(self, code):
        try:
            return self._members[code]
        except KeyError:
            raise ValueError(code) from None


@pytest.mark.no_driver_ok
@pytest.mark.parametrize(("raw", "expected"), [
    ("one\ntwo   three\n", "one two three"),
    ("see\n:py:obj:`~.cuInit()` and :c:func:`cuLaunchKernel` or :term:`device`", "see cuInit() and cuLaunchKernel or device"),
    ("**Note:** *this*", "Note: this"),
    ("non- linear, word -word, L2- cache", "non-linear, word-word, L2-cache"),
    ("causes are - a. bad access", "causes are - a. bad access"),
    ('see\n:py:obj:`~.Interactions`with the CUDA Driver API" for more', 'see "Interactions with the CUDA Driver API" for more'),
])
def test_clean_enum_member_docstring(raw, expected):
    from cuda.core._utils.enum_explanations_helpers import clean_enum_member_docstring

    assert clean_enum_member_docstring(raw) == expected
    assert clean_enum_member_docstring(None) is None


@pytest.mark.no_driver_ok
def test_docstring_backed_explanations_default():
    from cuda.core._utils.enum_explanations_helpers import DocstringBackedExplanations

    table = DocstringBackedExplanations(_Enum({1: _Member("  the\n text "), 2: _Member(None)}))
    assert table.get(1) == "the text"
    assert table.get(2) is None and table.get(2, "d") == "d"
    assert table.get(3) is None and table.get(3, default="d") == "d"


@pytest.mark.no_driver_ok
@pytest.mark.parametrize(("version", "usable"), [
    ((12, 9, 5), False), ((12, 9, 6), True), ((13, 0, 0), False), ((13, 1, 1), False), ((13, 2, 0), True),
])
def test_docstrings_used_by_bindings_version(monkeypatch, version, usable):
    from cuda.core._utils import enum_explanations_helpers as helpers

    assert helpers._binding_version_has_usable_enum_docstrings(version) is usable
    loads = []

    def load():
        loads.append(1)
        return {7: "fallback"}

    monkeypatch.setattr(helpers, "_binding_version", lambda: version)
    table = helpers.get_best_available_explanations(_Enum({7: _Member("doc")}), load)
    assert table.get(7) == ("doc" if usable else "fallback")
    assert loads == ([] if usable else [1])


@pytest.mark.no_driver_ok
def test_clear_error_support():
    from cuda.core._utils.clear_error_support import (
        assert_type,
        assert_type_str_or_bytes_like,
        raise_code_path_meant_to_be_unreachable,
    )

    assert_type(1, int)
    assert_type_str_or_bytes_like(bytearray())
    with pytest.raises(TypeError, match="Expected type str, but got int"):
        assert_type(1, str)
    with pytest.raises(TypeError, match="Expected type str or bytes or bytearray, but got int"):
        assert_type_str_or_bytes_like(1)
    with pytest.raises(RuntimeError, match="meant to be unreachable"):
        raise_code_path_meant_to_be_unreachable()


@pytest.mark.no_driver_ok
def test_precondition():
    from cuda.core._utils.cuda_utils import precondition

    def positive(x, what=""):
        if x < 0:
            raise ValueError(f"{what}: negative")

    @precondition(positive, what="x")
    def double(x):
        """Doubles."""
        return 2 * x

    assert double(3) == 6 and double.__doc__ == "Doubles."
    with pytest.raises(ValueError, match="x: negative"):
        double(-1)


def test_check_driver_error_carries_the_explanation():
    driver = pytest.importorskip("cuda.bindings.driver")
    from cuda.core._utils import cuda_utils

    error = driver.CUresult.CUDA_ERROR_INVALID_VALUE
    assert cuda_utils._check_driver_error(driver.CUresult.CUDA_SUCCESS) == 0
    explanation = cuda_utils.DRIVER_CU_RESULT_EXPLANATIONS.get(int(error))
    if explanation is None:
        pytest.skip("this cuda-bindings' CUresult members carry no docstrings")
    with pytest.raises(cuda_utils.CUDAError) as raised:
        cuda_utils._check_driver_error(error)
    assert str(raised.value) == f"CUDA_ERROR_INVALID_VALUE: {explanation}"
    assert raised.value.code == int(error)


def test_check_runtime_error_carries_the_explanation():
    runtime = pytest.importorskip("cuda.bindings.runtime")
    from cuda.core._utils import cuda_utils

    error = runtime.cudaError_t.cudaErrorInvalidValue
    assert cuda_utils._check_runtime_error(runtime.cudaError_t.cudaSuccess) == 0
    explanation = cuda_utils.RUNTIME_CUDA_ERROR_EXPLANATIONS.get(int(error))
    if explanation is None:
        pytest.skip("this cuda-bindings' cudaError_t members carry no docstrings")
    with pytest.raises(cuda_utils.CUDAError) as raised:
        cuda_utils._check_runtime_error(error)
    assert str(raised.value) == f"cudaErrorInvalidValue: {explanation}"


@pytest.mark.no_driver_ok
def test_check_nvrtc_error_without_handle():
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    from cuda.core._utils import cuda_utils

    assert cuda_utils._check_nvrtc_error(nvrtc.nvrtcResult.NVRTC_SUCCESS) == 0
    with pytest.raises(cuda_utils.NVRTCError, match="NVRTC_ERROR_COMPILATION"):
        cuda_utils._check_nvrtc_error(nvrtc.nvrtcResult.NVRTC_ERROR_COMPILATION)


@pytest.mark.no_driver_ok
def test_fork_warning_once():
    from cuda.core._utils import cuda_utils

    with patch("multiprocessing.get_start_method", return_value="fork"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cuda_utils.reset_fork_warning()
        cuda_utils.check_multiprocessing_start_method()
        cuda_utils.check_multiprocessing_start_method()
    assert [x.category for x in w] == [UserWarning]
    assert "'fork'" in str(w[0].message) and "spawn" in str(w[0].message)
    assert "undefined behavior" in str(w[0].message)

    with patch("multiprocessing.get_start_method", side_effect=RuntimeError), \
            patch("platform.system", return_value="Linux"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cuda_utils.reset_fork_warning()
        cuda_utils.check_multiprocessing_start_method()
    assert len(w) == 1 and "not set" in str(w[0].message)

    with patch("multiprocessing.get_start_method", return_value="spawn"), warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        cuda_utils.reset_fork_warning()
        cuda_utils.check_multiprocessing_start_method()
    assert w == []


def test_pickling_an_ipc_object_under_fork_warns(ipc_mr, stream):
    from cuda.core import EventOptions
    from cuda.core._event import _reduce_event
    from cuda.core._memory._device_memory_resource import _deep_reduce_device_memory_resource
    from cuda.core._memory._ipc import _reduce_allocation_handle
    from cuda.core._utils.cuda_utils import reset_fork_warning

    event = stream.record(options=EventOptions(ipc_enabled=True))
    for reduce, obj in [(_deep_reduce_device_memory_resource, ipc_mr), (_reduce_allocation_handle,
                                                                         ipc_mr.allocation_handle),
                        (_reduce_event, event)]:
        with patch("multiprocessing.get_start_method", return_value="fork"), \
                warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            reset_fork_warning()
            reduce(obj)
        assert [x.category for x in w] == [UserWarning], reduce.__name__
    event.close()


def test_check_driver_error_for_a_code_the_driver_cannot_name(device):
    from cuda.core._utils import cuda_utils

    with pytest.raises(cuda_utils.CUDAError) as raised:
        cuda_utils._check_driver_error(12345)
    assert str(raised.value) == "UNEXPECTED ERROR CODE: 12345"
    assert raised.value.code == 12345

"""cuda.core._utils.cuda_utils: CUDAError, handle_return and driver, with and
without cuda-bindings (optional). Each case runs in a fresh interpreter: one
with cuda.bindings made unimportable, one with a stand-in cuda.bindings.driver
(same shape as the real one: a CUresult IntEnum and (CUresult, *values) tuples)."""
import os
import textwrap

import pytest

from helpers import run_python

pytestmark = pytest.mark.no_driver_ok

FAKE_DRIVER = '''
import enum


class CUresult(enum.IntEnum):
    CUDA_SUCCESS = 0
    CUDA_ERROR_INVALID_VALUE = 1


def cuDriverGetVersion():
    return (CUresult.CUDA_SUCCESS, 13000)
'''


def _run(code, tmp_path, env_extra=None):
    script = tmp_path / "probe.py"
    script.write_text(textwrap.dedent(code))
    proc = run_python([script], env_extra=env_extra)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def test_without_cuda_bindings_import_works_and_driver_says_what_is_missing(tmp_path):
    out = _run('''
        import sys

        class Block:
            def find_spec(self, name, path=None, target=None):
                if name == "cuda.bindings" or name.startswith("cuda.bindings."):
                    raise ImportError("blocked for the test")

        sys.meta_path.insert(0, Block())
        import cuda.core
        from cuda.core._utils.cuda_utils import CUDAError, driver, handle_return

        assert handle_return((0, 5)) == 5 and handle_return((0, 1, 2)) == (1, 2)
        try:
            driver.cuDriverGetVersion()
        except ImportError as exc:
            assert "cuda-bindings" in str(exc), exc
            print("clear:", exc)
        else:
            raise SystemExit("driver worked without cuda-bindings")
        assert not driver
        from cuda.core import Device, LegacyPinnedMemoryResource   # upstream's allocates through cuda-bindings too

        Device().set_current()      # a Buffer without a stream binds the default stream: a context is needed
        legacy = LegacyPinnedMemoryResource()
        assert legacy.is_host_accessible and legacy.is_device_accessible and not legacy.is_managed
        assert legacy.allocate(0).size == 0
        try:
            legacy.allocate(16)
        except ImportError as exc:
            assert "cuda-bindings" in str(exc), exc
        else:
            raise SystemExit("LegacyPinnedMemoryResource allocated without cuda-bindings")
        try:
            legacy.device_id
        except RuntimeError as exc:
            assert "not bound to any GPU" in str(exc)
    ''', tmp_path)
    assert "clear:" in out


def test_with_cuda_bindings_driver_is_its_module_and_results_are_handled(tmp_path):
    pkg = tmp_path / "site" / "cuda" / "bindings"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "driver.py").write_text(FAKE_DRIVER)
    out = _run('''
        import cuda.bindings.driver as bindings_driver
        import cuda.core
        from cuda.core._utils.cuda_utils import CUDAError, driver, handle_return

        assert driver is bindings_driver
        assert handle_return(driver.cuDriverGetVersion()) == 13000
        try:
            handle_return((driver.CUresult.CUDA_ERROR_INVALID_VALUE,))
        except CUDAError as exc:
            assert str(exc).startswith("CUDA_ERROR_INVALID_VALUE"), exc
            assert exc.code == 1
            print("raised:", exc)
    ''', tmp_path, env_extra={"PYTHONPATH": os.pathsep.join(
        # the fake bindings first; then whatever put this package on the path
        # (a venv on the GPU machine that also sees upstream's cuda.core)
        filter(None, [str(tmp_path / "site"), os.environ.get("PYTHONPATH")]))})
    assert "raised: CUDA_ERROR_INVALID_VALUE" in out


def test_handle_return_refuses_what_is_not_a_result_tuple():
    from cuda.core._utils.cuda_utils import handle_return

    for bad in (None, 0, [], (), ("x",)):
        with pytest.raises(TypeError):
            handle_return(bad)

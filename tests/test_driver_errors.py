"""What cuda.core says when the driver cannot be used: every
CUresult of cuda.h is named even with no driver loaded, a stub libcuda
(CUDA_ERROR_STUB_LIBRARY) is named as such, and an empty
CUDA_CORE_DRIVER_LIBRARY is reported as an empty variable (an error: it is
not read as "unset"), not as if it named libcuda.so.1."""
import glob
import json
import os
import re
import sys
from pathlib import Path

import pytest

from helpers import DRIVER_SIMULATED, run_python

NO_DRIVER = {"CUDA_CORE_DRIVER_LIBRARY": "/nonexistent/libcuda.so.1"}


def _cuda_h():
    """cuda.h of the toolkit the package is built against (CUDA_HOME wins), or of a PyPI header wheel."""
    candidates = [os.path.join(os.environ[v], "include", "cuda.h") for v in ("CUDA_HOME", "CUDA_PATH")
                  if os.environ.get(v)]
    candidates.append("/usr/local/cuda/include/cuda.h")
    for site in sys.path:
        candidates += sorted(glob.glob(os.path.join(site, "nvidia", "*", "include", "cuda.h")))
    return next((Path(c) for c in candidates if os.path.isfile(c)), None)


def _cuda_h_results():
    path = _cuda_h()
    if path is None:
        pytest.skip("no cuda.h to compare against (looked at $CUDA_HOME, $CUDA_PATH, /usr/local/cuda and "
                    "nvidia/*/include in site-packages)")
    enum = re.search(r"typedef enum cudaError_enum \{(.*?)\} CUresult;", path.read_text(), re.S)
    assert enum, f"no CUresult enum in {path}"
    results = {int(v): n for n, v in re.findall(r"^\s*(CUDA_\w+)\s*=\s*(\d+)", enum.group(1), re.M)}
    assert len(results) > 90, f"only {len(results)} CUresult values parsed from {path}"
    return path, results


CHILD_NAMES = """
import json, sys
from cuda.core import CUDAError
from cuda.core._utils.cuda_utils import handle_return
out = {}
for code in json.loads(sys.argv[1]):
    try:
        handle_return((code,))
    except CUDAError as e:
        out[code] = str(e)
print(json.dumps(out))
"""


@pytest.mark.no_driver_ok
@pytest.mark.ours_only
def test_every_curesult_of_cuda_h_is_named_without_a_driver():
    path, results = _cuda_h_results()
    codes = sorted(c for c in results if c != 0)
    proc = run_python(["-c", CHILD_NAMES, json.dumps(codes)], env_extra=NO_DRIVER)
    assert proc.returncode == 0, proc.stderr
    messages = {int(k): v for k, v in json.loads(proc.stdout.strip().splitlines()[-1]).items()}
    wrong = [c for c in codes if not (messages.get(c) or "").startswith(results[c] + ":")]
    assert not wrong, (f"{len(wrong)} CUresults of {path} not named with no driver loaded: "
                       f"{', '.join(f'{results[c]} ({c})' for c in wrong)}; e.g. {messages.get(wrong[0])!r}")
    assert "no CUDA driver was found" in messages[34], messages[34]
    print(f"{len(codes)} CUresult names of {path} checked")


@pytest.mark.no_driver_ok
@pytest.mark.ours_only
@pytest.mark.sim_only
def test_a_stub_libcuda_is_named():
    """The toolkit's stub libcuda answers cuInit with CUDA_ERROR_STUB_LIBRARY (34);
    the simulated driver does the same when told to (CUDA_SIM_FAIL)."""
    proc = run_python(["-c", "from cuda.core import Device, CUDAError\ntry:\n    Device()\n"
                             "except CUDAError as e:\n    print(e)\nelse:\n    print('no error')\n"],
                      env_extra={"CUDA_SIM_FAIL": "cuInit=CUDA_ERROR_STUB_LIBRARY"})
    assert proc.returncode == 0, proc.stderr
    message = proc.stdout.strip()
    assert message.startswith("CUDA_ERROR_STUB_LIBRARY: cuInit(0) failed: CUDA_ERROR_STUB_LIBRARY"), message
    assert "stub libcuda" in message and os.environ["CUDA_CORE_DRIVER_LIBRARY"] in message, message
    assert "CUresult(34)" not in message and "unknown error" not in message, message
    assert DRIVER_SIMULATED


@pytest.mark.no_driver_ok
@pytest.mark.ours_only
def test_an_empty_driver_variable_is_named_as_empty():
    proc = run_python(["-c", "from cuda.core import Device, CUDAError\ntry:\n    Device()\n"
                             "except CUDAError as e:\n    print(e)\nelse:\n    print('no error')\n"],
                      env_extra={"CUDA_CORE_DRIVER_LIBRARY": ""})
    assert proc.returncode == 0, proc.stderr
    message = proc.stdout.strip()
    assert "CUDA_CORE_DRIVER_LIBRARY is set but empty" in message, message
    assert 'dlopen("libcuda.so.1")' not in message and "path from CUDA_CORE_DRIVER_LIBRARY" not in message, message


def test_cuda_utils_driver_without_cuda_bindings_names_what_to_install():
    """Without cuda-bindings, `driver` is a stand-in: a driver name (cuFoo/CUfoo) raises
    ImportError naming cuda-bindings; other attributes raise AttributeError, so that
    hasattr()/getattr(default) probes (the no-crash harness's) still work."""
    import importlib.util

    from cuda.core._utils import cuda_utils

    if importlib.util.find_spec("cuda.bindings") is not None:
        assert cuda_utils.driver.__name__ == "cuda.bindings.driver"
        return
    assert getattr(cuda_utils.driver, "is_closed", None) is None
    with pytest.raises(ImportError, match="needs cuda-bindings"):
        cuda_utils.driver.cuInit(0)
    with pytest.raises(ImportError, match="needs cuda-bindings"):
        cuda_utils.driver.CUresult

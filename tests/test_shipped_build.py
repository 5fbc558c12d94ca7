"""The shipped build carries no test switch (cpp/testing_switches.hpp): the
extension module's binary contains neither variable name, and the only
CUDA_CORE_* variable it names is the driver loader's."""
import re
from pathlib import Path

import pytest

pytestmark = [pytest.mark.no_driver_ok, pytest.mark.ours_only]

SWITCHES = (b"CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER", b"CUDA_CORE_TESTING_DISABLE_IPC_CACHE")


def extension_binaries():
    import cuda.core

    found = sorted(Path(cuda.core.__file__).parent.rglob("*.so"))
    assert found, f"no extension module next to {cuda.core.__file__}"
    return found


def printable_strings(data, min_len=4):
    """What `strings` prints: runs of printable ASCII."""
    return re.findall(rb"[\x20-\x7e]{%d,}" % min_len, data)


def test_the_shipped_binary_names_no_switch():
    for so in extension_binaries():
        data = so.read_bytes()
        for name in SWITCHES:
            assert name not in data, f"{so} contains {name.decode()}: the shipped build must not have the switch"
        assert b"CUDA_CORE_TESTING" not in data, so


def test_the_only_environment_variables_the_package_names_are_the_library_paths():
    """CUDA_CORE_DRIVER_LIBRARY (the driver) and CUDA_CORE_NVRTC_LIBRARY (NVRTC, for Program)."""
    allowed = (b"CUDA_CORE_DRIVER_LIBRARY", b"CUDA_CORE_NVRTC_LIBRARY")
    names = set()
    for so in extension_binaries():
        for s in printable_strings(so.read_bytes()):
            names.update(re.findall(rb"CUDA_CORE_[A-Z_]+", s))
    # (the compiler may split a message that names it: a fragment is a prefix of it)
    assert b"CUDA_CORE_DRIVER_LIBRARY" in names, names
    assert all(any(a.startswith(n) for a in allowed) for n in names), names


def test_the_switch_queries_are_off_whatever_the_environment(monkeypatch):
    from cuda.core._resource_handles import _testing_switches

    monkeypatch.setenv("CUDA_CORE_TESTING_LEGACY_IMPORT_ORDER", "1")
    monkeypatch.setenv("CUDA_CORE_TESTING_DISABLE_IPC_CACHE", "1")
    assert _testing_switches() == {"legacy_import_order": False, "ipc_cache_disabled": False}

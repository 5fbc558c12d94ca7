"""cuda.core.typing holds every name of cuda-core 1.2.2's, with upstream's
members, values and __module__ (the table below is read from the 1.2.2 wheel)."""
import enum
import typing

import pytest

import cuda.core.typing as ctyping

UPSTREAM_ENUMS = {
    "AddressModeType": {"WRAP": "wrap", "CLAMP": "clamp", "MIRROR": "mirror", "BORDER": "border"},
    "ArrayFormatType": {"UINT8": "uint8", "UINT16": "uint16", "UINT32": "uint32", "INT8": "int8",
                        "INT16": "int16", "INT32": "int32", "FLOAT16": "float16", "FLOAT32": "float32"},
    "CompilerBackendType": {"NVRTC": "NVRTC", "NVVM": "NVVM", "NVJITLINK": "nvJitLink", "DRIVER": "driver"},
    "FilterModeType": {"POINT": "point", "LINEAR": "linear"},
    "GraphConditionalType": {"IF": "if", "WHILE": "while", "SWITCH": "switch"},
    "GraphMemoryType": {"DEVICE": "device", "HOST": "host", "MANAGED": "managed"},
    "ManagedMemoryLocationType": {"DEVICE": "device", "HOST": "host", "HOST_NUMA": "host_numa"},
    "ObjectCodeFormatType": {"PTX": "ptx", "CUBIN": "cubin", "LTOIR": "ltoir", "FATBIN": "fatbin",
                             "OBJECT": "object", "LIBRARY": "library"},
    "PCHStatusType": {"CREATED": "created", "NOT_ATTEMPTED": "not_attempted", "FAILED": "failed"},
    "ReadModeType": {"ELEMENT_TYPE": "element_type", "NORMALIZED_FLOAT": "normalized_float"},
    "SourceCodeType": {"CXX": "c++", "PTX": "ptx", "NVVM": "nvvm"},
    "VirtualMemoryAccessType": {"READ_WRITE": "rw", "READ": "r"},
    "VirtualMemoryAllocationType": {"PINNED": "pinned", "MANAGED": "managed"},
    "VirtualMemoryGranularityType": {"MINIMUM": "minimum", "RECOMMENDED": "recommended"},
    "VirtualMemoryHandleType": {"POSIX_FD": "posix_fd", "WIN32_KMT": "win32_kmt", "FABRIC": "fabric"},
    "VirtualMemoryLocationType": {"DEVICE": "device", "HOST": "host", "HOST_NUMA": "host_numa",
                                  "HOST_NUMA_CURRENT": "host_numa_current"},
    "WorkqueueSharingScopeType": {"DEVICE_CTX": "device_ctx", "GREEN_CTX_BALANCED": "green_ctx_balanced"},
}
UPSTREAM_ALIASES = ["DevicePointerType", "DeviceResourcesType", "IsStreamType", "ProcessStateType"]


@pytest.mark.no_driver_ok
def test_all_is_upstreams():
    assert sorted(ctyping.__all__) == sorted([*UPSTREAM_ENUMS, *UPSTREAM_ALIASES])
    for name in ctyping.__all__:
        assert hasattr(ctyping, name), name


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("name", sorted(UPSTREAM_ENUMS))
def test_enum_members_values_and_module(name):
    cls = getattr(ctyping, name)
    assert issubclass(cls, enum.Enum) and issubclass(cls, str)
    assert cls.__module__ == "cuda.core.typing" and cls.__qualname__ == name
    assert {m.name: m.value for m in cls} == UPSTREAM_ENUMS[name]
    for member in cls:
        # a StrEnum member is its string: accepted wherever the string is
        assert member == member.value and str(member) == member.value
        assert cls(member.value) is member
    with pytest.raises(ValueError):
        cls("no such value")


@pytest.mark.no_driver_ok
def test_aliases():
    assert typing.get_args(ctyping.ProcessStateType) == ("running", "locked", "checkpointed", "failed")
    assert int in typing.get_args(ctyping.DevicePointerType)
    assert type(None) in typing.get_args(ctyping.DevicePointerType)
    assert ctyping.IsStreamType.__module__ == "cuda.core._stream"
    assert hasattr(ctyping.IsStreamType, "__cuda_stream__")
    from cuda.core import _context, _stream
    assert ctyping.DeviceResourcesType is _context.DeviceResourcesType
    assert ctyping.IsStreamType is _stream.IsStreamType


@pytest.mark.no_driver_ok
def test_device_pointer_type_names_bindings_type_when_installed():
    from cuda.core._utils.cuda_utils import driver
    args = typing.get_args(ctyping.DevicePointerType)
    if driver and hasattr(driver, "CUdeviceptr"):
        assert driver.CUdeviceptr in args
    else:
        assert args == (int, type(None))


@pytest.mark.no_driver_ok
def test_the_vmm_options_take_the_enums_and_their_strings():
    from cuda.core import VirtualMemoryResourceOptions
    a = VirtualMemoryResourceOptions(handle_type=ctyping.VirtualMemoryHandleType.POSIX_FD)
    b = VirtualMemoryResourceOptions(handle_type="posix_fd")
    assert a.handle_type == b.handle_type

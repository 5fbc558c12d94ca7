"""The NVML error classes (cuda.core.system.exceptions): cuda-bindings' own, as upstream 1.2.2's.

Each name is the class ``cuda.bindings.nvml`` raises, so ``except
cuda.core.system.NotFoundError`` catches what an NVML call raised. Every one
derives from :class:`NvmlError` (an ``Exception``). Importing this module needs
cuda-bindings.
"""
from cuda.bindings import nvml as _nvml

__all__ = [
    "AlreadyInitializedError",
    "ArgumentVersionMismatchError",
    "CorruptedInforomError",
    "DeprecatedError",
    "DriverNotLoadedError",
    "FreqNotSupportedError",
    "FunctionNotFoundError",
    "GpuIsLostError",
    "GpuNotFoundError",
    "InUseError",
    "InsufficientPowerError",
    "InsufficientResourcesError",
    "InsufficientSizeError",
    "InvalidArgumentError",
    "InvalidStateError",
    "IrqIssueError",
    "LibRmVersionMismatchError",
    "LibraryNotFoundError",
    "MemoryError",
    "NoDataError",
    "NoPermissionError",
    "NotFoundError",
    "NotReadyError",
    "NotSupportedError",
    "NvmlError",
    "OperatingSystemError",
    "ResetRequiredError",
    "ResetTypeNotSupportedError",
    "TimeoutError",
    "UninitializedError",
    "UnknownError",
    "VgpuEccNotSupportedError",
]

AlreadyInitializedError = _nvml.AlreadyInitializedError
ArgumentVersionMismatchError = _nvml.ArgumentVersionMismatchError
CorruptedInforomError = _nvml.CorruptedInforomError
DeprecatedError = _nvml.DeprecatedError
DriverNotLoadedError = _nvml.DriverNotLoadedError
FreqNotSupportedError = _nvml.FreqNotSupportedError
FunctionNotFoundError = _nvml.FunctionNotFoundError
GpuIsLostError = _nvml.GpuIsLostError
GpuNotFoundError = _nvml.GpuNotFoundError
InUseError = _nvml.InUseError
InsufficientPowerError = _nvml.InsufficientPowerError
InsufficientResourcesError = _nvml.InsufficientResourcesError
InsufficientSizeError = _nvml.InsufficientSizeError
InvalidArgumentError = _nvml.InvalidArgumentError
InvalidStateError = _nvml.InvalidStateError
IrqIssueError = _nvml.IrqIssueError
LibRmVersionMismatchError = _nvml.LibRmVersionMismatchError
LibraryNotFoundError = _nvml.LibraryNotFoundError
MemoryError = _nvml.MemoryError
NoDataError = _nvml.NoDataError
NoPermissionError = _nvml.NoPermissionError
NotFoundError = _nvml.NotFoundError
NotReadyError = _nvml.NotReadyError
NotSupportedError = _nvml.NotSupportedError
NvmlError = _nvml.NvmlError
OperatingSystemError = _nvml.OperatingSystemError
ResetRequiredError = _nvml.ResetRequiredError
ResetTypeNotSupportedError = _nvml.ResetTypeNotSupportedError
TimeoutError = _nvml.TimeoutError
UninitializedError = _nvml.UninitializedError
UnknownError = _nvml.UnknownError
VgpuEccNotSupportedError = _nvml.VgpuEccNotSupportedError

"""LegacyPinnedMemoryResource: pinned host memory from cuMemAllocHost / cuMemFreeHost
(upstream module path ``cuda.core._memory._legacy``).

As upstream, it calls the driver through cuda-bindings (``cuda.core._utils.cuda_utils.driver``):
without cuda-bindings installed, allocating raises ImportError saying so.
"""
from cuda.core._memory._buffer import Buffer, MemoryResource
from cuda.core._stream import Stream_accept
from cuda.core._utils.cuda_utils import driver, handle_return

__all__ = ["LegacyPinnedMemoryResource"]


def _size(size):
    if isinstance(size, bool) or not isinstance(size, int):
        raise TypeError(f"size must be an int, not {type(size).__name__}")
    if size < 0:
        raise ValueError(f"size must be non-negative, got {size}")
    return size


class LegacyPinnedMemoryResource(MemoryResource):
    """Pinned (page-locked) host memory from the legacy cuMemAllocHost API:
    synchronous, host- and device-accessible, not bound to a device."""

    def allocate(self, size, *, stream=None):
        """Allocate `size` bytes (synchronously: `stream`, if given, is only validated)."""
        if stream is not None:
            Stream_accept(stream, True)
        size = _size(size)
        ptr = int(handle_return(driver.cuMemAllocHost(size))) if size else 0
        return Buffer._init(ptr, size, self)

    def deallocate(self, ptr, size, *, stream=None):
        """Free `ptr`; with `stream`, that stream is synchronized first."""
        if stream is not None:
            Stream_accept(stream, True).sync()
        if size:
            handle_return(driver.cuMemFreeHost(ptr))

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return True

    @property
    def device_id(self):
        """This memory resource is not bound to any GPU."""
        raise RuntimeError("a pinned memory resource is not bound to any GPU")


class _SynchronousMemoryResource(MemoryResource):
    """Device memory from the legacy cuMemAlloc / cuMemFree API (synchronous)."""

    __slots__ = ("_device_id",)

    def __init__(self, device_id):
        from cuda.core._device import Device

        self._device_id = Device(device_id).device_id

    def allocate(self, size, *, stream=None):
        if stream is not None:
            Stream_accept(stream, True)
        size = _size(size)
        ptr = int(handle_return(driver.cuMemAlloc(size))) if size else 0
        return Buffer._init(ptr, size, self)

    def deallocate(self, ptr, size, *, stream=None):
        if stream is not None:
            Stream_accept(stream, True).sync()
        if size:
            handle_return(driver.cuMemFree(ptr))

    @property
    def is_device_accessible(self):
        return True

    @property
    def is_host_accessible(self):
        return False

    @property
    def device_id(self):
        return self._device_id

"""CopyOptions and its enums: the transfer hints of batched and single copies
(upstream module path ``cuda.core._memory._copy_enums``).

Pure Python, as upstream's. The driver values are cuda.h's
(``CUmemcpySrcAccessOrder``, ``CUmemcpyFlags``), so no cuda-bindings is needed.
"""
from __future__ import annotations

import dataclasses
import enum
import sys

from cuda.core._device import Device
from cuda.core._host import Host

__all__ = ["CopyOptions", "MemcpyOverlapMode", "MemcpySrcAccessOrder"]

if sys.version_info >= (3, 11):
    _StrEnum = enum.StrEnum
else:
    class _StrEnum(str, enum.Enum):
        """enum.StrEnum before Python 3.11: members are str and print as their value."""

        def __str__(self):
            return str(self.value)


class MemcpySrcAccessOrder(_StrEnum):
    """Source access order hint for batched memcpy operations.

    Maps to ``CUmemcpySrcAccessOrder``.

    ``STREAM``
        Source reads follow stream order. Earlier stream work may still be
        accessing the source when the copy is enqueued.
    ``DURING_API_CALL``
        The driver may read the source out of stream order, but all reads
        are complete before :func:`copy_batch` returns. No earlier stream
        work may be accessing the source at the time of the call.
    ``ANY``
        The driver may read the source after the call returns. The caller
        must keep the source unchanged until the copy completes in stream
        order. No earlier stream work may be accessing the source.
    """

    STREAM = "stream"
    DURING_API_CALL = "during_api_call"
    ANY = "any"


class MemcpyOverlapMode(_StrEnum):
    """Overlap mode hint for batched memcpy operations.

    Maps to ``CUmemcpyFlags``.

    ``DEFAULT``
        No overlap preference; the driver uses its default scheduling.
    ``PREFER_OVERLAP_WITH_COMPUTE``
        Hint that the copy should preferably overlap with concurrent
        compute work. This is advisory and may be ignored depending on
        the platform and copy parameters.
    """

    DEFAULT = "default"
    PREFER_OVERLAP_WITH_COMPUTE = "prefer_overlap_with_compute"


@dataclasses.dataclass(frozen=True)
class CopyOptions:
    """Attribute bundle for a single copy within a batched memcpy.

    Parameters
    ----------
    src_access_order : :class:`MemcpySrcAccessOrder` or str
        Hint describing how the source will be accessed.
        Default is ``"stream"`` (stream-ordered access).
    src_location_hint : :class:`cuda.core.Device` | :class:`cuda.core.Host` | None
        Hint for the source memory location. Honored only for managed
        memory on devices with concurrent managed access and for
        system-allocated pageable memory on devices with pageable memory
        access; ignored for all other memory types. Does not prefetch
        memory and does not set persistent memory advice.
        ``None`` means no hint.
    dst_location_hint : :class:`cuda.core.Device` | :class:`cuda.core.Host` | None
        Hint for the destination memory location. Same semantics and
        restrictions as ``src_location_hint``. ``None`` means no hint.
    overlap_mode : :class:`MemcpyOverlapMode` or str
        Hint requesting that the copy overlap with concurrent compute work.
        This is advisory; it has an effect only on devices that support it.
        Default is ``"default"``.

    Raises
    ------
    ValueError
        For an unknown ``src_access_order`` or ``overlap_mode``. (A location
        hint of the wrong type is a TypeError when the copy is made.)
    """

    src_access_order: MemcpySrcAccessOrder | str = "stream"
    src_location_hint: Device | Host | None = None
    dst_location_hint: Device | Host | None = None
    overlap_mode: MemcpyOverlapMode | str = "default"

    def __post_init__(self):
        # Frozen: the fields are normalized (str -> enum) once, here, so that a
        # typo fails at construction and the fields always hold the enums.
        try:
            order = MemcpySrcAccessOrder(self.src_access_order)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"invalid src_access_order: {self.src_access_order!r}") from exc
        object.__setattr__(self, "src_access_order", order)
        try:
            mode = MemcpyOverlapMode(self.overlap_mode)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"invalid overlap_mode: {self.overlap_mode!r}") from exc
        object.__setattr__(self, "overlap_mode", mode)

    def _to_driver_enum(self):
        """Return the driver CUmemcpySrcAccessOrder value."""
        return _SRC_ACCESS_ORDER_TO_DRIVER[self.src_access_order]

    def _to_driver_flags(self):
        """Return the driver CUmemcpyFlags value."""
        return _OVERLAP_MODE_TO_DRIVER[self.overlap_mode]


# cuda.h: CUmemcpySrcAccessOrder and CUmemcpyFlags.
_SRC_ACCESS_ORDER_TO_DRIVER = {
    MemcpySrcAccessOrder.STREAM: 1,
    MemcpySrcAccessOrder.DURING_API_CALL: 2,
    MemcpySrcAccessOrder.ANY: 3,
}
_OVERLAP_MODE_TO_DRIVER = {
    MemcpyOverlapMode.DEFAULT: 0,
    MemcpyOverlapMode.PREFER_OVERLAP_WITH_COMPUTE: 1,
}


def _reject_unsupported_during_api_call(src_access_order, requirement, *, index=None):
    """RuntimeError if `src_access_order` is DURING_API_CALL, for a copy about to
    fall back to a plain ``cuMemcpyAsync`` because the attributed path
    (`requirement` names what it needs) is unavailable.

    STREAM and ANY promise nothing sooner than stream order, which the plain
    copy gives; DURING_API_CALL promises every source read is done when the
    call returns, which a stream-ordered copy cannot, and silently dropping
    that would let the caller reuse the source too early. `index` names the
    copy within a batch.
    """
    if src_access_order != MemcpySrcAccessOrder.DURING_API_CALL:
        return
    where = f" at index {index}" if index is not None else ""
    raise RuntimeError(
        f"src_access_order=DURING_API_CALL{where} requires {requirement}. A plain cuMemcpyAsync "
        "fallback reads the source in stream order only, which would break the guarantee that every "
        "source read completes before the call returns (the source could be reused before it is read). "
        "Use src_access_order=STREAM or ANY, or omit options.")


def _attr_run_starts(attrs):
    """The start index of each maximal run of equal options: the driver's
    ``attrsIdxs`` (``attrs[k]`` applies to copies ``[starts[k], starts[k+1])``),
    so a broadcast option reaches the driver once."""
    starts = []
    for i, attr in enumerate(attrs):
        if i == 0 or attr != attrs[i - 1]:
            starts.append(i)
    return starts

"""Where a managed-memory operation targets: a Device or a Host, checked and
reduced to a (kind, id) record (upstream module path
``cuda.core._memory._managed_location``). Internal.
"""
from __future__ import annotations

from dataclasses import dataclass

from cuda.core._utils.version import driver_version

# The kinds _coerce_location produces, and the CUmemLocationType each becomes.
LOCATION_KINDS = ("device", "host", "host_numa", "host_numa_current")


@dataclass(frozen=True)
class _LocSpec:
    """A checked location: ``kind`` (one of ``LOCATION_KINDS``) and ``id`` (the
    device ordinal or NUMA node; 0 where the kind has none). What
    ``_managed_memory_ops`` turns into a ``CUmemLocation``."""

    kind: str
    id: int = 0


def _reject_numa_host_on_cuda12(spec):
    """TypeError for a NUMA host location on a driver older than CUDA 13, which
    has no CU_MEM_LOCATION_TYPE_HOST_NUMA(_CURRENT) for advice and prefetches."""
    if spec.kind not in ("host_numa", "host_numa_current"):
        return
    if driver_version() >= (13, 0, 0):
        return
    raise TypeError("Host(numa_id=...) / Host.numa_current() require both cuda-bindings 13.0+ "
                    "and a CUDA 13+ runtime driver; use Host() instead")


def _coerce_location(value, *, allow_none=False):
    """`value` (a Device, a Host, a _LocSpec, or None if `allow_none`) as a _LocSpec
    (None stays None). ValueError for a missing location, TypeError for any
    other type."""
    from cuda.core._device import Device   # here: Device imports the memory package
    from cuda.core._host import Host

    if isinstance(value, _LocSpec):
        _reject_numa_host_on_cuda12(value)
        return value
    if isinstance(value, Device):
        return _LocSpec("device", value.device_id)
    if isinstance(value, Host):
        if value.is_numa_current:
            spec = _LocSpec("host_numa_current")
        elif value.numa_id is not None:
            spec = _LocSpec("host_numa", value.numa_id)
        else:
            return _LocSpec("host")
        _reject_numa_host_on_cuda12(spec)
        return spec
    if value is None:
        if allow_none:
            return None
        raise ValueError("location is required")
    raise TypeError(f"location must be a Device, Host, or None; got {type(value).__name__}")

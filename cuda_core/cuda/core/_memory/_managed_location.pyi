"""Type stubs for cuda.core._memory._managed_location."""
from __future__ import annotations

from dataclasses import dataclass

from cuda.core._device import Device
from cuda.core._host import Host

LOCATION_KINDS: tuple[str, ...]


@dataclass(frozen=True)
class _LocSpec:
    kind: str
    id: int
    def __init__(self, kind: str, id: int = 0) -> None: ...


def _reject_numa_host_on_cuda12(spec: _LocSpec) -> None: ...
def _coerce_location(value: Device | Host | _LocSpec | None, *, allow_none: bool = False) -> _LocSpec | None: ...

"""Memory resources and buffers (upstream package path ``cuda.core._memory``)."""
from cuda.core._memory._buffer import *  # noqa: F403
from cuda.core._memory._buffer import __all__ as _buffer_all
from cuda.core._memory._device_memory_resource import *  # noqa: F403
from cuda.core._memory._device_memory_resource import __all__ as _device_memory_resource_all
from cuda.core._memory._graph_memory_resource import *  # noqa: F403
from cuda.core._memory._graph_memory_resource import __all__ as _graph_memory_resource_all
from cuda.core._memory._ipc import *  # noqa: F403
from cuda.core._memory._ipc import __all__ as _ipc_all
from cuda.core._memory._legacy import *  # noqa: F403
from cuda.core._memory._legacy import __all__ as _legacy_all
from cuda.core._memory._managed_buffer import *  # noqa: F403
from cuda.core._memory._managed_buffer import __all__ as _managed_buffer_all
from cuda.core._memory._managed_memory_resource import *  # noqa: F403
from cuda.core._memory._managed_memory_resource import __all__ as _managed_memory_resource_all
from cuda.core._memory._pinned_memory_resource import *  # noqa: F403
from cuda.core._memory._pinned_memory_resource import __all__ as _pinned_memory_resource_all
from cuda.core._memory._virtual_memory_resource import *  # noqa: F403
from cuda.core._memory._virtual_memory_resource import __all__ as _virtual_memory_resource_all

# The IPC handle and descriptor types stay importable from here but, as upstream's,
# are not part of this package's star-import (cuda.core exports them).
__all__ = [
    *_buffer_all,
    *_device_memory_resource_all,
    *_graph_memory_resource_all,
    *_legacy_all,
    *_managed_buffer_all,
    *_managed_memory_resource_all,
    *_pinned_memory_resource_all,
    *(name for name in _virtual_memory_resource_all if name != "VirtualMemoryIPCDescriptor"),
]

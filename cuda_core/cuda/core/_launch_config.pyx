# cython: language_level=3
# distutils: language = c++
"""LaunchConfig: grid, block, cluster and shared memory of a launch (cuda.core._launch_config)."""
import operator

from cuda.core._utils.cuda_utils import CUDAError, cast_to_3_tuple, driver

__all__ = ["LaunchConfig"]

# cuda.core._device.Device, bound on first use (cuda.core._device imports this module while
# it initialises); LaunchConfig asks the current Device for cluster and cooperative support.
Device = None


def _current_device():
    """``Device()`` of the calling thread, through this module's ``Device`` global."""
    global Device
    if Device is None:
        from cuda.core._device import Device as device_class

        Device = device_class
    return Device()

_LAUNCH_CONFIG_ATTRS = ("grid", "cluster", "block", "shmem_size", "is_cooperative",
                        "programmatic_stream_serialization")


def _as_int(value):
    """`value` as a Python int when it is an integer of another type (a NumPy integer), else unchanged."""
    if isinstance(value, int):
        return value
    try:
        return operator.index(value)
    except TypeError:
        return value


def _dims(what, value):
    """`value` (an int or a tuple of up to 3 ints, each >= 1 and < 2**32) as a 3-tuple padded with 1s.

    The checks and messages are :func:`~cuda.core._utils.cuda_utils.cast_to_3_tuple`'s;
    NumPy integers are accepted as ints, and a value that does not fit the driver's
    32-bit dimensions is refused here rather than at launch."""
    normalised = tuple(_as_int(v) for v in value) if isinstance(value, tuple) else _as_int(value)
    dims = cast_to_3_tuple(what, normalised)
    if any(v >= (1 << 32) for v in dims):
        raise ValueError(f"{what} values must be < 2**32 (got {value!r})")
    return dims


cdef class LaunchConfig:
    """How to launch a kernel (upstream cuda.core 1.2.2's fields).

    Parameters
    ----------
    grid : int | tuple[int, ...]
        Blocks in the grid (clusters, when ``cluster`` is given); 1-3 dimensions, each >= 1.
    cluster : int | tuple[int, ...], optional
        Blocks per thread block cluster (compute capability 9.0 and later).
    block : int | tuple[int, ...]
        Threads per block; 1-3 dimensions, each >= 1.
    shmem_size : int, optional
        Dynamic shared memory per block in bytes (default 0).
    is_cooperative : bool, optional
        Launch as a cooperative kernel.
    programmatic_stream_serialization : bool, optional
        Allow programmatic dependent launch (overlap with the previous kernel of the stream).

    Raises
    ------
    ValueError
        A dimension that is missing, not an int, < 1, or has more than 3 entries;
        a negative ``shmem_size``.
    CUDAError
        ``cluster`` on a current device of compute capability < 9.0, or
        ``is_cooperative`` on one without cooperative launch.
    """

    def __init__(self, grid=None, cluster=None, block=None, shmem_size=None, is_cooperative=False,
                 programmatic_stream_serialization=False):
        if cluster is not None:
            cc = _current_device().compute_capability
            if cc < (9, 0):
                raise CUDAError(
                    f"thread block clusters are not supported on devices with compute capability < 9.0 (got {cc})")
        self.grid = grid
        self.block = block
        self.cluster = cluster
        self.shmem_size = shmem_size
        self.is_cooperative = is_cooperative
        if self.is_cooperative and not _current_device().properties.cooperative_launch:
            raise CUDAError("cooperative kernels are not supported on this device")
        self.programmatic_stream_serialization = programmatic_stream_serialization

    @property
    def grid(self):
        """tuple[int, int, int]: Blocks in the grid (clusters, when ``cluster`` is set), padded with 1s."""
        return self._grid

    @grid.setter
    def grid(self, value):
        self._grid = _dims("LaunchConfig.grid", value)

    @property
    def block(self):
        """tuple[int, int, int]: Threads per block, padded with 1s."""
        return self._block

    @block.setter
    def block(self, value):
        self._block = _dims("LaunchConfig.block", value)

    @property
    def cluster(self):
        """tuple[int, int, int] | None: Blocks per thread block cluster, or None for no clusters."""
        return self._cluster

    @cluster.setter
    def cluster(self, value):
        self._cluster = None if value is None else _dims("LaunchConfig.cluster", value)

    @property
    def shmem_size(self):
        """int: Dynamic shared memory per block in bytes."""
        return self._shmem_size

    @shmem_size.setter
    def shmem_size(self, value):
        if value is None:
            value = 0
        try:
            shmem = operator.index(value)
        except TypeError:
            raise TypeError(f"LaunchConfig.shmem_size must be an int, not {type(value).__name__}") from None
        if not 0 <= shmem < (1 << 32):
            raise ValueError(f"LaunchConfig.shmem_size must be >= 0 and < 2**32 (got {shmem})")
        self._shmem_size = shmem

    @property
    def is_cooperative(self):
        """bool: Launch as a cooperative kernel."""
        return bool(self._is_cooperative)

    @is_cooperative.setter
    def is_cooperative(self, value):
        self._is_cooperative = bool(value)

    @property
    def programmatic_stream_serialization(self):
        """bool: Allow programmatic dependent launch (overlap with the stream's previous kernel)."""
        return bool(self._programmatic_stream_serialization)

    @programmatic_stream_serialization.setter
    def programmatic_stream_serialization(self, value):
        self._programmatic_stream_serialization = bool(value)

    cdef int _fill_dims(self, LaunchDims* dims) except -1:
        """Fills ``dims`` for the driver: the grid in blocks (clusters times blocks per cluster)."""
        cdef int i
        cluster = self._cluster
        for i in range(3):
            dims.block[i] = self._block[i]
            if cluster is None:
                dims.grid[i] = self._grid[i]
                dims.cluster[i] = 1
            else:
                if self._grid[i] * cluster[i] >= (1 << 32):
                    raise ValueError(f"LaunchConfig grid x cluster does not fit in 32 bits in dimension {i}")
                dims.grid[i] = self._grid[i] * cluster[i]
                dims.cluster[i] = cluster[i]
        dims.has_cluster = cluster is not None
        dims.shared_mem_bytes = self._shmem_size
        dims.cooperative = self._is_cooperative
        dims.programmatic_serialization = self._programmatic_stream_serialization
        return 0

    def _identity(self):
        return tuple(getattr(self, a) for a in _LAUNCH_CONFIG_ATTRS)

    def __repr__(self):
        parts = ", ".join(f"{a}={getattr(self, a)!r}" for a in _LAUNCH_CONFIG_ATTRS)
        return f"LaunchConfig({parts})"

    def __eq__(self, other):
        if not isinstance(other, LaunchConfig):
            return NotImplemented
        return self._identity() == (<LaunchConfig>other)._identity()

    def __hash__(self):
        return hash(self._identity())


def _to_native_launch_config(LaunchConfig config not None):
    """``config`` as cuda-bindings' ``driver.CUlaunchConfig`` (for code that calls
    ``cuLaunchKernelEx`` through cuda-bindings; this package's own launches do not use it).

    The grid is converted from clusters to blocks when ``config.cluster`` is set;
    the attributes are the cluster dimension, cooperative launch and programmatic
    stream serialization, in that order, each only when requested. ``hStream`` is
    left unset.

    Raises
    ------
    TypeError
        ``config`` is not a LaunchConfig.
    ImportError
        cuda-bindings is not installed.
    """
    native = driver.CUlaunchConfig()
    attrs = []
    if config.cluster is not None:
        native.gridDimX, native.gridDimY, native.gridDimZ = (g * c for g, c in zip(config.grid, config.cluster))
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        dim = attr.value.clusterDim
        dim.x, dim.y, dim.z = config.cluster
        attrs.append(attr)
    else:
        native.gridDimX, native.gridDimY, native.gridDimZ = config.grid
    native.blockDimX, native.blockDimY, native.blockDimZ = config.block
    native.sharedMemBytes = config.shmem_size
    if config.is_cooperative:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_COOPERATIVE
        attr.value.cooperative = 1
        attrs.append(attr)
    if config.programmatic_stream_serialization:
        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        attrs.append(attr)
    native.numAttrs = len(attrs)
    native.attrs = attrs
    return native

# cython: language_level=3
# distutils: language = c++
"""LaunchConfig: grid, block, cluster and shared memory of a launch (cuda.core._launch_config)."""
import operator

__all__ = ["LaunchConfig"]

_LAUNCH_CONFIG_ATTRS = ("grid", "cluster", "block", "shmem_size", "is_cooperative",
                        "programmatic_stream_serialization")


def _dims(what, value):
    """`value` (an int or a tuple of 1-3 ints, each >= 1 and < 2**32) as a 3-tuple padded with 1s."""
    if isinstance(value, tuple):
        if not 1 <= len(value) <= 3:
            raise ValueError(f"{what} must be an int, or a tuple with up to 3 ints (got tuple with length {len(value)})")
        items = value
    elif isinstance(value, int):
        items = (value,)
    else:
        raise ValueError(f"{what} must be an int, or a tuple with up to 3 ints (got {type(value)})")
    out = []
    for v in items:
        try:
            out.append(operator.index(v))
        except TypeError:
            raise ValueError(f"{what} must be an int, or a tuple with up to 3 ints (got {value!r})") from None
    if any(v < 1 for v in out):
        if isinstance(value, tuple):
            raise ValueError(f"{what} values must be >= 1 (got {value!r})")
        raise ValueError(f"{what} value must be >= 1 (got {value!r})")
    if any(v >= (1 << 32) for v in out):
        raise ValueError(f"{what} values must be < 2**32 (got {value!r})")
    return tuple(out) + (1,) * (3 - len(out))


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
    """

    def __init__(self, grid=None, cluster=None, block=None, shmem_size=None, is_cooperative=False,
                 programmatic_stream_serialization=False):
        self.grid = grid
        self.block = block
        self.cluster = cluster
        self.shmem_size = shmem_size
        self.is_cooperative = is_cooperative
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

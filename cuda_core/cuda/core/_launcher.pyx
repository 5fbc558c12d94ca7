# cython: language_level=3
# distutils: language = c++
"""launch(): a kernel on a stream (cuda.core._launcher)."""
import warnings

from cuda.core._kernel_arg_handler cimport ParamHolder, pack_kernel_args
from cuda.core._launch_config cimport LaunchConfig
from cuda.core._module cimport Kernel
from cuda.core._resource_handles cimport (
    CUresult, LaunchDims, StreamHandle, check, launch_kernel,
)
from cuda.core._stream cimport Stream, as_stream

from cuda.core._launch_config import LaunchConfig as _LaunchConfigType

__all__ = ["launch"]

# Refuses a cooperative launch of `kernel` whose grid exceeds the blocks resident at once on the
# device of `stream` (occupancy per multiprocessor x multiprocessors), as upstream's launch does.
cdef int _check_cooperative_launch(Kernel kernel, LaunchConfig config, Stream stream) except -1:
    bx, by, bz = config.block
    x, y, z = config.grid
    num_sm = stream.device.properties.multiprocessor_count
    max_grid_size = kernel.occupancy.max_active_blocks_per_multiprocessor(bx * by * bz, config.shmem_size) * num_sm
    if x * y * z > max_grid_size:
        raise ValueError(f"The specified grid size ({x} * {y} * {z}) exceeds the limit ({max_grid_size})")
    return 0


_FOREIGN_STREAM_DEPRECATION = ("Passing foreign stream objects to this function via the stream protocol is "
                               "deprecated. Convert the object explicitly using Stream(obj) instead.")


# The Stream that launch's `stream` names (a Stream or a GraphBuilder); a foreign object with
# __cuda_stream__ is still accepted, with upstream's DeprecationWarning (attributed to the
# caller of launch). A foreign object's Stream is a view that keeps the object as its owner.
cdef Stream _launch_stream(object stream):
    cdef Stream s = as_stream(stream)
    if s is not stream and s._owner is stream:
        warnings.warn(_FOREIGN_STREAM_DEPRECATION, DeprecationWarning, stacklevel=1)
    return s



def launch(stream, config, kernel, *kernel_args):
    """Launch ``kernel`` on ``stream`` with ``config`` and ``kernel_args``.

    Parameters
    ----------
    stream : Stream
        The stream that orders the launch. An object with ``__cuda_stream__`` is
        still accepted but deprecated (a :class:`DeprecationWarning`, as upstream):
        wrap it with ``Stream(obj)``.
    config : LaunchConfig
        Grid, block, cluster and shared memory (a dict of LaunchConfig fields is accepted).
    kernel : Kernel
        From :meth:`ObjectCode.get_kernel`.
    *kernel_args
        Buffers, ints (pointers or 64-bit integers), floats, NumPy or ctypes scalars
        (see :mod:`cuda.core._kernel_arg_handler`).

    Raises
    ------
    TypeError
        A wrong type of stream, config, kernel or argument, or (when the driver
        reports the kernel's parameters) the wrong number of arguments.
    RuntimeError
        A closed stream or a closed Buffer argument.
    ValueError
        A cooperative launch whose grid exceeds the blocks the device holds at once.
    CUDAError
        The driver refused the launch.
    """
    cdef Stream s = _launch_stream(stream)
    if isinstance(config, dict):
        config = _LaunchConfigType(**config)
    if not isinstance(config, LaunchConfig):
        raise TypeError(f"config must be a LaunchConfig, not {type(config).__name__}")
    if not isinstance(kernel, Kernel):
        raise TypeError(f"kernel must be a Kernel (from ObjectCode.get_kernel), not {type(kernel).__name__}")
    cdef LaunchConfig conf = <LaunchConfig>config
    cdef Kernel k = <Kernel>kernel
    cdef ParamHolder params = pack_kernel_args(k, kernel_args)
    cdef LaunchDims dims
    conf._fill_dims(&dims)
    if dims.cooperative:
        _check_cooperative_launch(k, conf, s)
    cdef StreamHandle h = s._h
    cdef void** args = <void**>params.ptr
    cdef CUresult r
    with nogil:
        r = launch_kernel(k._h, h, dims, args)
    check(r)

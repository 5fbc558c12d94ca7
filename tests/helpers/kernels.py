"""The test kernel, as real CUDA C++: compiled by NVRTC in every environment,
run by the GPU on a real driver and by the simulator's host stand-in of the
same name (cpp/sim/api_kernels.cpp) in CI, so one test runs on both."""
import numpy as np

FILL_NAME = "cuda_core_sim_fill_u8"

# dst[i] = (uint8)(seed + 7 * i) for i < n: a pattern a memset cannot produce.
FILL_SOURCE = r"""
extern "C" __global__ void cuda_core_sim_fill_u8(unsigned char* dst, size_t n, unsigned int seed)
{
    size_t stride = (size_t)gridDim.x * blockDim.x;
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride)
        dst[i] = (unsigned char)(seed + 7u * (unsigned int)i);
}
"""


def expected_fill(n, seed):
    """The bytes the fill kernel writes into n bytes with `seed`."""
    return ((seed + 7 * np.arange(n, dtype=np.uint64)) & 0xFF).astype(np.uint8).tobytes()


def device_arch():
    """sm_XY of the current device (the simulator reports 9.0)."""
    from cuda.core import Device

    cc = Device().compute_capability
    return f"sm_{cc[0]}{cc[1]}"


def compile_fill(target="cubin", arch=None):
    """The fill kernel compiled by NVRTC into an ObjectCode (`arch` defaults to the device's)."""
    from cuda.core import Program, ProgramOptions

    prog = Program(FILL_SOURCE, "c++", ProgramOptions(name="fill_u8", arch=arch or device_arch()))
    return prog.compile(target)

"""Kernel.occupancy (upstream 1.2.2's KernelOccupancy): the cuOccupancy* queries, on the
simulator (its model of an H100: 2048 threads, 32 blocks, 64 Ki registers and 228 KiB of
shared memory per SM) and on a GPU; the assertions are the limits every answer obeys."""
import ctypes

import pytest

from helpers.kernels import FILL_NAME, compile_fill

pytestmark = pytest.mark.ours_only


@pytest.fixture
def kernel(device):
    return compile_fill("cubin").get_kernel(FILL_NAME)


@pytest.mark.parametrize("block_size", [32, 128, 256])
@pytest.mark.parametrize("smem", [0, 4096])
def test_max_active_blocks_per_multiprocessor(device, kernel, block_size, smem):
    props = device.properties
    n = kernel.occupancy.max_active_blocks_per_multiprocessor(block_size, smem)
    assert type(n) is int and n > 0
    assert n * block_size <= props.max_threads_per_multiprocessor
    assert n * smem <= props.max_shared_memory_per_multiprocessor


@pytest.mark.parametrize("limit", [0, 96, 256])
def test_max_potential_block_size_constant_smem(device, kernel, limit):
    from cuda.core._module import MaxPotentialBlockSizeOccupancyResult

    result = kernel.occupancy.max_potential_block_size(32, limit)
    assert isinstance(result, MaxPotentialBlockSizeOccupancyResult) and isinstance(result, tuple)
    min_grid, max_block = result
    assert (min_grid, max_block) == (result.min_grid_size, result.max_block_size)
    assert type(min_grid) is int and type(max_block) is int and min_grid > 0 and max_block > 0
    assert max_block <= (limit or device.properties.max_threads_per_block)
    with pytest.raises(TypeError, match=r"^dynamic_shared_memory_needed expected to have type int, or "
                                        r"CUoccupancyB2DSize, got <class 'ellipsis'>$"):
        kernel.occupancy.max_potential_block_size(Ellipsis, limit)


def test_max_potential_block_size_with_a_callback(device, kernel):
    driver = pytest.importorskip("cuda.bindings.driver")
    asked = []

    @ctypes.CFUNCTYPE(ctypes.c_size_t, ctypes.c_int)
    def smem_for(block_size):
        asked.append(block_size)
        return 1024 * (block_size // 32)

    fn = driver.CUoccupancyB2DSize(_ptr=ctypes.cast(smem_for, ctypes.c_void_p).value)
    min_grid, max_block = kernel.occupancy.max_potential_block_size(fn, 128)
    assert asked, "the driver never called the block-size -> shared-memory callback"
    assert 0 < max_block <= 128 and min_grid > 0


@pytest.mark.parametrize("blocks, block_size", [(4, 32), (2, 128), (1, 256)])
def test_available_dynamic_shared_memory_per_block(device, kernel, blocks, block_size):
    props = device.properties
    smem = kernel.occupancy.available_dynamic_shared_memory_per_block(blocks, block_size)
    assert type(smem) is int and 0 < smem <= props.max_shared_memory_per_block
    assert blocks * smem <= props.max_shared_memory_per_multiprocessor


@pytest.mark.parametrize("cluster", [None, 2])
def test_cluster_queries_take_the_stream_by_keyword(device, kernel, cluster):
    from cuda.core import LaunchConfig

    if device.compute_capability < (9, 0):
        pytest.skip("thread block clusters need compute capability 9.0")
    config = LaunchConfig(grid=128, block=64, cluster=cluster)
    for query in (kernel.occupancy.max_active_clusters, kernel.occupancy.max_potential_cluster_size):
        with pytest.raises(TypeError, match="keyword-only argument"):
            query(config)
        value = query(config, stream=device.default_stream)
        # without a cluster dimension the H100 (driver 580) counts 0 active clusters
        assert type(value) is int and (value >= 0 if cluster is None else value > 0)
    with pytest.raises(TypeError):
        kernel.occupancy.max_active_clusters("not a LaunchConfig", stream=device.default_stream)



def test_kernel_occupancy_not_instantiable():
    import cuda.core._module as module

    with pytest.raises(RuntimeError, match=r"^KernelOccupancy cannot be instantiated directly\. Please use Kernel APIs\.$"):
        module.KernelOccupancy()

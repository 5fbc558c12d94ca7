"""DeviceProperties has every attribute of cuda-core 1.2.2's, each read through
cuDeviceGetAttribute with the right CUdevice_attribute, of upstream's type, and
cached as upstream caches (every attribute but the five that can change at run
time); an attribute the driver does not know reads as 0.

The table is the spec, read from the 1.2.2 wheel (its stub gives names and
types) and cuda.h (the CUdevice_attribute numbers): each property is checked
against a direct cuDeviceGetAttribute call with that number, on whatever driver
runs the suite (simulated in CI, the H200 by hand)."""
import ctypes
import pickle
import textwrap

import pytest

from helpers import run_python

UPSTREAM_ATTRIBUTES = {
    "max_threads_per_block": (1, int),
    "max_block_dim_x": (2, int),
    "max_block_dim_y": (3, int),
    "max_block_dim_z": (4, int),
    "max_grid_dim_x": (5, int),
    "max_grid_dim_y": (6, int),
    "max_grid_dim_z": (7, int),
    "max_shared_memory_per_block": (8, int),
    "total_constant_memory": (9, int),
    "warp_size": (10, int),
    "max_pitch": (11, int),
    "maximum_texture1d_width": (21, int),
    "maximum_texture1d_linear_width": (69, int),
    "maximum_texture1d_mipmapped_width": (77, int),
    "maximum_texture2d_width": (22, int),
    "maximum_texture2d_height": (23, int),
    "maximum_texture2d_linear_width": (70, int),
    "maximum_texture2d_linear_height": (71, int),
    "maximum_texture2d_linear_pitch": (72, int),
    "maximum_texture2d_mipmapped_width": (73, int),
    "maximum_texture2d_mipmapped_height": (74, int),
    "maximum_texture3d_width": (24, int),
    "maximum_texture3d_height": (25, int),
    "maximum_texture3d_depth": (26, int),
    "maximum_texture3d_width_alternate": (47, int),
    "maximum_texture3d_height_alternate": (48, int),
    "maximum_texture3d_depth_alternate": (49, int),
    "maximum_texturecubemap_width": (52, int),
    "maximum_texture1d_layered_width": (42, int),
    "maximum_texture1d_layered_layers": (43, int),
    "maximum_texture2d_layered_width": (27, int),
    "maximum_texture2d_layered_height": (28, int),
    "maximum_texture2d_layered_layers": (29, int),
    "maximum_texturecubemap_layered_width": (53, int),
    "maximum_texturecubemap_layered_layers": (54, int),
    "maximum_surface1d_width": (55, int),
    "maximum_surface2d_width": (56, int),
    "maximum_surface2d_height": (57, int),
    "maximum_surface3d_width": (58, int),
    "maximum_surface3d_height": (59, int),
    "maximum_surface3d_depth": (60, int),
    "maximum_surface1d_layered_width": (61, int),
    "maximum_surface1d_layered_layers": (62, int),
    "maximum_surface2d_layered_width": (63, int),
    "maximum_surface2d_layered_height": (64, int),
    "maximum_surface2d_layered_layers": (65, int),
    "maximum_surfacecubemap_width": (66, int),
    "maximum_surfacecubemap_layered_width": (67, int),
    "maximum_surfacecubemap_layered_layers": (68, int),
    "max_registers_per_block": (12, int),
    "clock_rate": (13, int),
    "texture_alignment": (14, int),
    "texture_pitch_alignment": (51, int),
    "gpu_overlap": (15, bool),
    "multiprocessor_count": (16, int),
    "kernel_exec_timeout": (17, bool),
    "integrated": (18, bool),
    "can_map_host_memory": (19, bool),
    "compute_mode": (20, int),
    "concurrent_kernels": (31, bool),
    "ecc_enabled": (32, bool),
    "pci_bus_id": (33, int),
    "pci_device_id": (34, int),
    "pci_domain_id": (50, int),
    "tcc_driver": (35, bool),
    "memory_clock_rate": (36, int),
    "global_memory_bus_width": (37, int),
    "l2_cache_size": (38, int),
    "max_threads_per_multiprocessor": (39, int),
    "unified_addressing": (41, bool),
    "compute_capability_major": (75, int),
    "compute_capability_minor": (76, int),
    "global_l1_cache_supported": (79, bool),
    "local_l1_cache_supported": (80, bool),
    "max_shared_memory_per_multiprocessor": (81, int),
    "max_registers_per_multiprocessor": (82, int),
    "managed_memory": (83, bool),
    "multi_gpu_board": (84, bool),
    "multi_gpu_board_group_id": (85, int),
    "host_native_atomic_supported": (86, bool),
    "single_to_double_precision_perf_ratio": (87, int),
    "pageable_memory_access": (88, bool),
    "concurrent_managed_access": (89, bool),
    "compute_preemption_supported": (90, bool),
    "can_use_host_pointer_for_registered_mem": (91, bool),
    "cooperative_launch": (95, bool),
    "max_shared_memory_per_block_optin": (97, int),
    "pageable_memory_access_uses_host_page_tables": (100, bool),
    "direct_managed_mem_access_from_host": (101, bool),
    "virtual_memory_management_supported": (102, bool),
    "handle_type_posix_file_descriptor_supported": (103, bool),
    "handle_type_win32_handle_supported": (104, bool),
    "handle_type_win32_kmt_handle_supported": (105, bool),
    "max_blocks_per_multiprocessor": (106, int),
    "generic_compression_supported": (107, bool),
    "max_persisting_l2_cache_size": (108, int),
    "max_access_policy_window_size": (109, int),
    "gpu_direct_rdma_with_cuda_vmm_supported": (110, bool),
    "reserved_shared_memory_per_block": (111, int),
    "sparse_cuda_array_supported": (112, bool),
    "read_only_host_register_supported": (113, bool),
    "memory_pools_supported": (115, bool),
    "gpu_direct_rdma_supported": (116, bool),
    "gpu_direct_rdma_flush_writes_options": (117, int),
    "gpu_direct_rdma_writes_ordering": (118, int),
    "mempool_supported_handle_types": (119, int),
    "deferred_mapping_cuda_array_supported": (121, bool),
    "numa_config": (130, int),
    "numa_id": (131, int),
    "multicast_supported": (132, bool),
    "surface_alignment": (30, int),
    "async_engine_count": (40, int),
    "can_tex2d_gather": (44, bool),
    "maximum_texture2d_gather_width": (45, int),
    "maximum_texture2d_gather_height": (46, int),
    "stream_priorities_supported": (78, bool),
    "can_flush_remote_writes": (98, bool),
    "host_register_supported": (99, bool),
    "timeline_semaphore_interop_supported": (114, bool),
    "cluster_launch": (120, bool),
    "can_use_64_bit_stream_mem_ops": (122, bool),
    "can_use_stream_wait_value_nor": (123, bool),
    "dma_buf_supported": (124, bool),
    "ipc_event_supported": (125, bool),
    "mem_sync_domain_count": (126, int),
    "tensor_map_access_supported": (127, bool),
    "handle_type_fabric_supported": (128, bool),
    "unified_function_pointers": (129, bool),
    "mps_enabled": (133, bool),
    "host_numa_id": (134, int),
    "d3d12_cig_supported": (135, bool),
    "mem_decompress_algorithm_mask": (136, int),
    "mem_decompress_maximum_length": (137, int),
    "vulkan_cig_supported": (138, bool),
    "gpu_pci_device_id": (139, int),
    "gpu_pci_subsystem_id": (140, int),
    "host_numa_virtual_memory_management_supported": (141, bool),
    "host_numa_memory_pools_supported": (142, bool),
    "host_numa_multinode_ipc_supported": (143, bool),
    "host_memory_pools_supported": (144, bool),
    "host_virtual_memory_management_supported": (145, bool),
    "host_alloc_dma_buf_supported": (146, bool),
    "only_partial_host_native_atomic_supported": (147, bool),
}
READ_EVERY_TIME = {"clock_rate", "memory_clock_rate", "compute_mode", "kernel_exec_timeout",
                   "single_to_double_precision_perf_ratio"}
CUDA_ERROR_INVALID_VALUE = 1


def _driver_library():
    try:
        from cuda.core._resource_handles import _driver_info
    except ImportError:   # upstream cuda.core: the system driver
        return ctypes.CDLL("libcuda.so.1")
    loaded, path, _simulated, _error = _driver_info()
    assert loaded, "the suite's driver is not loaded"
    return ctypes.CDLL(path)


def _raw_attribute(lib, number, ordinal):
    value = ctypes.c_int(0)
    dev = ctypes.c_int(0)
    assert lib.cuDeviceGet(ctypes.byref(dev), ordinal) == 0
    rc = lib.cuDeviceGetAttribute(ctypes.byref(value), number, dev)
    return 0 if rc == CUDA_ERROR_INVALID_VALUE else (value.value if rc == 0 else ("error", rc))


@pytest.mark.no_driver_ok
def test_every_upstream_attribute_is_a_documented_read_only_property():
    from cuda.core._device import DeviceProperties
    mine = {n for n in dir(DeviceProperties) if not n.startswith("_")}
    assert mine == set(UPSTREAM_ATTRIBUTES)
    for name in UPSTREAM_ATTRIBUTES:
        descriptor = DeviceProperties.__dict__[name]     # a property (upstream: a getset descriptor)
        assert hasattr(descriptor, "__get__") and hasattr(descriptor, "__set__"), name
        assert descriptor.__doc__ and len(descriptor.__doc__) > 10, name


@pytest.mark.no_driver_ok
def test_cannot_be_instantiated_directly():
    from cuda.core._device import DeviceProperties
    with pytest.raises(RuntimeError, match="DeviceProperties cannot be instantiated directly"):
        DeviceProperties()


def test_each_property_reads_its_attribute_with_upstreams_type(device):
    lib = _driver_library()
    props = device.properties
    wrong = {}
    for name, (number, kind) in UPSTREAM_ATTRIBUTES.items():
        value = getattr(props, name)
        assert type(value) is kind, (name, type(value))
        expected = _raw_attribute(lib, number, device.device_id)
        if kind is bool:
            expected = bool(expected)
        if value != expected:
            wrong[name] = (value, expected)
    assert not wrong


def test_properties_are_one_object_per_device(device):
    assert device.properties is device.properties
    with pytest.raises(AttributeError):
        device.properties.warp_size = 64
    with pytest.raises(AttributeError):
        del device.properties.warp_size


def test_pickles_as_the_properties_of_the_same_device(device):
    props = device.properties
    restored = pickle.loads(pickle.dumps(props))
    assert type(restored) is type(props)
    assert [getattr(restored, n) for n in UPSTREAM_ATTRIBUTES] == [getattr(props, n) for n in UPSTREAM_ATTRIBUTES]


@pytest.mark.sim_only
def test_simulated_h200_values(device):
    p = device.properties
    assert (p.compute_capability_major, p.compute_capability_minor) == (9, 0)
    assert p.multiprocessor_count == 132 and p.warp_size == 32
    assert p.max_shared_memory_per_block_optin == 232448
    assert p.l2_cache_size == 50 * 1024 * 1024
    assert p.gpu_pci_device_id == 0x233510DE
    assert p.maximum_texture2d_linear_height == 65000
    assert p.numa_id == -1 and p.host_numa_id == 0
    assert p.ipc_event_supported is True and p.cluster_launch is True
    assert p.gpu_direct_rdma_supported is False      # the simulator has no RDMA path
    assert p.memory_pools_supported and p.mempool_supported_handle_types == 0x1


def _sim_calls(name):
    lib = _driver_library()
    lib.cuSimCallCount.restype = ctypes.c_ulonglong
    lib.cuSimCallCount.argtypes = [ctypes.c_char_p]
    return lib.cuSimCallCount(name.encode())


@pytest.mark.sim_only
def test_reads_are_cached_except_the_ones_that_change(device):
    from cuda.core._device import DeviceProperties
    props = DeviceProperties._init(device.device_id)   # a fresh cache
    for name in UPSTREAM_ATTRIBUTES:
        before = _sim_calls("cuDeviceGetAttribute")
        getattr(props, name)
        getattr(props, name)
        calls = _sim_calls("cuDeviceGetAttribute") - before
        assert calls == (2 if name in READ_EVERY_TIME else 1), name


def _child(code, fail):
    return run_python(["-c", textwrap.dedent(code)], env_extra={"CUDA_SIM_FAIL": fail})


@pytest.mark.sim_only
def test_an_attribute_the_driver_does_not_know_reads_as_zero():
    proc = _child("""
        from cuda.core import Device
        p = Device(0).properties
        print(p.max_threads_per_block, p.managed_memory, p.clock_rate, p.host_numa_id)
    """, "cuDeviceGetAttribute=CUDA_ERROR_INVALID_VALUE")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["0", "False", "0", "0"]


@pytest.mark.sim_only
def test_any_other_driver_failure_raises():
    proc = _child("""
        from cuda.core import CUDAError, Device
        p = Device(0).properties
        for name in ("warp_size", "clock_rate", "ecc_enabled"):
            try:
                getattr(p, name)
            except CUDAError as e:
                print(name, "CUDAError", "CUDA_ERROR_NOT_SUPPORTED" in str(e))
    """, "cuDeviceGetAttribute=CUDA_ERROR_NOT_SUPPORTED")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split("\n")[:3] == ["warp_size CUDAError True", "clock_rate CUDAError True",
                                            "ecc_enabled CUDAError True"]

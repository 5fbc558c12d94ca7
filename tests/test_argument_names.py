"""Bad sizes are refused where they are given, by an error that names the
argument: the options dataclasses check `max_size` when constructed (not later,
inside the pool creation), and a value that does not fit in 64 bits is a clear
error naming the argument rather than Cython's raw size_t conversion message."""
import pytest

import cuda.core as cc

# The options with a max_size (ManagedMemoryResourceOptions has none, as upstream).
_OPTIONS = ["DeviceMemoryResourceOptions", "PinnedMemoryResourceOptions"]


def _options_classes():
    return [pytest.param(getattr(cc, name), id=name) for name in _OPTIONS]


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options_cls", _options_classes())
@pytest.mark.parametrize("bad", [-1, -(1 << 70)])
def test_negative_max_size_is_refused_at_construction(options_cls, bad):
    with pytest.raises(ValueError, match=r"max_size must be non-negative, got -"):
        options_cls(max_size=bad)


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options_cls", _options_classes())
@pytest.mark.parametrize("bad", [1 << 64, 1 << 100])
def test_max_size_beyond_64_bits_names_max_size(options_cls, bad):
    # Both a ValueError (this package's convention for bad values) and an
    # OverflowError (what upstream's size_t conversion raised), so that either
    # `except` clause catches it.
    with pytest.raises(ValueError, match=r"max_size does not fit in 64 bits") as info:
        options_cls(max_size=bad)
    assert isinstance(info.value, OverflowError)


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options_cls", _options_classes())
def test_max_size_of_the_wrong_type_names_max_size(options_cls):
    with pytest.raises(TypeError, match=r"max_size must be an int, not float"):
        options_cls(max_size=1.5)


@pytest.mark.no_driver_ok
@pytest.mark.parametrize("options_cls", _options_classes())
def test_valid_max_size_is_kept(options_cls):
    import numpy as np

    assert options_cls().max_size == 0
    assert options_cls(max_size=(1 << 64) - 1).max_size == (1 << 64) - 1
    opts = options_cls(max_size=np.uint32(4096))   # any integer type, stored as int
    assert opts.max_size == 4096 and type(opts.max_size) is int


@pytest.mark.no_driver_ok
def test_bad_numa_id_is_refused_at_construction():
    with pytest.raises(ValueError, match=r"numa_id must be >= 0, got -2"):
        cc.PinnedMemoryResourceOptions(numa_id=-2)
    with pytest.raises(TypeError, match=r"numa_id must be an int or None, not str"):
        cc.PinnedMemoryResourceOptions(numa_id="0")


def test_options_changed_after_construction_are_checked_at_use(device):
    opts = cc.DeviceMemoryResourceOptions()
    opts.max_size = -1                  # a dataclass: assignment is not intercepted
    with pytest.raises(ValueError, match=r"max_size must be non-negative"):
        cc.DeviceMemoryResource(device, opts)
    opts.max_size = 1 << 64
    with pytest.raises(OverflowError, match=r"max_size does not fit in 64 bits"):
        cc.DeviceMemoryResource(device, opts)


def test_options_dict_with_bad_max_size_names_max_size(device):
    with pytest.raises(ValueError, match=r"max_size must be non-negative"):
        cc.DeviceMemoryResource(device, {"max_size": -1})
    with pytest.raises(OverflowError, match=r"max_size does not fit in 64 bits"):
        cc.PinnedMemoryResource({"max_size": 1 << 64})


@pytest.mark.parametrize("bad", [1 << 64, 1 << 200])
def test_huge_sizes_name_the_argument(device, stream, bad):
    mr = device.memory_resource
    for call in (lambda: mr.allocate(bad, stream=stream),
                 lambda: device.allocate(bad, stream=stream),
                 lambda: mr.deallocate(0x1000, bad, stream=stream),
                 lambda: cc.Buffer.from_handle(0x1000, bad)):
        with pytest.raises(ValueError, match=r"^size does not fit in 64 bits") as info:
            call()
        assert isinstance(info.value, OverflowError)


def test_negative_sizes_name_the_argument(device, stream):
    mr = device.memory_resource
    for call in (lambda: mr.allocate(-1, stream=stream),
                 lambda: device.allocate(-1, stream=stream),
                 lambda: mr.deallocate(0x1000, -1, stream=stream),
                 lambda: cc.Buffer.from_handle(0x1000, -1)):
        with pytest.raises(ValueError, match=r"^size must be non-negative, got -1") as info:
            call()
        assert isinstance(info.value, OverflowError)   # upstream: size_t conversion


def test_pool_attribute_values_name_the_attribute(device):
    mr = cc.DeviceMemoryResource(device, cc.DeviceMemoryResourceOptions(max_size=1 << 20))
    try:
        with pytest.raises(ValueError, match=r"^release_threshold must be non-negative"):
            mr.attributes.release_threshold = -1
        with pytest.raises(OverflowError, match=r"^release_threshold does not fit in 64 bits"):
            mr.attributes.release_threshold = 1 << 64
        with pytest.raises(TypeError, match=r"^used_mem_high must be an int, not str"):
            mr.attributes.used_mem_high = "0"
    finally:
        mr.close()


@pytest.mark.no_driver_ok
def test_legacy_pinned_sizes_name_the_argument():
    # checked before the driver (through cuda-bindings) is called
    mr = cc.LegacyPinnedMemoryResource()
    with pytest.raises(OverflowError, match=r"^size does not fit in 64 bits") as info:
        mr.allocate(1 << 64)
    assert isinstance(info.value, ValueError)
    with pytest.raises(ValueError, match=r"^size must be non-negative, got -1") as info:
        mr.allocate(-1)
    assert isinstance(info.value, OverflowError)
    with pytest.raises(TypeError, match=r"^size must be an int, not float"):
        mr.allocate(1.0)

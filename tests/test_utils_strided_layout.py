"""cuda.core._layout._StridedLayout, the layout of a StridedMemoryView: the
documented examples, numpy as the reference for slicing and permuting, upstream
1.2.2's error types and messages, int64 overflow, and (with
CUDA_CORE_UPSTREAM_PYTHON) the same outputs as upstream's on random layouts."""
import itertools
import math

import numpy as np
import pytest

from helpers import run_scenario_script
from helpers.upstream import upstream_env

from cuda.core._layout import _StridedLayout as L

pytestmark = pytest.mark.no_driver_ok


def test_dense_orders_and_equality():
    assert L.dense((5, 3, 7), 1, "C") == L((5, 3, 7), (21, 7, 1), 1)
    assert L.dense((5, 3, 7), 1, "F") == L((5, 3, 7), (1, 5, 15), 1)
    assert L.dense((5, 3, 7), 1, (2, 0, 1)) == L((5, 3, 7), (3, 1, 15), 1)
    assert L.dense((5, 3, 7), 1).stride_order == (0, 1, 2)
    assert L.dense((5, 3, 7), 1, "F").stride_order == (2, 1, 0)
    assert L.dense((5, 3, 7), 1, (2, 0, 1)).stride_order == (2, 0, 1)
    assert L((2, 3), None, 4) != L((2, 3), (3, 1), 4)   # implicit and explicit strides differ
    assert L((2, 3), None, 4) != (2, 3)
    with pytest.raises(TypeError, match="unhashable"):
        hash(L((2,), None, 1))
    assert L.dense((0, 3), 4).strides == (0, 0)


def test_dense_like_keeps_or_recomputes_the_order():
    layout = L.dense((5, 3, 7), 1).permuted((2, 0, 1))
    assert layout == L((7, 5, 3), (1, 21, 7), 1)
    assert L.dense_like(layout) is layout
    assert L.dense_like(layout, "C") == L((7, 5, 3), (15, 3, 1), 1)
    assert L.dense_like(layout, "F") == L((7, 5, 3), (1, 7, 35), 1)
    sliced = layout[1:]
    assert L.dense_like(sliced).slice_offset == 0 and L.dense_like(sliced).is_dense
    assert sliced.to_dense("C") == L.dense(sliced.shape, 1)


def test_contiguity_and_offsets():
    layout = L.dense((5, 3, 7), 1)
    assert layout.is_contiguous_c and not layout.is_contiguous_f and layout.is_contiguous_any
    permuted = layout.permuted((2, 1, 0))
    assert not permuted.is_contiguous_c and permuted.is_contiguous_f
    odd = layout.permuted((2, 0, 1))
    assert not odd.is_contiguous_c and not odd.is_contiguous_f and odd.is_contiguous_any
    gap = layout[:, :, :-1]
    assert not gap.is_contiguous_any and not gap.is_dense and gap.is_unique
    assert L((3,), (0,), 4).is_unique is False
    assert L((4,), (-1,), 2).offset_bounds == (-3, 0)
    with pytest.raises(ValueError, match="negative memory offsets is ambiguous. The layout's min_offset is -3."):
        L((4,), (-1,), 2).required_size_in_bytes()
    assert L((0, 5), None, 8).offset_bounds == (0, -1) and L((0, 5), None, 8).required_size_in_bytes() == 0


@pytest.mark.parametrize("order", ["C", "F"])
@pytest.mark.parametrize("index", [
    (slice(None, None, 2), 1, slice(None, None, -1)),
    (slice(1, -1), slice(2, None, 3)),
    (-1,),
    (slice(5, 4),),
    (0, 0),
])
def test_slicing_matches_numpy(order, index):
    ref = np.arange(4 * 5 * 6, dtype=np.int32).reshape((4, 5, 6), order=order)
    layout = L(ref.shape, ref.strides, ref.itemsize, divide_strides=True)
    sliced = layout[index]
    expected = ref[index]
    assert sliced.shape == expected.shape
    if expected.size:
        assert sliced.strides_in_bytes == expected.strides
        assert sliced.slice_offset_in_bytes == expected.ctypes.data - ref.ctypes.data
    else:
        assert sliced.strides == (0,) * expected.ndim
    assert sliced.is_contiguous_c == expected.flags.c_contiguous


@pytest.mark.parametrize("perm", list(itertools.permutations(range(3))))
def test_permuting_matches_numpy_transpose(perm):
    ref = np.empty((2, 3, 4), dtype=np.float64)
    layout = L.dense(ref.shape, 8).permuted(perm)
    expected = ref.transpose(perm)
    assert layout.shape == expected.shape and layout.strides_in_bytes == expected.strides
    assert layout.is_contiguous_f == expected.flags.f_contiguous


def test_reshape_flatten_squeeze_unsqueeze_broadcast():
    layout = L.dense((5, 3, 4), 1)
    assert layout.reshaped((20, 3)) == L.dense((20, 3), 1)
    assert layout.reshaped((4, -1)) == L.dense((4, 15), 1)
    assert layout.permuted((2, 0, 1)).reshaped((4, 15)) == L((4, 15), (1, 4), 1)
    with pytest.raises(ValueError, match="Layout strides are incompatible with the new shape"):
        layout.permuted((2, 0, 1)).reshaped((20, 3))
    with pytest.raises(ValueError, match="The original volume 60 and the new volume 59 must be equal."):
        layout.reshaped((59,))
    with pytest.raises(ValueError, match="at most one -1"):
        layout.reshaped((-1, -1))
    assert L((3, 2), (2, 1), 1).flattened() == L((6,), (1,), 1)
    assert L((3, 2), (1, 3), 1).flattened() == L((3, 2), (1, 3), 1)
    a, b = L.dense((4, 5, 3), 4), L((4, 5, 3), (1, 12, 4), 4)
    mask = a.flattened_axis_mask() & b.flattened_axis_mask()
    assert a.flattened(mask=mask) == L((4, 15), (15, 1), 4)
    assert b.flattened(mask=mask) == L((4, 15), (1, 4), 4)
    assert L.dense((1, 4, 1), 2).squeezed() == L((4,), (1,), 2)
    assert L.dense((3, 0), 2).squeezed() == L((0,), (0,), 2)
    assert L.dense((4,), 2).unsqueezed((0, 2)) == L((1, 4, 1), (4, 1, 1), 2)
    with pytest.raises(ValueError, match="Axis 1 appears multiple times."):
        L.dense((4,), 2).unsqueezed((1, 1))
    assert L.dense((2, 3), 4).broadcast_to((4, 2, 3)).strides == (0, 3, 1)
    with pytest.raises(ValueError, match="Shapes cannot be broadcast together"):
        L.dense((2, 3), 4).broadcast_to((3, 3))


def test_repacking():
    layout = L.dense((5, 4), 4)
    assert layout.repacked(2) == L.dense((5, 8), 2)
    assert layout.repacked(8) == L.dense((5, 2), 8)
    assert layout.repacked(16) == L.dense((5, 1), 16)
    assert layout.repacked(16, keep_dim=False) == L.dense((5,), 16)
    assert layout.repacked(4) is layout
    assert layout.max_compatible_itemsize() == 16
    assert L.dense((5, 3), 4).max_compatible_itemsize() == 4
    with pytest.raises(ValueError, match=r"The data pointer \(4\) must be aligned to the packed itemsize \(8\)."):
        layout.repacked(8, data_ptr=4)
    with pytest.raises(ValueError, match=r"The axis 1 extent \(4\) must be divisible by 3."):
        L.dense((5, 4), 1).repacked(3)
    with pytest.raises(ValueError, match="The axis 0 stride must be 1, got 4."):
        layout.repacked(8, axis=0)


def test_hostile_arguments_raise_upstreams_errors():
    with pytest.raises(TypeError, match=r"Argument 'shape' has incorrect type \(expected tuple, got list\)"):
        L([2, 3], None, 4)
    with pytest.raises(TypeError, match="Argument 'strides' has incorrect type"):
        L((2, 3), [3, 1], 4)
    with pytest.raises(TypeError, match="Argument 'itemsize' has incorrect type"):
        L((2, 3), None, "4")
    with pytest.raises(ValueError, match="itemsize must be positive"):
        L((2, 3), None, 0)
    with pytest.raises(ValueError, match="Extents must be non-negative"):
        L((-1, 3), None, 4)
    with pytest.raises(ValueError, match="Strides, if provided, must have the same length as shape"):
        L((2, 3), (1,), 4)
    with pytest.raises(ValueError, match="strides must be divisible by itemsize"):
        L((2, 3), (5, 1), 4, divide_strides=True)
    with pytest.raises(ValueError, match="Unsupported number of dimensions: 65. Max supported ndim is 64"):
        L((1,) * 65, None, 1)
    assert L((1,) * 64, None, 1).ndim == 64
    with pytest.raises(ValueError, match="The stride_order must be 'C', 'F', or a permutation tuple. Got: X"):
        L.dense((2,), 1, "X")
    with pytest.raises(ValueError, match="The stride order must be a permutation. Axis 0 appears multiple times."):
        L.dense((2, 3), 1, (0, 0))
    with pytest.raises(TypeError, match="Argument 'other' has incorrect type"):
        L.dense_like((2, 3))
    with pytest.raises(ValueError, match="Invalid permutation: axis 3 out of range for 3D tensor"):
        L.dense((5, 6, 7), 1).permuted((1, 3, 0))
    with pytest.raises(ValueError, match="the same length as the number of dimensions"):
        L.dense((5,), 1).permuted((0, 0))
    with pytest.raises(TypeError, match="Expected slice instance or integer."):
        L.dense((2, 3), 1)[None]
    with pytest.raises(ValueError, match="slice step cannot be zero"):
        L.dense((2, 3), 1)[:, ::0]
    with pytest.raises(ValueError, match="out of range for axis 1 with extent 3"):
        L.dense((2, 3), 1)[0, 5]
    with pytest.raises(ValueError, match="is greater than the number of dimensions"):
        L.dense((2, 3), 1)[0, 0, 0]
    with pytest.raises(AttributeError):
        L.dense((2,), 1).itemsize = 3
    with pytest.raises(TypeError, match="not an acceptable base type"):
        type("Sub", (L,), {})


def test_int64_overflow_raises_overflow_error():
    with pytest.raises(OverflowError):
        L((2 ** 63,), None, 1)
    with pytest.raises(OverflowError):
        L((2 ** 32, 2 ** 32), None, 1).volume
    with pytest.raises(OverflowError):
        L.dense((2 ** 32, 2 ** 32), 1)
    with pytest.raises(OverflowError):
        L((3,), (2 ** 62,), 4).strides_in_bytes
    with pytest.raises(OverflowError):
        L((2, 3), None, 2 ** 31)
    assert L((2 ** 31, 2 ** 31), None, 1).volume == 2 ** 62


def test_volume_of_long_shapes():
    shape = (1, 2, 1, 3) * 16
    layout = L.dense(shape, 2)
    assert layout.volume == math.prod(shape) and layout.required_size_in_bytes() == 2 * math.prod(shape)
    assert layout[(slice(None, None, -1),) * 64].is_contiguous_any is False


@pytest.mark.upstream
@pytest.mark.parametrize("seed", [1, 2])
def test_same_outputs_as_upstream_on_random_layouts(upstream_cuda_core, seed):
    ours, proc = run_scenario_script("layout_fuzz.py", seed, 1500)
    theirs, upstream_proc = run_scenario_script("layout_fuzz.py", seed, 1500, env_extra=upstream_env(),
                                                python=upstream_cuda_core)
    assert ours["count"] == theirs["count"] > 4000
    first = next((i for i, (a, b) in enumerate(zip(ours["results"], theirs["results"])) if a != b), None)
    assert first is None, f"case {first}: ours {ours['results'][first]!r} upstream {theirs['results'][first]!r}"

"""Strided tensor layouts (upstream module path ``cuda.core._layout``).

A :class:`_StridedLayout` is pure metadata: a shape, optional strides (in
elements), an itemsize (in bytes) and a slice offset (in elements). It holds no
driver resource. Arithmetic follows int64 semantics: a result outside the int64
range raises :class:`OverflowError`, as a C implementation would have to.
"""
import math
import operator

__all__ = []

# The most dimensions a layout may have (one bit per axis in an axes mask).
STRIDED_LAYOUT_MAX_NDIM = 64
# Every axis but axis 0 (axis 0 has no left neighbour to merge with).
AXES_MASK_ALL = 0xFFFFFFFFFFFFFFFE
_U64 = (1 << 64) - 1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1
_C_INT_MIN = -(1 << 31)
_C_INT_MAX = (1 << 31) - 1


# An int64 result, or OverflowError("value too large") when it does not fit.
def _checked(value):
    if value < _I64_MIN or value > _I64_MAX:
        raise OverflowError("value too large")
    return value


# One int64 element of a shape/strides/axes tuple (floats truncate, like a C conversion).
def _to_i64(value):
    if isinstance(value, float):
        value = int(value)
    else:
        value = operator.index(value)
    if value < _I64_MIN or value > _I64_MAX:
        raise OverflowError("Python int too large to convert to C long")
    return value


# A C int argument named `name`: TypeError for a non-integer, OverflowError outside the C int range.
def _to_c_int(value, name):
    try:
        value = operator.index(value)
    except TypeError:
        raise TypeError(f"Argument '{name}' has incorrect type (expected int, got {type(value).__name__})") from None
    if value < _C_INT_MIN or value > _C_INT_MAX:
        raise OverflowError("value too large to convert to int")
    return value


# Raises the TypeError a typed `tuple` parameter raises for anything else (None allowed where `optional`).
def _require_tuple(value, name, optional=False):
    if value is None and optional:
        return
    if not isinstance(value, tuple):
        raise TypeError(f"Argument '{name}' has incorrect type (expected tuple, got {type(value).__name__})")


# Refuses more than STRIDED_LAYOUT_MAX_NDIM dimensions.
def _check_ndim(ndim):
    if ndim > STRIDED_LAYOUT_MAX_NDIM:
        raise ValueError(
            f"Unsupported number of dimensions: {ndim}. Max supported ndim is {STRIDED_LAYOUT_MAX_NDIM}")


# Refuses negative extents.
def _check_extents(shape):
    for extent in shape:
        if extent < 0:
            raise ValueError("Extents must be non-negative")


# `axis` made non-negative, or None when it is outside [-extent, extent).
def _normalized_axis(axis, extent):
    if axis < -extent or axis >= extent:
        return None
    return axis + extent if axis < 0 else axis


# The product of `shape`, int64-checked.
def _volume_of(shape):
    volume = 1
    for extent in shape:
        volume = _checked(volume * extent)
    return volume


# C-order dense strides for `shape` (all zero when the volume is zero).
def _dense_strides_c(shape):
    strides = [0] * len(shape)
    stride = 1
    for i in range(len(shape) - 1, -1, -1):
        strides[i] = stride
        stride = _checked(stride * shape[i])
    if stride == 0:
        strides = [0] * len(shape)
    return tuple(strides), stride


# F-order dense strides for `shape` (all zero when the volume is zero).
def _dense_strides_f(shape):
    strides = [0] * len(shape)
    stride = 1
    for i in range(len(shape)):
        strides[i] = stride
        stride = _checked(stride * shape[i])
    if stride == 0:
        strides = [0] * len(shape)
    return tuple(strides), stride


# Dense strides where stride_order[-1] is the axis with stride 1 (a permutation of the axes).
def _dense_strides_in_order(shape, stride_order):
    ndim = len(shape)
    if len(stride_order) != ndim:
        raise ValueError(
            f"stride_order must have the same length as shape. Shape has {ndim} dimensions, "
            f"but stride_order has {len(stride_order)} elements.")
    strides = [0] * ndim
    seen = 0
    stride = 1
    for i in range(ndim - 1, -1, -1):
        raw_axis = _to_i64(stride_order[i])
        axis = _normalized_axis(raw_axis, ndim)
        if axis is None:
            raise ValueError(f"Invalid stride order: axis {raw_axis} out of range for {ndim}D tensor")
        if seen & (1 << axis):
            raise ValueError(f"The stride order must be a permutation. Axis {axis} appears multiple times.")
        seen |= 1 << axis
        strides[axis] = stride
        stride = _checked(stride * shape[axis])
    if stride == 0:
        strides = [0] * ndim
    return tuple(strides), stride


# Axes sorted from the largest to the smallest |stride| (ties: larger extent first, then axis number).
def _order_from_strides(shape, strides):
    if strides is None:
        return tuple(range(len(shape)))
    return tuple(sorted(range(len(shape)), key=lambda i: (-abs(strides[i]), -shape[i], i)))


# The mask of all mergeable axes of an `ndim`-dimensional layout.
def _flatten_all_axes_mask(ndim):
    if ndim == 0:
        return 0
    if ndim == STRIDED_LAYOUT_MAX_NDIM:
        return AXES_MASK_ALL
    return (1 << ndim) - 2


# The axes mask for flattening the inclusive axis range [start_axis, end_axis].
def _axis_mask_from_range(ndim, start_axis, end_axis):
    mask = _flatten_all_axes_mask(ndim)
    if start_axis == 0 and end_axis == -1:
        return mask
    start = _normalized_axis(start_axis, ndim)
    if start is None:
        raise ValueError(f"Invalid start axis: {start_axis} out of range for {ndim}D tensor")
    end = _normalized_axis(end_axis, ndim)
    if end is None:
        raise ValueError(f"Invalid end axis: {end_axis} out of range for {ndim}D tensor")
    if start > 0:
        mask &= (AXES_MASK_ALL << start) & _U64
    if end < ndim:
        mask &= AXES_MASK_ALL >> (STRIDED_LAYOUT_MAX_NDIM - end - 1)
    return mask


# (shape, strides) with the axes allowed by `mask` merged where C-order iteration permits.
def _flatten(shape, strides, mask):
    ndim = len(shape)
    if ndim == 0:
        return (1,), (1,)
    out_shape, out_strides = [], []
    start = 0
    while start < ndim:
        group_volume = shape[start]
        group_stride = strides[start]
        end = start + 1
        while end < ndim and (mask & (1 << end)) and group_stride == _checked(strides[end] * shape[end]):
            group_volume = _checked(group_volume * shape[end])
            group_stride = strides[end]
            end += 1
        out_shape.append(group_volume)
        out_strides.append(group_stride)
        start = end
    return tuple(out_shape), tuple(out_strides)


# Strides for `new_shape` that address the same elements as (shape, strides) in C order, or None.
def _split(new_shape, shape, strides):
    new_strides = [0] * len(new_shape)
    new_i = len(new_shape) - 1
    for i in range(len(shape) - 1, -1, -1):
        extent = shape[i]
        group_stride = strides[i]
        group_volume = 1
        while new_i >= 0:
            new_extent = new_shape[new_i]
            if new_extent == 0:
                return None
            if new_extent == 1 or group_volume < extent:
                new_strides[new_i] = group_stride
                group_stride = _checked(group_stride * new_extent)
                group_volume = _checked(group_volume * new_extent)
                new_i -= 1
            else:
                break
        if group_volume != extent:
            return None
    return tuple(new_strides)


def _no_subclass(cls, **kwargs):
    raise TypeError(f"type '{_StridedLayout.__module__}._StridedLayout' is not an acceptable base type")


class _StridedLayout:
    """The layout of a multi-dimensional tensor: its shape, strides and itemsize.

    Parameters
    ----------
    shape : tuple
        The extents, non-negative integers.
    strides : tuple or None
        The strides in elements (in bytes when ``divide_strides`` is True), one per
        extent. ``None`` means implicitly C-contiguous: :attr:`strides` then stays None.
    itemsize : int
        The size in bytes of one element.
    divide_strides : bool, optional
        Divide the given strides by ``itemsize`` (each must be a multiple of it).

    Attributes
    ----------
    itemsize : int
        The size in bytes of one element.
    slice_offset : int
        The offset, in elements, of the element at index ``(0,) * ndim`` (non-zero
        only after slicing). See :attr:`slice_offset_in_bytes`.
    """

    __slots__ = ("_shape", "_strides", "_itemsize", "_slice_offset", "_volume")
    __init_subclass__ = classmethod(_no_subclass)

    def __init__(self, shape, strides, itemsize, divide_strides=False):
        _require_tuple(shape, "shape")
        _require_tuple(strides, "strides", optional=True)
        itemsize = _to_c_int(itemsize, "itemsize")
        ndim = len(shape)
        _check_ndim(ndim)
        shape = tuple(_to_i64(e) for e in shape)
        _check_extents(shape)
        if strides is not None:
            if len(strides) != ndim:
                raise ValueError(
                    f"Strides, if provided, must have the same length as shape. Shape has {ndim} dimensions, "
                    f"but strides has {len(strides)} elements.")
            strides = tuple(_to_i64(s) for s in strides)
        if itemsize <= 0:
            raise ValueError("itemsize must be positive")
        if strides is not None and divide_strides:
            divided = []
            for s in strides:
                q = int(s / itemsize) if s < 0 else s // itemsize   # C division truncates toward zero
                if q * itemsize != s:
                    raise ValueError("strides must be divisible by itemsize")
                divided.append(q)
            strides = tuple(divided)
        self._set(shape, strides, itemsize, 0)

    # Sets the defining values of a new layout (no validation: callers validated).
    def _set(self, shape, strides, itemsize, slice_offset, volume=None):
        self._shape = shape
        self._strides = strides
        self._itemsize = itemsize
        self._slice_offset = slice_offset
        self._volume = volume
        return self

    # A new layout with the given defining values.
    @classmethod
    def _make(cls, shape, strides, itemsize, slice_offset=0, volume=None):
        return object.__new__(_StridedLayout)._set(shape, strides, itemsize, slice_offset, volume)

    @classmethod
    def dense(cls, shape, itemsize, stride_order="C"):
        """A layout with dense strides for ``shape``.

        Parameters
        ----------
        shape : tuple
            The extents, non-negative integers.
        itemsize : int
            The size in bytes of one element.
        stride_order : str or tuple, optional
            ``'C'`` (default: strides grow from the last axis to the first), ``'F'``
            (they grow from the first axis to the last), or a permutation of
            ``tuple(range(len(shape)))`` whose last axis gets stride 1 (see
            :attr:`stride_order`). For example, ``_StridedLayout.dense((5, 3, 7), 1, (2, 0, 1))``
            has strides ``(3, 1, 15)``.
        """
        _require_tuple(shape, "shape")
        itemsize = _to_c_int(itemsize, "itemsize")
        if stride_order not in ("C", "F") and not isinstance(stride_order, (tuple, list)):
            raise ValueError(f"The stride_order must be 'C', 'F', or a permutation tuple. Got: {stride_order}")
        _check_ndim(len(shape))
        shape = tuple(_to_i64(e) for e in shape)
        _check_extents(shape)
        return cls._dense_of(shape, itemsize, stride_order, "The stride_order must be 'C', 'F', or a permutation tuple")

    # The dense layout of `shape` in `stride_order` ('C', 'F' or a permutation); `what` words the error.
    @classmethod
    def _dense_of(cls, shape, itemsize, stride_order, what):
        if stride_order == "C":
            kind = "C"
        elif stride_order == "F":
            kind = "F"
        elif isinstance(stride_order, (tuple, list)):
            kind = "P"
        else:
            raise ValueError(f"{what}. Got: {stride_order}")
        if itemsize <= 0:
            raise ValueError("itemsize must be positive")
        if kind == "C":
            strides, volume = _dense_strides_c(shape)
        elif kind == "F":
            strides, volume = _dense_strides_f(shape)
        else:
            strides, volume = _dense_strides_in_order(shape, stride_order)
        return cls._make(shape, strides, itemsize, 0, volume)

    @classmethod
    def dense_like(cls, other, stride_order="K"):
        """A dense layout (no slice offset) with the shape and itemsize of ``other``.

        Parameters
        ----------
        other : _StridedLayout
            The layout whose :attr:`shape` and :attr:`itemsize` are kept.
        stride_order : str or tuple, optional
            ``'K'`` (default) keeps the order of ``other``'s strides; ``'C'``, ``'F'``
            and a permutation tuple are as in :meth:`dense`. ``other`` itself is
            returned when it is already dense in that order.
        """
        if not isinstance(other, _StridedLayout):
            raise TypeError(
                "Argument 'other' has incorrect type (expected cuda.core._layout._StridedLayout, "
                f"got {type(other).__name__})")
        is_dense = other.is_dense
        if stride_order == "K":
            if is_dense:
                return other
            order = other.stride_order
        else:
            if stride_order == "C":
                if is_dense and other.is_contiguous_c:
                    return other
            elif stride_order == "F":
                if is_dense and other.is_contiguous_f:
                    return other
            elif not isinstance(stride_order, (tuple, list)):
                raise ValueError(
                    f"The stride_order must be 'K', 'C', 'F', or a permutation tuple. Got: {stride_order}")
            order = stride_order
        return cls._dense_of(other._shape, other._itemsize, order,
                             "The stride_order must be 'K', 'C', 'F', or a permutation tuple")

    def __repr__(self):
        text = f"_StridedLayout(shape={self.shape}, strides={self.strides}, itemsize={self.itemsize}"
        if self._slice_offset != 0:
            text += f", _slice_offset={self._slice_offset}"
        return text + ")"

    def __eq__(self, other):
        if not isinstance(other, _StridedLayout):
            return NotImplemented   # Python then compares by identity: unequal
        return (self._itemsize == other._itemsize and self._slice_offset == other._slice_offset
                and self._shape == other._shape and self._strides == other._strides)

    __hash__ = None

    @property
    def itemsize(self):
        """The size in bytes of one element.

        :type: int
        """
        return self._itemsize

    @property
    def slice_offset(self):
        """The offset, in elements, of the element at index ``(0,) * ndim``.

        :type: int
        """
        return self._slice_offset

    @property
    def ndim(self):
        """The number of dimensions (the length of :attr:`shape`).

        :type: int
        """
        return len(self._shape)

    @property
    def shape(self):
        """The extents of the tensor.

        :type: tuple[int]
        """
        return self._shape

    @property
    def strides(self):
        """The strides in elements (not bytes), or None for a layout created with
        ``strides=None`` (implicitly C-contiguous).

        :type: tuple[int] | None
        """
        return self._strides

    @property
    def strides_in_bytes(self):
        """The strides in bytes (None when :attr:`strides` is None).

        :type: tuple[int] | None
        """
        if self._strides is None:
            return None
        return tuple(_checked(s * self._itemsize) for s in self._strides)

    # The strides, materialized as C-order dense ones when they are implicit.
    def _explicit_strides(self):
        if self._strides is not None:
            return self._strides
        return _dense_strides_c(self._shape)[0]

    @property
    def stride_order(self):
        """A permutation of ``tuple(range(ndim))``: the axes from the largest to the
        smallest absolute stride (ties: larger extent first, then lower axis). A
        C-contiguous layout gives ``(0, 1, ..., ndim - 1)``, an F-contiguous one the reverse.

        :type: tuple[int]
        """
        return _order_from_strides(self._shape, self._strides)

    @property
    def volume(self):
        """The number of elements (the product of :attr:`shape`).

        :type: int
        """
        if self._volume is None:
            self._volume = _volume_of(self._shape)
        return self._volume

    @property
    def is_unique(self):
        """True when no two elements share a memory offset. Contiguous layouts and
        those derived from them by permuting, slicing, flattening, squeezing,
        repacking or reshaping are unique; broadcast layouts (a zero stride on an
        extent above 1) are not. Hand-made overlapping-looking strides may be
        reported as not unique (the exact check is not attempted).

        :type: bool
        """
        if self._strides is None or self.volume == 0:
            return True
        current_max = 0
        for axis in reversed(self.stride_order):
            extent = self._shape[axis]
            if extent != 1:
                stride = abs(self._strides[axis])
                if current_max >= stride:
                    return False
                current_max = _checked(current_max + _checked(stride * (extent - 1)))
        return True

    @property
    def is_contiguous_c(self):
        """True when the layout is C-contiguous: the last non-singleton stride is 1
        and each stride to its left is the product of the extent and stride to its right.

        :type: bool
        """
        if self.volume == 0 or self._strides is None:
            return True
        stride = 1
        for j in range(self.ndim - 1, -1, -1):
            extent = self._shape[j]
            if extent != 1:
                if self._strides[j] != stride:
                    return False
                stride *= extent
        return True

    @property
    def is_contiguous_f(self):
        """True when the layout is F-contiguous: the first non-singleton stride is 1
        and each stride to its right is the product of the stride and extent to its left.

        :type: bool
        """
        if self.volume == 0:
            return True
        if self._strides is None:
            return sum(1 for e in self._shape if e != 1) <= 1
        stride = 1
        for j in range(self.ndim):
            extent = self._shape[j]
            if extent != 1:
                if self._strides[j] != stride:
                    return False
                stride *= extent
        return True

    @property
    def is_contiguous_any(self):
        """True when some permutation of the axes makes the layout C-contiguous:
        the strides are non-negative and the elements map one-to-one onto
        ``[min_offset, max_offset]``. Slicing off part of the last axis, for
        example, leaves gaps and makes it False.

        :type: bool
        """
        if self.volume == 0 or self._strides is None:
            return True
        stride = 1
        for axis in reversed(self.stride_order):
            extent = self._shape[axis]
            if extent != 1:
                if self._strides[axis] != stride:
                    return False
                stride *= extent
        return True

    @property
    def is_dense(self):
        """True when the layout is contiguous (:attr:`is_contiguous_any`) and has no
        slice offset: its elements map one-to-one onto ``[0, volume - 1]``.

        :type: bool
        """
        return self._slice_offset == 0 and self.is_contiguous_any

    @property
    def offset_bounds(self):
        """``(min_offset, max_offset)``: the range of element offsets (in elements,
        not bytes, slice offset included) that the elements map to; ``(0, -1)`` when
        the layout has no elements.

        :type: tuple[int, int]
        """
        low = high = self._slice_offset
        if self._strides is None:
            high = _checked(high + self.volume - 1)
            return low, high
        for extent, stride in zip(self._shape, self._strides):
            if extent == 0:
                return 0, -1
            if stride <= 0:
                low = _checked(low + _checked(stride * (extent - 1)))
            else:
                high = _checked(high + _checked(stride * (extent - 1)))
        return low, high

    @property
    def min_offset(self):
        """The lowest element offset (see :attr:`offset_bounds`).

        :type: int
        """
        return self.offset_bounds[0]

    @property
    def max_offset(self):
        """The highest element offset (see :attr:`offset_bounds`).

        :type: int
        """
        return self.offset_bounds[1]

    @property
    def slice_offset_in_bytes(self):
        """:attr:`slice_offset` times :attr:`itemsize`: the byte offset of the element
        at index ``(0,) * ndim``, non-zero only after :meth:`sliced`.

        :type: int
        """
        return _checked(self._slice_offset * self._itemsize)

    def required_size_in_bytes(self):
        """The allocation size in bytes that holds every element of this layout:
        ``(max_offset + 1) * itemsize``, 0 for a layout without elements, and
        ``volume * itemsize`` for a dense one. Raises ValueError when some element
        maps to a negative offset (``min_offset < 0``): the size is then ambiguous.
        """
        low, high = self.offset_bounds
        if low < 0:
            raise ValueError(
                "Allocation size for a layout that maps elements to negative memory offsets is ambiguous. "
                f"The layout's min_offset is {low}.")
        if high < low:
            return 0
        return _checked(_checked(high + 1) * self._itemsize)

    def flattened_axis_mask(self):
        """The mask of axes that :meth:`flattened` can merge with their left
        neighbour (bit ``i`` for axis ``i``); masks of layouts with the same ndim
        combine with ``&``.
        """
        if self._strides is None:
            return _flatten_all_axes_mask(self.ndim)
        shape, strides = self._shape, self._strides
        mask = 0
        start = 0
        while start < len(shape):
            group_stride = strides[start]
            end = start + 1
            while end < len(shape) and group_stride == strides[end] * shape[end]:
                group_stride = strides[end]
                mask |= 1 << end
                end += 1
            start = end
        return mask

    def to_dense(self, stride_order="K"):
        """The dense layout with this shape and itemsize in ``stride_order``
        (see :meth:`dense_like`)."""
        return _StridedLayout.dense_like(self, stride_order)

    def reshaped(self, shape):
        """This layout with a new shape of the same volume, when the strides can be
        split or merged to fit it (indices iterated in C order); one extent may be -1
        and is then inferred. Raises ValueError when the shape does not fit, e.g.
        ``dense((5, 3, 4), 1).permuted((2, 0, 1)).reshaped((20, 3))``.
        """
        _require_tuple(shape, "shape")
        _check_ndim(len(shape))
        new_shape = [_to_i64(e) for e in shape]
        old_volume = self.volume
        inferred = -1
        for i, extent in enumerate(new_shape):
            if extent < -1:
                raise ValueError("Extents must be non-negative")
            if extent == -1:
                if inferred != -1:
                    raise ValueError("There can be at most one -1 extent in a shape")
                inferred = i
        new_volume = abs(_volume_of(new_shape))
        if inferred == -1:
            if new_volume != old_volume:
                raise ValueError(f"The original volume {old_volume} and the new volume {new_volume} must be equal.")
        else:
            if new_volume == 0:
                raise ValueError("The -1 extent is ambiguous when the specified sub-volume is 0")
            extent = old_volume // new_volume
            if extent * new_volume != old_volume:
                raise ValueError(
                    f"The original volume {old_volume} must be divisible by the specified sub-volume {new_volume}.")
            new_shape[inferred] = extent
        new_shape = tuple(new_shape)
        new_strides = (0,) * len(new_shape)
        if old_volume != 0:
            flat_shape, flat_strides = _flatten(self._shape, self._explicit_strides(),
                                                _flatten_all_axes_mask(self.ndim))
            new_strides = _split(new_shape, flat_shape, flat_strides)
            if new_strides is None:
                raise ValueError("Layout strides are incompatible with the new shape")
        return self._make(new_shape, new_strides, self._itemsize, self._slice_offset, old_volume)

    def permuted(self, axis_order):
        """This layout with its shape and strides reordered by the permutation
        ``axis_order`` (axis ``axis_order[i]`` becomes axis ``i``)."""
        _require_tuple(axis_order, "axis_order")
        order = [_to_i64(a) for a in axis_order]
        ndim = self.ndim
        if len(order) != ndim:
            raise ValueError(
                f"Permutation must have the same length as the number of dimensions, "
                f"got {len(order)} for {ndim}D tensor.")
        strides = self._explicit_strides()
        seen = 0
        new_shape, new_strides = [], []
        for raw_axis in order:
            axis = _normalized_axis(raw_axis, ndim)
            if axis is None:
                raise ValueError(f"Invalid permutation: axis {raw_axis} out of range for {ndim}D tensor")
            if seen & (1 << axis):
                raise ValueError(f"Invalid permutation: axis {raw_axis} appears multiple times.")
            seen |= 1 << axis
            new_shape.append(self._shape[axis])
            new_strides.append(strides[axis])
        return self._make(tuple(new_shape), tuple(new_strides), self._itemsize, self._slice_offset, self._volume)

    def flattened(self, start_axis=0, end_axis=-1, mask=None):
        """This layout with runs of axes merged into one extent (their product)
        wherever a single stride addresses them in C order: ``(3, 2)`` with strides
        ``(2, 1)`` becomes ``(6,)`` with ``(1,)``, while strides ``(1, 3)`` stay as they are.

        Only axes in the inclusive range ``[start_axis, end_axis]`` are merged, or,
        when ``mask`` is given, only the axes whose bits are set (see
        :meth:`flattened_axis_mask`; ``&`` of two layouts' masks flattens both alike).
        """
        if mask is None:
            axis_mask = _axis_mask_from_range(self.ndim, _to_c_int(start_axis, "start_axis"),
                                              _to_c_int(end_axis, "end_axis"))
        else:
            axis_mask = operator.index(mask)
            if axis_mask < 0 or axis_mask > _U64:
                raise OverflowError("can't convert negative value to unsigned int" if axis_mask < 0
                                    else "value too large to convert to unsigned long")
        new_shape, new_strides = _flatten(self._shape, self._explicit_strides(), axis_mask)
        return self._make(new_shape, new_strides, self._itemsize, self._slice_offset, self._volume)

    def squeezed(self):
        """This layout without its extents of 1; a layout without elements becomes
        shape ``(0,)`` with strides ``(0,)``."""
        strides = self._explicit_strides()
        new_shape, new_strides = [], []
        for extent, stride in zip(self._shape, strides):
            if extent == 0:
                return self._make((0,), (0,), self._itemsize, self._slice_offset, self._volume)
            if extent != 1:
                new_shape.append(extent)
                new_strides.append(stride)
        return self._make(tuple(new_shape), tuple(new_strides), self._itemsize, self._slice_offset, self._volume)

    def unsqueezed(self, axis):
        """This layout with extents of 1 inserted at ``axis``: an int in
        ``[0, ndim]``, or a tuple of distinct ints in ``[0, ndim + len(axis) - 1]``
        (positions in the result)."""
        if isinstance(axis, int):
            axes = [axis]
        else:
            axes = [_to_i64(a) for a in axis]
        if not axes:
            return self
        ndim = self.ndim
        out_ndim = ndim + len(axes)
        _check_ndim(out_ndim)
        new_axes = 0
        for raw_axis in axes:
            a = _normalized_axis(raw_axis, out_ndim)
            if a is None:
                raise ValueError(f"Invalid axis: {raw_axis} out of range for {out_ndim}D tensor")
            if new_axes & (1 << a):
                raise ValueError(f"Axis {a} appears multiple times.")
            new_axes |= 1 << a
        strides = self._explicit_strides()
        new_shape, new_strides = [], []
        in_i = 0
        for i in range(out_ndim):
            if new_axes & (1 << i):
                new_shape.append(1)
                if in_i < ndim:
                    new_strides.append(_checked(self._shape[in_i] * strides[in_i]))
                elif ndim > 0:
                    new_strides.append(strides[ndim - 1])
                else:
                    new_strides.append(1)
            else:
                new_shape.append(self._shape[in_i])
                new_strides.append(strides[in_i])
                in_i += 1
        return self._make(tuple(new_shape), tuple(new_strides), self._itemsize, self._slice_offset, self._volume)

    def broadcast_to(self, shape):
        """This layout broadcast to ``shape``: ``shape`` has at least as many axes and,
        aligned from the right, each old extent is 1 or equal to the new one. Added
        and stretched axes get stride 0; ValueError when the shapes do not broadcast."""
        _require_tuple(shape, "shape")
        _check_ndim(len(shape))
        new_shape = tuple(_to_i64(e) for e in shape)
        _check_extents(new_shape)
        ndim = self.ndim
        if len(new_shape) < ndim:
            raise ValueError(
                f"The broadcast shape ndim ({len(new_shape)}) must be greater than or equal to the input shape "
                f"ndim ({ndim}).")
        diff = len(new_shape) - ndim
        strides = self._explicit_strides()
        new_strides = [0] * len(new_shape)
        for i in range(ndim):
            if self._shape[i] == new_shape[diff + i]:
                new_strides[diff + i] = strides[i]
            elif self._shape[i] != 1:
                raise ValueError(
                    "Shapes cannot be broadcast together: the original extent must be 1 or be equal to broadcast "
                    f"extent, got {self._shape[i]} and {new_shape[diff + i]} for axis {i}.")
        return self._make(new_shape, tuple(new_strides), self._itemsize, self._slice_offset)

    def repacked(self, itemsize, data_ptr=0, axis=-1, keep_dim=True):
        """This layout re-expressed with another itemsize, ``volume * itemsize`` kept.

        A smaller itemsize unpacks each element along ``axis`` (its extent grows by
        ``self.itemsize // itemsize``); a larger one packs consecutive elements (the
        extent shrinks by ``itemsize // self.itemsize``). The stride at ``axis`` must
        be 1 and its extent positive. Packing also needs the extent, every other
        stride and the slice offset divisible by the factor, and ``data_ptr`` (when
        given) aligned to the new itemsize. With ``keep_dim=False`` an axis packed
        down to extent 1 is dropped. :meth:`max_compatible_itemsize` gives the largest
        itemsize that packing accepts. E.g. ``dense((5, 4), 4).repacked(8)`` is
        ``dense((5, 2), 8)``.
        """
        itemsize = _to_c_int(itemsize, "itemsize")
        data_ptr = operator.index(data_ptr)
        axis = _to_c_int(axis, "axis")
        if itemsize == self._itemsize:
            return self
        if itemsize > self._itemsize:
            return self._packed(itemsize, data_ptr, bool(keep_dim), axis)
        return self._unpacked(itemsize, axis)

    # This layout with `vec = itemsize // self.itemsize` consecutive elements along `axis` packed into one.
    def _packed(self, itemsize, data_ptr, keep_dim, axis):
        ndim = self.ndim
        old = self._itemsize
        if itemsize <= 0:
            raise ValueError(f"new itemsize must be greater than zero, got {itemsize}.")
        if old <= 0:
            raise ValueError(f"itemsize must be greater than zero, got {old}.")
        a = _normalized_axis(axis, ndim)
        if a is None:
            raise ValueError(f"Invalid axis: {axis} out of range for {ndim}D tensor")
        if data_ptr % itemsize != 0:
            raise ValueError(f"The data pointer ({data_ptr}) must be aligned to the packed itemsize ({itemsize}).")
        shape, strides = self._shape, self._explicit_strides()
        if strides[a] != 1:
            raise ValueError(f"The axis {a} stride must be 1, got {strides[a]}.")
        vec = itemsize // old
        if shape[a] == 0:
            raise ValueError(f"The axis {a} extent must be non-zero, got {shape[a]}.")
        packed_extent = shape[a] // vec
        if packed_extent * vec != shape[a]:
            raise ValueError(f"The axis {a} extent ({shape[a]}) must be divisible by {vec}.")
        offset = self._slice_offset
        new_offset = int(offset / vec) if offset < 0 else offset // vec
        if new_offset * vec != offset:
            raise ValueError(f"The slice offset ({offset}) must be divisible by {vec}.")
        new_shape, new_strides = [], []
        for i in range(ndim):
            if i == a:
                if keep_dim or packed_extent != 1:
                    new_shape.append(packed_extent)
                    new_strides.append(1)
            else:
                s = strides[i]
                packed = int(s / vec) if s < 0 else s // vec
                if packed * vec != s:
                    raise ValueError(f"The {i} axis stride ({s}) must be divisible by {vec}.")
                new_shape.append(shape[i])
                new_strides.append(packed)
        return self._make(tuple(new_shape), tuple(new_strides), itemsize, new_offset)

    # This layout with each element split into `vec = self.itemsize // itemsize` elements along `axis`.
    def _unpacked(self, itemsize, axis):
        ndim = self.ndim
        old = self._itemsize
        a = _normalized_axis(axis, ndim)
        if a is None:
            raise ValueError(f"Invalid axis: {axis} out of range for {ndim}D tensor")
        if itemsize <= 0:
            raise ValueError(f"new itemsize must be greater than zero, got {itemsize}.")
        if old <= 0:
            raise ValueError(f"itemsize must be greater than zero, got {old}.")
        shape, strides = self._shape, self._explicit_strides()
        if shape[a] == 0:
            raise ValueError(f"The axis {a} extent must be non-zero, got {shape[a]}.")
        if strides[a] != 1:
            raise ValueError(f"The axis {a} stride must be 1, got {strides[a]}.")
        vec = old // itemsize
        new_shape = list(shape)
        new_strides = [_checked(s * vec) for s in strides]
        new_shape[a] = _checked(shape[a] * vec)
        new_strides[a] = 1
        return self._make(tuple(new_shape), tuple(new_strides), itemsize, _checked(self._slice_offset * vec))

    def max_compatible_itemsize(self, max_itemsize=16, data_ptr=0, axis=-1):
        """The largest itemsize, at most ``max_itemsize``, that :meth:`repacked` accepts
        for this layout along ``axis`` (with ``data_ptr`` alignment when given)."""
        max_itemsize = _to_c_int(max_itemsize, "max_itemsize")
        data_ptr = operator.index(data_ptr)
        axis = _to_c_int(axis, "axis")
        ndim = self.ndim
        itemsize = self._itemsize
        if max_itemsize <= 0:
            raise ValueError(f"max_itemsize must be greater than zero, got {max_itemsize}.")
        a = _normalized_axis(axis, ndim)
        if a is None:
            raise ValueError(f"Invalid axis: {axis} out of range for {ndim}D tensor")
        if max_itemsize < itemsize:
            raise ValueError(f"max_itemsize ({max_itemsize}) cannot be less than itemsize ({itemsize}).")
        result = math.gcd(max_itemsize, abs(data_ptr))
        shape, strides = self._shape, self._explicit_strides()
        if strides[a] != 1 or shape[a] == 0:
            return itemsize
        result = math.gcd(result, _checked(self._slice_offset * itemsize))
        result = math.gcd(result, _checked(shape[a] * itemsize))
        for i in range(ndim):
            if i != a:
                result = math.gcd(result, _checked(abs(strides[i]) * itemsize))
        return result

    def sliced(self, slices):
        """This layout indexed by ``slices``: an int (drops that axis), a
        :py:class:`slice`, or a tuple of them, one per leading axis. Only the
        metadata changes (no data is touched); ``layout[...]`` is the same call."""
        if not isinstance(slices, tuple):
            slices = (slices,)
        ndim = self.ndim
        if len(slices) > ndim:
            raise ValueError(
                f"The number of slices ({len(slices)}) is greater than the number of dimensions ({ndim}).")
        shape, strides = self._shape, self._explicit_strides()
        offset = 0
        empty = False
        new_shape, new_strides = [], []
        for i, item in enumerate(slices):
            if isinstance(item, int):
                index = _normalized_axis(item, shape[i])
                if index is None:
                    raise ValueError(f"Invalid index: {item} out of range for axis {i} with extent {shape[i]}")
                offset = _checked(offset + _checked(index * strides[i]))
            elif isinstance(item, slice):
                start, stop, step = item.indices(shape[i])
                extent = len(range(start, stop, step))
                if extent > 0:
                    offset = _checked(offset + _checked(start * strides[i]))
                else:
                    empty = True
                new_shape.append(extent)
                new_strides.append(_checked(strides[i] * step))
            else:
                raise TypeError(f"Invalid slice: {item}. Expected slice instance or integer.")
        new_shape.extend(shape[len(slices):])
        new_strides.extend(strides[len(slices):])
        if empty:
            new_strides = [0] * len(new_strides)
        return self._make(tuple(new_shape), tuple(new_strides), self._itemsize,
                          _checked(self._slice_offset + offset))

    def __getitem__(self, slices):
        """``layout[slices]``: the same as :meth:`sliced`."""
        return self.sliced(slices)

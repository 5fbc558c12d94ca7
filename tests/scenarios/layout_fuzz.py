"""Random _StridedLayout constructions and transformations, and what each gives
(every property, or the exception's type and message), as one JSON line. Run by
ours and by NVIDIA's cuda-core 1.2.2 (tests/test_utils_strided_layout.py): the
two outputs must be equal.

    python layout_fuzz.py SEED CASES
"""
import json
import random
import sys

from cuda.core._layout import _StridedLayout

PROPERTIES = ["shape", "strides", "itemsize", "slice_offset", "ndim", "volume", "strides_in_bytes", "stride_order",
              "is_unique", "is_contiguous_c", "is_contiguous_f", "is_contiguous_any", "is_dense", "offset_bounds",
              "slice_offset_in_bytes"]
METHODS = ["required_size_in_bytes", "flattened_axis_mask", "max_compatible_itemsize"]


# What calling `fn` gives: repr of the result, or "Type: message" of the exception.
def outcome(fn):
    try:
        return repr(fn())
    except Exception as e:
        return f"{type(e).__name__}: {e}"


# Every property and derived value of `layout`.
def describe(layout):
    out = {name: outcome(lambda: getattr(layout, name)) for name in PROPERTIES}
    out.update({name: outcome(getattr(layout, name)) for name in METHODS})
    out["repr"] = repr(layout)
    return out


# A random shape of `ndim` axes (random ndim when None); one in ten extents may be negative.
def random_shape(rng, ndim=None):
    ndim = rng.randint(0, 4) if ndim is None else ndim
    return tuple(rng.choice([0, 1, 1, 2, 3, 4, 5, 6]) if rng.random() < 0.9 else rng.randint(-2, 7)
                 for _ in range(ndim))


# A random index, slice, or (rarely) something that is neither.
def random_index(rng):
    c = rng.random()
    if c < 0.3:
        return rng.randint(-4, 4)
    if c < 0.95:
        return slice(rng.choice([None, -3, -1, 0, 1, 2, 5]), rng.choice([None, -2, -1, 0, 1, 3, 6]),
                     rng.choice([None, 1, 2, -1, -2, 3]))
    return rng.choice([0.5, None, "x", slice(None, None, 0)])


# A random layout: implicit C, dense in some order, or explicit (sometimes mismatched) strides.
def random_layout(rng):
    shape = random_shape(rng)
    itemsize = rng.choice([1, 2, 4, 8, 16])
    c = rng.random()
    if c < 0.3:
        return _StridedLayout(shape, None, itemsize)
    if c < 0.5:
        order = rng.choice(["C", "F", tuple(rng.sample(range(len(shape)), len(shape))), "X"])
        return _StridedLayout.dense(shape, itemsize, order)
    strides = tuple(rng.choice([-3, -1, 0, 1, 2, 3, 4, 6, 12]) for _ in shape)
    if rng.random() < 0.1:
        strides = strides[:-1]
    return _StridedLayout(shape, strides, itemsize)


# One random transformation of `layout`: a new layout, an int, or an exception.
def transform(rng, layout):
    ndim = layout.ndim
    c = rng.randrange(11)
    if c == 0:
        if rng.random() < 0.8:
            return layout.permuted(tuple(rng.sample(range(ndim), ndim)))
        return layout.permuted(tuple(rng.randint(-3, 3) for _ in range(ndim)))
    if c == 1:
        count = rng.randint(0, ndim + (1 if rng.random() < 0.1 else 0))
        return layout.sliced(tuple(random_index(rng) for _ in range(count)))
    if c == 2:
        if rng.random() < 0.5:
            return layout.reshaped(random_shape(rng, rng.randint(0, 4)))
        return layout.reshaped(tuple(rng.choice([-1, 1, 2, 3, 4, 6, 12, 0]) for _ in range(rng.randint(0, 3))))
    if c == 3:
        r = rng.random()
        if r < 0.4:
            return layout.flattened()
        if r < 0.7:
            return layout.flattened(rng.randint(-3, 3), rng.randint(-3, 3))
        return layout.flattened(mask=rng.randint(0, 31))
    if c == 4:
        return layout.squeezed()
    if c == 5:
        if rng.random() < 0.5:
            return layout.unsqueezed(rng.randint(-3, 4))
        return layout.unsqueezed(tuple(rng.randint(-3, 5) for _ in range(rng.randint(0, 3))))
    if c == 6:
        return layout.broadcast_to(tuple(rng.choice([1, 2, 3, 4, 5, 0]) for _ in range(rng.randint(0, 5))))
    if c == 7:
        return layout.repacked(rng.choice([1, 2, 4, 8, 16, 3, 0, -1]), data_ptr=rng.choice([0, 0, 4, 8, 16, 3]),
                               axis=rng.randint(-2, 2), keep_dim=rng.random() < 0.5)
    if c == 8:
        return _StridedLayout.dense_like(layout, rng.choice(["K", "C", "F", "X", tuple(rng.sample(range(ndim), ndim))]))
    if c == 9:
        return layout.max_compatible_itemsize(rng.choice([16, 8, 4, 2, 1, 0, 32]), rng.choice([0, 4, 8, 6]),
                                              rng.randint(-2, 2))
    return layout[random_index(rng)]


def main():
    rng = random.Random(int(sys.argv[1]))
    results = []
    for _ in range(int(sys.argv[2])):
        try:
            layout = random_layout(rng)
            results.append(describe(layout))
            for _ in range(rng.randint(1, 4)):
                new = transform(rng, layout)
                if isinstance(new, _StridedLayout):
                    results.append(describe(new))
                    results.append(repr(new == layout))
                    layout = new
                else:
                    results.append(repr(new))
        except Exception as e:
            results.append(f"{type(e).__name__}: {e}")
    print(json.dumps({"count": len(results), "results": results}))


if __name__ == "__main__":
    main()

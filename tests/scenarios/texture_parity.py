"""The texture family's answers to one list of calls, as one JSON line
{label: "ok" | "ExceptionType: message"}: run on this package and on NVIDIA's
cuda-core 1.2.2 (tests/test_texture.py compares them). Public API only, so
the same file runs on either package; on the simulated driver and on a GPU."""
import array
import json

from cuda.core import Device
from cuda.core.texture import (MipmappedArrayOptions, OpaqueArrayOptions, ResourceDescriptor,
                               TextureObjectOptions)


def outcome(fn):
    try:
        fn()
        return "ok"
    except Exception as exc:  # noqa: BLE001  (the answer is the point)
        return f"{type(exc).__name__}: {exc}"


def main():
    dev = Device()
    dev.set_current()
    s = dev.create_stream()
    arr = dev.create_opaque_array(OpaqueArrayOptions(shape=(16,), format="uint32", num_channels=1))
    surf_arr = dev.create_opaque_array(OpaqueArrayOptions(shape=(4, 4), format="uint8", num_channels=4,
                                                          is_surface_load_store=True))
    mip = dev.create_mipmapped_array(MipmappedArrayOptions(shape=(16, 16), format="float32", num_channels=1,
                                                           num_levels=3))
    buf = dev.memory_resource.allocate(4096, stream=s)
    small = dev.memory_resource.allocate(32, stream=s)
    res = ResourceDescriptor.from_opaque_array(arr)
    floats = dev.create_opaque_array(OpaqueArrayOptions(shape=(4, 4), format="float32", num_channels=1))
    float_res = ResourceDescriptor.from_opaque_array(floats)
    lin = ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1)

    def tex(**options):
        return dev.create_texture_object(resource=res, options=TextureObjectOptions(**options)).close()

    calls = {
        "options: bad format": lambda: OpaqueArrayOptions(shape=(8,), format=0, num_channels=1),
        "options: unknown format name": lambda: OpaqueArrayOptions(shape=(8,), format="float", num_channels=1),
        "options: 3 channels": lambda: OpaqueArrayOptions(shape=(8,), format="uint8", num_channels=3),
        "options: scalar shape": lambda: OpaqueArrayOptions(shape=8, format="uint8", num_channels=1),
        "options: rank 4": lambda: OpaqueArrayOptions(shape=(2, 2, 2, 2), format="uint8", num_channels=1),
        "options: zero extent": lambda: OpaqueArrayOptions(shape=(8, 0), format="uint8", num_channels=1),
        "options: zero levels": lambda: MipmappedArrayOptions(shape=(8,), format="uint8", num_channels=1,
                                                              num_levels=0),
        "options: filter mode": lambda: TextureObjectOptions(filter_mode=0),
        "options: read mode": lambda: TextureObjectOptions(read_mode="x"),
        "create: options type": lambda: dev.create_opaque_array(5),
        "create: mipmap options type": lambda: dev.create_mipmapped_array(5),
        "create: too many levels": lambda: dev.create_mipmapped_array(MipmappedArrayOptions(
            shape=(16,), format="float32", num_channels=1, num_levels=6)),
        "create: above the 1D limit": lambda: dev.create_opaque_array(OpaqueArrayOptions(
            shape=(1 << 20,), format="uint8", num_channels=1)),
        "copy: small Buffer": lambda: arr.copy_from(small, stream=s),
        "copy: small host buffer": lambda: arr.copy_to(bytearray(8), stream=s),
        "copy: bad stream": lambda: arr.copy_from(bytearray(64), stream="x"),
        "copy: None stream": lambda: arr.copy_from(bytearray(64), stream=None),
        "copy: read-only destination": lambda: arr.copy_to(b"\0" * 64, stream=s),
        "copy: round trip": lambda: (arr.copy_from(array.array("I", range(16)), stream=s),
                                     arr.copy_to(bytearray(64), stream=s), s.sync()),
        "level: past the last": lambda: mip.get_level(3),
        "level: negative": lambda: mip.get_level(-1),
        "descriptor: direct": lambda: ResourceDescriptor(),
        "descriptor: not an array": lambda: ResourceDescriptor.from_opaque_array(object()),
        "descriptor: not a mipmap": lambda: ResourceDescriptor.from_mipmapped_array(object()),
        "descriptor: not a Buffer": lambda: ResourceDescriptor.from_linear(object(), format="uint8",
                                                                           num_channels=1),
        "descriptor: oversize": lambda: ResourceDescriptor.from_linear(buf, format="uint8", num_channels=1,
                                                                       size_bytes=8192),
        "descriptor: zero size": lambda: ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1,
                                                                        size_bytes=0),
        "descriptor: odd size": lambda: ResourceDescriptor.from_linear(buf, format="uint32", num_channels=1,
                                                                       size_bytes=10),
        "descriptor: short pitch": lambda: ResourceDescriptor.from_pitch2d(
            buf, format="uint32", num_channels=1, width=16, height=8, pitch_bytes=32),
        "descriptor: pitch past the end": lambda: ResourceDescriptor.from_pitch2d(
            buf, format="uint8", num_channels=4, width=64, height=128, pitch_bytes=512),
        "descriptor: zero width": lambda: ResourceDescriptor.from_pitch2d(
            buf, format="uint8", num_channels=1, width=0, height=8, pitch_bytes=64),
        "texture: not a descriptor": lambda: dev.create_texture_object(resource=5),
        "texture: options type": lambda: dev.create_texture_object(resource=res, options="nope"),
        "texture: negative anisotropy": lambda: tex(max_anisotropy=-1),
        "texture: short border": lambda: tex(border_color=(0.0, 0.0)),
        "texture: empty address modes": lambda: tex(address_mode=()),
        "texture: bad address mode": lambda: tex(address_mode=("wrap", "bad")),
        "texture: every option": lambda: dev.create_texture_object(resource=float_res, options=TextureObjectOptions(
            address_mode=("wrap", "clamp"), filter_mode="linear", normalized_coords=True,
            border_color=(1, 0, 0, 1), max_anisotropy=2, mipmap_level_bias=0.5)).close(),
        "texture: linear": lambda: dev.create_texture_object(resource=lin).close(),
        "surface: not ldst": lambda: dev.create_surface_object(resource=res),
        "surface: linear": lambda: dev.create_surface_object(resource=lin),
        "surface: ok": lambda: dev.create_surface_object(
            resource=ResourceDescriptor.from_opaque_array(surf_arr)).close(),
    }
    answers = {label: outcome(fn) for label, fn in calls.items()}
    arr.close()
    floats.close()
    mip.close()
    buf.close()
    answers["closed: copy"] = outcome(lambda: arr.copy_from(bytearray(64), stream=s))
    answers["closed: descriptor"] = outcome(lambda: ResourceDescriptor.from_opaque_array(arr))
    answers["closed: texture"] = outcome(lambda: dev.create_texture_object(resource=res))
    answers["closed: level"] = outcome(lambda: mip.get_level(0))
    answers["closed: handle is 0"] = outcome(lambda: None if arr.handle == 0 and mip.handle == 0 else 1 / 0)
    answers["closed: linear texture"] = outcome(lambda: dev.create_texture_object(resource=lin))
    print(json.dumps(answers))


if __name__ == "__main__":
    main()

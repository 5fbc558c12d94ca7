"""GraphicsResource (upstream 1.2.2's cuda.core.GraphicsResource): flags and
refusals without a driver; on the simulated driver, registration without a GL
context fails as the real driver's does, and with the simulator's GL buffer
stand-in (cuSimGLCreateBuffer) registration, mapping, the mapped Buffer,
unmapping and unregistering behave as documented; hostile inputs throughout.
Real GL needs a GL context on the machine: the GPU test expects the clear
CUDAError a headless process gets."""
import ctypes
import gc

import pytest


def sim_gl_buffer(nbytes):
    """A GL buffer name from the simulator's stand-in (its first call creates the GL context)."""
    from helpers import sim_library

    lib = sim_library()
    lib.cuSimGLCreateBuffer.argtypes = [ctypes.c_size_t, ctypes.POINTER(ctypes.c_uint)]
    name = ctypes.c_uint(0)
    assert lib.cuSimGLCreateBuffer(nbytes, ctypes.byref(name)) == 0
    return name.value


@pytest.mark.no_driver_ok
def test_register_flags_parse_as_upstreams():
    from cuda.core._graphics import _parse_register_flags

    assert _parse_register_flags(None) == 0 and _parse_register_flags("none") == 0
    assert _parse_register_flags("read_only") == 1 and _parse_register_flags(["write_discard"]) == 2
    assert _parse_register_flags(("surface_load_store", "read_only")) == 5 and _parse_register_flags(()) == 0
    for bad in ("bogus", "READ_ONLY", ("read_only", 5)):
        with pytest.raises(ValueError, match="Unknown register flag"):
            _parse_register_flags(bad)
    with pytest.raises(TypeError):
        _parse_register_flags(5)


@pytest.mark.no_driver_ok
def test_graphics_resource_is_not_instantiable():
    from cuda.core import GraphicsResource

    with pytest.raises(RuntimeError, match="cannot be instantiated directly"):
        GraphicsResource()
    assert GraphicsResource.__module__ == "cuda.core._graphics"


def test_bad_arguments_are_refused_before_the_driver(device):
    from cuda.core import GraphicsResource

    for bad in ("1", 1.0, None, True):
        with pytest.raises(TypeError, match="gl_buffer must be an int"):
            GraphicsResource.from_gl_buffer(bad)
    for bad in (-1, 1 << 32):
        with pytest.raises(ValueError, match=r"gl_buffer must be in \[0, 2\*\*32\)"):
            GraphicsResource.from_gl_buffer(bad)
    with pytest.raises(ValueError, match="Unknown register flag"):
        GraphicsResource.from_gl_buffer(1, flags="fast")
    with pytest.raises(TypeError):
        GraphicsResource.from_gl_buffer(1, stream="s")
    with pytest.raises(TypeError, match="target must be an int"):
        GraphicsResource.from_gl_image(1, None)


@pytest.mark.sim_only
def test_registration_without_a_gl_context_is_a_clear_cudaerror(device):
    """Run in a fresh process: the simulator has no GL context until a GL buffer is made."""
    from helpers import run_python

    code = ("from cuda.core import Device, GraphicsResource, CUDAError\n"
            "Device().set_current()\n"
            "for make in (lambda: GraphicsResource.from_gl_buffer(1), lambda: GraphicsResource.from_gl_image(1, 3553)):\n"
            "    try:\n"
            "        make()\n"
            "    except CUDAError as exc:\n"
            "        print('ERR', exc)\n")
    out = run_python(["-c", code])
    assert out.returncode == 0, out.stderr
    lines = [l for l in out.stdout.splitlines() if l.startswith("ERR")]
    assert len(lines) == 2 and all("CUDA_ERROR_INVALID_GRAPHICS_CONTEXT" in l for l in lines), out.stdout


@pytest.mark.sim_only
def test_map_gives_a_buffer_whose_close_unmaps(device, stream):
    from cuda.core import Buffer, GraphicsResource

    name = sim_gl_buffer(4096)
    res = GraphicsResource.from_gl_buffer(name, flags="write_discard")
    assert not res.is_mapped and not res.is_closed and res.handle != 0 and res.resource_handle == res.handle
    buf = res.map(stream=stream)
    assert isinstance(buf, Buffer) and buf.size == 4096 and res.is_mapped and res._get_mapped_buffer() is buf
    assert buf.is_device_accessible and not buf.is_host_accessible
    buf.fill(7, stream=stream)
    stream.sync()
    assert ctypes.string_at(buf.handle, 8) == b"\x07" * 8
    with pytest.raises(RuntimeError, match="already mapped"):
        res.map(stream=stream)
    buf.close()
    assert not res.is_mapped and res._get_mapped_buffer() is None
    with pytest.raises(RuntimeError, match="not mapped"):
        res.unmap()
    again = res.map(stream=stream)
    res.unmap(stream=stream)
    assert again.is_closed and not res.is_mapped
    res.close()
    res.close()      # idempotent
    assert res.is_closed and res.handle == 0 and "closed" in repr(res)
    for op in (lambda: res.map(stream=stream), lambda: res.unmap()):
        with pytest.raises(RuntimeError, match="closed"):
            op()


@pytest.mark.sim_only
def test_context_managers_scope_registration_and_mapping(device, stream):
    from cuda.core import GraphicsResource

    name = sim_gl_buffer(1024)
    with GraphicsResource.from_gl_buffer(name) as res:
        with res.map(stream=stream) as buf:
            assert buf.size == 1024 and res.is_mapped
        assert not res.is_mapped
    assert res.is_closed
    mapped = GraphicsResource.from_gl_buffer(name, stream=stream)
    with mapped as buf:
        assert buf.size == 1024 and mapped.is_mapped
    assert mapped.is_closed and buf.is_closed


@pytest.mark.sim_only
def test_close_while_mapped_unmaps_first_and_collection_unregisters(device, stream):
    from helpers import sim_library
    from cuda.core import GraphicsResource

    lib = sim_library()
    name = sim_gl_buffer(512)
    res = GraphicsResource.from_gl_buffer(name)
    buf = res.map(stream=stream)
    res.close(stream)
    assert buf.is_closed and res.is_closed
    before = lib.cuSimCallCount(b"cuGraphicsUnregisterResource")
    GraphicsResource.from_gl_buffer(name)   # dropped at once
    gc.collect()
    assert lib.cuSimCallCount(b"cuGraphicsUnregisterResource") == before + 1


@pytest.mark.sim_only
def test_driver_refusals_are_cudaerrors(device, stream):
    from cuda.core import CUDAError, GraphicsResource

    name = sim_gl_buffer(256)
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        GraphicsResource.from_gl_buffer(name + 1000)              # no such GL buffer
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        GraphicsResource.from_gl_buffer(name, flags="surface_load_store")   # an image-only flag
    with pytest.raises(CUDAError, match="CUDA_ERROR_INVALID_VALUE"):
        GraphicsResource.from_gl_image(name, 3553)                # not a texture
    res = GraphicsResource.from_gl_buffer(name)
    closed = device.create_stream()
    closed.close()
    with pytest.raises(RuntimeError, match="closed"):
        res.map(stream=closed)
    with pytest.raises(TypeError):
        res.map(stream=None)
    with pytest.raises(TypeError):
        res.map()
    assert not res.is_mapped
    res.close()


@pytest.mark.gpu
def test_gpu_registration_without_gl_is_a_clear_cudaerror(device):
    """On the H200 (headless, no GL context current): registering fails with the
    driver's CUDAError, never a crash."""
    from cuda.core import CUDAError, GraphicsResource

    with pytest.raises(CUDAError):
        GraphicsResource.from_gl_buffer(1)
    with pytest.raises(CUDAError):
        GraphicsResource.from_gl_image(1, 0x0DE1)   # GL_TEXTURE_2D

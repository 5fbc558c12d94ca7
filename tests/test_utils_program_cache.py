"""cuda.core.utils program caches: ProgramCacheResource, InMemoryProgramCache,
FileStreamProgramCache, make_program_cache_key, and Program.compile(cache=...).

The caches are pure Python and need no driver; the compile tests use NVRTC
(the CPU compiler) and, for PTX, the linker."""
import abc
import os
import pickle
import threading
import time
from pathlib import Path

import pytest

from helpers import DRIVER_AVAILABLE, DRIVER_DESCRIPTION

pytestmark = [pytest.mark.no_driver_ok]

SOURCE = 'extern "C" __global__ void k(int* a) { *a = 1; }'


def _opts(**kw):
    from cuda.core import ProgramOptions

    kw.setdefault("arch", "sm_80")
    return ProgramOptions(**kw)


def _key(**overrides):
    from cuda.core.utils import make_program_cache_key

    base = dict(code="a", code_type="c++", options=_opts(), target_type="cubin")
    return make_program_cache_key(**{**base, **overrides})


# ---------------------------------------------------------------- module layout and ABC

def test_public_names_and_modules():
    import cuda.core.utils as utils

    for name in ("FileStreamProgramCache", "InMemoryProgramCache", "ProgramCacheResource", "make_program_cache_key"):
        assert name in utils.__all__
    assert utils.ProgramCacheResource.__module__ == "cuda.core.utils._program_cache._abc"
    assert utils.InMemoryProgramCache.__module__ == "cuda.core.utils._program_cache._in_memory"
    assert utils.FileStreamProgramCache.__module__ == "cuda.core.utils._program_cache._file_stream"
    assert utils.make_program_cache_key.__module__ == "cuda.core.utils._program_cache._keys"


def test_resource_is_abstract_without_contains():
    from cuda.core.utils import ProgramCacheResource

    assert issubclass(ProgramCacheResource, abc.ABC)
    with pytest.raises(TypeError, match="abstract"):
        ProgramCacheResource()
    assert {"__getitem__", "__setitem__", "__delitem__", "__len__", "clear"} <= \
        ProgramCacheResource.__abstractmethods__
    assert not hasattr(ProgramCacheResource, "__contains__")


def test_resource_defaults_get_update_close_context():
    from cuda.core.utils import ProgramCacheResource

    closed = []

    class Dict(ProgramCacheResource):
        def __init__(self):
            self.d = {}

        def __getitem__(self, key):
            return self.d[key]

        def __setitem__(self, key, value):
            self.d[key] = bytes(value)

        def __delitem__(self, key):
            del self.d[key]

        def __len__(self):
            return len(self.d)

        def clear(self):
            self.d.clear()

        def close(self):
            closed.append(True)

    sentinel = object()
    with Dict() as c:
        assert c.get(b"x") is None and c.get(b"x", default=sentinel) is sentinel
        c.update({b"a": b"1"})
        c.update([(b"b", b"2"), (b"c", bytearray(b"3"))])
        assert len(c) == 3 and c.get(b"c") == b"3"
    assert closed == [True]


# ---------------------------------------------------------------- both backends

@pytest.fixture(params=["memory", "file"])
def cache(request, tmp_path):
    from cuda.core.utils import FileStreamProgramCache, InMemoryProgramCache

    c = InMemoryProgramCache() if request.param == "memory" else FileStreamProgramCache(tmp_path / "cache")
    yield c
    c.close()


def test_roundtrip_str_and_bytes_keys_are_one_entry(cache):
    cache[b"k"] = b"v1"
    assert cache["k"] == b"v1" and cache.get("k") == b"v1"
    cache["k"] = bytearray(b"v2")
    assert cache[b"k"] == b"v2" and len(cache) == 1
    cache[b"m"] = memoryview(b"mv")
    assert cache[b"m"] == b"mv" and isinstance(cache[b"m"], bytes)
    del cache["k"]
    with pytest.raises(KeyError):
        cache[b"k"]
    with pytest.raises(KeyError):
        del cache[b"k"]
    assert cache.get(b"k") is None
    cache.clear()
    assert len(cache) == 0


def test_object_code_values(cache, tmp_path):
    from cuda.core import ObjectCode

    cache[b"a"] = ObjectCode.from_cubin(b"\x7fELF-bytes")
    assert cache[b"a"] == b"\x7fELF-bytes"
    path = tmp_path / "k.cubin"
    path.write_bytes(b"from-a-file")
    oc = ObjectCode.from_cubin(str(path))
    cache[b"p"] = oc
    path.unlink()
    assert cache[b"p"] == b"from-a-file"  # read at write time: the file may go
    with pytest.raises(FileNotFoundError, match="no longer exists"):
        cache[b"q"] = oc


@pytest.mark.parametrize("bad_key", [1, None, 1.5, ("a",)])
def test_bad_keys(cache, bad_key):
    with pytest.raises(TypeError, match="cache keys must be bytes or str"):
        cache[bad_key] = b"v"
    with pytest.raises(TypeError, match="cache keys must be bytes or str"):
        cache[bad_key]


@pytest.mark.parametrize("bad_value", ["text", 3, None, [1, 2]])
def test_bad_values(cache, bad_value):
    with pytest.raises(TypeError, match="cache values must be bytes-like or ObjectCode"):
        cache[b"k"] = bad_value
    assert len(cache) == 0


@pytest.mark.parametrize("cls", ["InMemoryProgramCache", "FileStreamProgramCache"])
@pytest.mark.parametrize("bad, exc", [(0, ValueError), (-1, ValueError), ("10", TypeError), (1.5, TypeError)])
def test_max_size_validation(cls, bad, exc, tmp_path):
    import cuda.core.utils as utils

    args = () if cls == "InMemoryProgramCache" else (tmp_path,)
    with pytest.raises(exc):
        getattr(utils, cls)(*args, max_size_bytes=bad)


def test_threads_share_a_cache(cache):
    errors = []

    def worker(i):
        try:
            for j in range(50):
                key = f"{i}-{j % 5}".encode()
                cache[key] = key * 3
                got = cache.get(key)
                assert got is None or got == key * 3
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(cache) == 40


# ---------------------------------------------------------------- InMemoryProgramCache

def test_in_memory_lru_eviction():
    from cuda.core.utils import InMemoryProgramCache

    c = InMemoryProgramCache(max_size_bytes=10)
    c[b"a"] = b"1234"
    c[b"b"] = b"1234"
    assert c[b"a"] == b"1234"  # a is now the most recent
    c[b"c"] = b"1234"          # 12 > 10: b (least recent) goes
    assert c.get(b"b") is None and c.get(b"a") == b"1234" and c.get(b"c") == b"1234"
    c[b"big"] = b"x" * 11      # alone over the cap: does not survive its own write
    assert c.get(b"big") is None and len(c) == 0
    c[b"a"] = b"12345"
    c[b"a"] = b"1"             # overwrite accounts the old size
    c[b"b"] = b"123456789"
    assert len(c) == 2


# ---------------------------------------------------------------- FileStreamProgramCache

def test_file_layout_and_permissions(tmp_path):
    import hashlib

    from cuda.core.utils import FileStreamProgramCache

    root = tmp_path / "c"
    with FileStreamProgramCache(root) as c:
        c[b"key"] = b"payload"
    digest = hashlib.sha256(b"key").hexdigest()
    entry = root / "entries" / digest[:2] / digest[2:]
    assert entry.read_bytes() == b"payload"          # raw bytes, no framing
    assert (root / "tmp").is_dir() and list((root / "tmp").iterdir()) == []
    assert (root / "tmp").stat().st_mode & 0o777 == 0o700
    assert entry.stat().st_mode & 0o077 == 0           # owner-only, as mkstemp made it
    assert FileStreamProgramCache(os.fspath(root))[b"key"] == b"payload"   # persists, str path


def test_default_directory_follows_xdg(tmp_path, monkeypatch):
    from cuda.core.utils import FileStreamProgramCache
    from cuda.core.utils._program_cache import _file_stream

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert _file_stream._default_cache_dir() == tmp_path / "xdg" / "cuda-python" / "program-cache"
    FileStreamProgramCache()[b"k"] = b"v"
    assert len(list((tmp_path / "xdg" / "cuda-python" / "program-cache" / "entries").rglob("*"))) == 2
    monkeypatch.setenv("XDG_CACHE_HOME", "")
    assert _file_stream._default_cache_dir() == Path.home() / ".cache" / "cuda-python" / "program-cache"


def test_file_eviction_by_least_recent_read(tmp_path):
    from cuda.core.utils import FileStreamProgramCache

    c = FileStreamProgramCache(tmp_path, max_size_bytes=250)
    c[b"a"] = b"a" * 100
    c[b"b"] = b"b" * 100
    past = time.time() - 100
    for name in (b"a", b"b"):
        p = c._path_for_key(name)
        os.utime(p, (past, past))
    assert c[b"a"] == b"a" * 100   # the read bumps a's atime: b is now the coldest
    c[b"c"] = b"c" * 100           # 300 > 250: evict b
    assert c.get(b"b") is None and c.get(b"a") is not None and c.get(b"c") is not None
    assert len(c) == 2


def test_file_stale_temporaries_are_swept_and_fresh_ones_kept(tmp_path):
    from cuda.core.utils import FileStreamProgramCache

    c = FileStreamProgramCache(tmp_path)
    stale, fresh = tmp_path / "tmp" / "entry-stale", tmp_path / "tmp" / "entry-fresh"
    stale.write_bytes(b"x")
    fresh.write_bytes(b"y")
    old = time.time() - 7200
    os.utime(stale, (old, old))
    c[b"k"] = b"v"
    c.clear()
    assert not stale.exists() and fresh.exists()
    assert len(c) == 0 and list((tmp_path / "entries").iterdir()) == []


def test_file_survives_removed_tmp_dir_and_corrupt_layout(tmp_path):
    import shutil

    from cuda.core.utils import FileStreamProgramCache

    c = FileStreamProgramCache(tmp_path)
    shutil.rmtree(tmp_path / "tmp")
    c[b"k"] = b"v"
    assert c[b"k"] == b"v"
    (tmp_path / "entries" / "stray-file").write_bytes(b"ignored")
    assert len(c) == 1


def test_file_failed_write_leaves_no_temporary(tmp_path, monkeypatch):
    from cuda.core.utils import FileStreamProgramCache
    from cuda.core.utils._program_cache import _file_stream

    c = FileStreamProgramCache(tmp_path)

    def boom(*_):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(_file_stream.os, "replace", boom)
    with pytest.raises(OSError, match="No space"):
        c[b"k"] = b"v"
    assert list((tmp_path / "tmp").iterdir()) == []
    assert c.get(b"k") is None


def test_file_bad_path_type(tmp_path):
    from cuda.core.utils import FileStreamProgramCache

    with pytest.raises(TypeError, match="path"):
        FileStreamProgramCache(42)
    (tmp_path / "file").write_bytes(b"")
    with pytest.raises(OSError):
        FileStreamProgramCache(tmp_path / "file")


def test_file_processes_share_a_cache(tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(
        "import sys\n"
        "from cuda.core.utils import FileStreamProgramCache\n"
        "c = FileStreamProgramCache(sys.argv[1])\n"
        "for i in range(200):\n"
        "    c[b'shared'] = sys.argv[2].encode() * 1000\n"
        "    v = c.get(b'shared')\n"
        "    assert v is not None and len(v) == 1000 and len(set(v)) == 1, v[:10]\n"
        "print('ok')\n")
    import subprocess
    import sys

    from helpers import child_env

    procs = [subprocess.Popen([sys.executable, str(script), str(tmp_path / "c"), tag], env=child_env(None),
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for tag in "ABCD"]
    outs = [p.communicate(timeout=120) for p in procs]
    assert all(p.returncode == 0 for p in procs), outs
    assert list((tmp_path / "c" / "tmp").iterdir()) == []


# ---------------------------------------------------------------- make_program_cache_key

def test_key_is_32_deterministic_bytes():
    assert isinstance(_key(), bytes) and len(_key()) == 32 and _key() == _key()


@pytest.mark.parametrize("a, b", [
    ({"code": "a"}, {"code": "b"}),
    ({"target_type": "ptx"}, {"target_type": "cubin"}),
    ({"options": _opts(arch="sm_80")}, {"options": _opts(arch="sm_90")}),
    ({"options": _opts(use_fast_math=True)}, {"options": _opts(use_fast_math=False)}),
    ({"options": _opts(name="a")}, {"options": _opts(name="b")}),
    ({}, {"extra_digest": b"\x01" * 32}),
    ({"extra_digest": b"\x01"}, {"extra_digest": b"\x02"}),
    ({"name_expressions": ("f",)}, {"name_expressions": (b"f",)}),
    ({"code_type": "ptx", "code": ".version 8.0"}, {"code_type": "c++", "code": ".version 8.0"}),
])
def test_key_differs_on(a, b):
    assert _key(**a) != _key(**b)


def test_key_normalisations():
    assert _key(name_expressions=("f", "g")) == _key(name_expressions=("g", "f"))
    assert _key(code_type="C++", target_type="CUBIN") == _key()
    ptx = dict(code=".version 8.0", code_type="ptx")
    assert _key(**ptx, name_expressions=("x",)) == _key(**ptx)  # the linker ignores names
    assert _key(code="abc", code_type="nvvm", target_type="ptx") == _key(code=b"abc", code_type="nvvm",
                                                                          target_type="ptx")


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"code_type": "fortran"}, ValueError, "is not a valid SourceCodeType"),
    ({"target_type": "exe"}, ValueError, "target_type"),
    ({"code": 12345}, TypeError, "code"),
    ({"code": b"abc"}, TypeError, "code must be str for code_type"),
    ({"code_type": "ptx", "target_type": "ltoir"}, ValueError, "not valid for code_type"),
    ({"code_type": "nvvm", "target_type": "cubin"}, ValueError, "not valid for code_type"),
    ({"name_expressions": ("ok", 123)}, TypeError, "name_expressions"),
    ({"name_expressions": ("ok", bytearray(b"x"))}, TypeError, "bytearray"),
    ({"name_expressions": "f"}, TypeError, "name_expressions"),
    ({"options": {"arch": "sm_80"}}, TypeError, "ProgramOptions"),
    ({"extra_digest": "text"}, TypeError, "extra_digest"),
    ({"options": _opts(create_pch="x.pch")}, ValueError, "side effects"),
    ({"options": _opts(time="t.csv")}, ValueError, "side effects"),
    ({"options": _opts(include_path="/inc")}, ValueError, "extra_digest"),
    ({"options": _opts(pre_include="x.h")}, ValueError, "extra_digest"),
    ({"options": _opts(name="dir/prog.cu")}, ValueError, "directory"),
    ({"options": _opts(extra_sources=[("a", "b")])}, ValueError, "extra_sources"),
])
def test_key_refusals(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        _key(**kwargs)


def test_key_external_content_accepted_with_a_digest():
    assert len(_key(options=_opts(include_path="/inc"), extra_digest=b"headers")) == 32
    assert _key(options=_opts(include_path=[])) == _key(options=_opts(include_path=[]))  # empty: no files read


def test_key_ptx_pins_the_linker(monkeypatch):
    from cuda.core.utils._program_cache import _keys

    ptx = dict(code=".version 8.0", code_type="ptx")
    monkeypatch.setattr(_keys, "_linker_backend_and_version", lambda _d: ("driver", "13000"))
    k1 = _key(**ptx)
    monkeypatch.setattr(_keys, "_linker_backend_and_version", lambda _d: ("nvJitLink", "13.0"))
    k2 = _key(**ptx)
    monkeypatch.setattr(_keys, "_linker_backend_and_version", lambda _d: ("nvJitLink", "13.1"))
    k3 = _key(**ptx)
    assert len({k1, k2, k3}) == 3
    # linker gates: equivalent inputs hash alike; NVRTC-only fields do not perturb PTX keys
    assert _key(**ptx, options=_opts(debug=False)) == _key(**ptx, options=_opts(debug=None))
    assert _key(**ptx, options=_opts(ptxas_options="-v")) == _key(**ptx, options=_opts(ptxas_options=["-v"]))
    assert _key(**ptx, options=_opts(std="c++17")) == _key(**ptx)
    assert _key(**ptx, options=_opts(debug=True)) != _key(**ptx)


def test_key_driver_linker_collapses_and_refuses(monkeypatch):
    from cuda.core import _linker

    ptx = dict(code=".version 8.0", code_type="ptx")
    monkeypatch.setattr(_linker, "_decide_nvjitlink_or_driver", lambda: True)
    assert _key(**ptx, options=_opts(ftz=True)) == _key(**ptx, options=_opts(ftz=False))
    with pytest.raises(ValueError, match="cuLink driver linker does not support"):
        _key(**ptx, options=_opts(split_compile=2))
    monkeypatch.setattr(_linker, "_decide_nvjitlink_or_driver", lambda: False)
    assert _key(**ptx, options=_opts(ftz=True)) != _key(**ptx, options=_opts(ftz=False))


def test_key_probe_failure_is_stable_and_distinct(monkeypatch):
    from cuda.core.utils._program_cache import _keys

    good = _key()

    def fail():
        raise RuntimeError("no nvrtc")

    monkeypatch.setattr(_keys, "_nvrtc_version", fail)
    assert _key() == _key() != good


def test_key_propagates_option_errors(monkeypatch):
    options = _opts()
    monkeypatch.setattr(options, "as_bytes", lambda *a, **k: (_ for _ in ()).throw(TypeError("boom")))
    with pytest.raises(TypeError, match="boom"):
        _key(options=options)


# ---------------------------------------------------------------- Program.compile(cache=...)

def test_compile_through_a_cache(cache):
    from cuda.core import ObjectCode, Program, ProgramOptions

    prog = Program(SOURCE, "c++", ProgramOptions(arch="sm_90", name="cached"))
    first = prog.compile("cubin", cache=cache)
    assert len(cache) == 1
    again = Program(SOURCE, "c++", ProgramOptions(arch="sm_90", name="cached"))
    logs = []

    class Log:
        def write(self, s):
            logs.append(s)

    second = again.compile("cubin", logs=Log(), cache=cache)
    assert isinstance(second, ObjectCode) and second is not first
    assert second.code == first.code and second.name == "cached" and second.code_type == "cubin"
    assert logs == []
    assert Program(SOURCE, "c++", ProgramOptions(arch="sm_90")).compile("ptx", cache=cache).code_type == "ptx"
    assert len(cache) == 2


def test_compile_cache_refusals(cache):
    from cuda.core import Program, ProgramOptions

    prog = Program(SOURCE, "c++", ProgramOptions(arch="sm_90"))
    with pytest.raises(ValueError, match="name_expressions"):
        prog.compile("cubin", name_expressions=("k",), cache=cache)
    with pytest.raises(TypeError, match="ProgramCacheResource"):
        prog.compile("cubin", cache={})
    with pytest.raises(ValueError, match="extra_digest"):
        Program(SOURCE, "c++", ProgramOptions(arch="sm_90", include_path="/x")).compile("cubin", cache=cache)
    assert len(cache) == 0


@pytest.mark.skipif(not DRIVER_AVAILABLE, reason=f"loading needs a driver (real or simulated): {DRIVER_DESCRIPTION}")
def test_a_cached_cubin_loads(cache, device):
    from cuda.core import Program, ProgramOptions

    Program(SOURCE, "c++", ProgramOptions(arch="sm_90")).compile("cubin", cache=cache)
    hit = Program(SOURCE, "c++", ProgramOptions(arch="sm_90")).compile("cubin", cache=cache)
    assert hit.get_kernel("k") is not None


def test_object_code_pickles_through_the_cache_payload(cache):
    from cuda.core import ObjectCode

    oc = ObjectCode.from_cubin(b"\x7fELF...", name="n")
    cache[b"k"] = pickle.loads(pickle.dumps(oc))
    assert cache[b"k"] == b"\x7fELF..."


# ---------------------------------------------------------------- platform rules (flags, as upstream's tests flip them)

def test_default_directory_per_platform(monkeypatch, tmp_path):
    from cuda.core.utils import _cache_dir
    from cuda.core.utils._program_cache import _file_stream

    monkeypatch.setattr(Path, "home", classmethod(lambda _cls: tmp_path / "home"))
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.delenv("LOCALAPPDATA", raising=False)
    assert _file_stream._default_cache_dir() == tmp_path / "home" / ".cache" / "cuda-python" / "program-cache"
    assert _cache_dir._default_cache_dir() == tmp_path / "home" / ".cache" / "cuda-python"
    monkeypatch.setattr(_file_stream, "_IS_WINDOWS", True)
    assert _file_stream._default_cache_dir() == \
        tmp_path / "home" / "AppData" / "Local" / "cuda-python" / "program-cache"
    monkeypatch.setenv("LOCALAPPDATA", str(tmp_path / "appdata"))
    assert _file_stream._default_cache_dir() == tmp_path / "appdata" / "cuda-python" / "program-cache"
    monkeypatch.setattr(_file_stream, "_IS_WINDOWS", False)
    monkeypatch.setattr(_cache_dir, "_IS_WINDOWS", True)
    assert _cache_dir._default_cache_dir() == tmp_path / "appdata" / "cuda-python"


@pytest.mark.parametrize("winerror, dropped", [(5, True), (32, True), (33, True), (1, False), (None, False)])
def test_windows_sharing_violations_drop_the_write_others_propagate(tmp_path, monkeypatch, winerror, dropped):
    from cuda.core.utils import FileStreamProgramCache
    from cuda.core.utils._program_cache import _file_stream

    monkeypatch.setattr(_file_stream, "_IS_WINDOWS", True)
    monkeypatch.setattr(_file_stream, "_REPLACE_RETRY_DELAYS", (0.0, 0.0))
    cache = FileStreamProgramCache(tmp_path / "fc")

    def denied(src, dst):
        exc = PermissionError("simulated")
        exc.winerror = winerror
        raise exc

    monkeypatch.setattr(_file_stream.os, "replace", denied)
    if dropped:
        cache[b"k"] = b"v"
        assert cache.get(b"k") is None
    else:
        with pytest.raises(PermissionError, match="simulated"):
            cache[b"k"] = b"v"
    assert list((tmp_path / "fc" / "tmp").iterdir()) == []


def test_posix_permission_errors_propagate(tmp_path, monkeypatch):
    from cuda.core.utils import FileStreamProgramCache
    from cuda.core.utils._program_cache import _file_stream

    monkeypatch.setattr(_file_stream, "_IS_WINDOWS", False)
    cache = FileStreamProgramCache(tmp_path / "fc")

    def denied(src, dst):
        exc = PermissionError("denied")
        exc.winerror = 32
        raise exc

    monkeypatch.setattr(_file_stream.os, "replace", denied)
    with pytest.raises(PermissionError, match="denied"):
        cache[b"k"] = b"v"


def test_stat_guards_protect_a_replaced_entry(tmp_path):
    from cuda.core.utils import FileStreamProgramCache
    from cuda.core.utils._program_cache._file_stream import _prune_if_stat_unchanged, _touch_atime

    cache = FileStreamProgramCache(tmp_path / "fc")
    cache[b"k"] = b"v" * 64
    path = cache._path_for_key(b"k")
    stale = path.stat()
    time.sleep(0.02)
    cache[b"k"] = b"v" * 64          # same size, new file
    new_mtime = path.stat().st_mtime_ns
    _touch_atime(path, stale)
    assert path.stat().st_mtime_ns == new_mtime
    _prune_if_stat_unchanged(path, stale)
    assert path.exists()
    fresh = path.stat()
    _touch_atime(path, fresh)
    assert path.stat().st_mtime_ns == fresh.st_mtime_ns
    _prune_if_stat_unchanged(path, path.stat())
    assert not path.exists()


def test_compile_cache_goes_through_the_module_seam(cache, monkeypatch):
    # upstream 1.2.2: a miss calls cuda.core._program._program_compile_uncached (which tests
    # replace), an empty name_expressions is accepted, a PTX hit on a driver older than NVRTC warns
    import warnings

    from cuda.core import ObjectCode, Program, ProgramOptions
    from cuda.core import _program

    made = ObjectCode._init(b"compiled-bytes", "cubin", name="seam")
    calls = []
    monkeypatch.setattr(_program, "_program_compile_uncached",
                        lambda program, target_type, name_expressions, logs: calls.append(target_type) or made)
    prog = Program(SOURCE, "c++", ProgramOptions(arch="sm_90", name="seam"))
    assert prog.compile("cubin", name_expressions=(), cache=cache) is made
    assert calls == ["cubin"] and len(cache) == 1
    hit = prog.compile("cubin", name_expressions=[], cache=cache)
    assert hit.code == b"compiled-bytes" and calls == ["cubin"]

    key = _key(code=SOURCE, options=ProgramOptions(arch="sm_90", name="seam"), target_type="ptx")
    cache[key] = b"cached ptx"
    monkeypatch.setattr(_program, "driver_version", lambda: (0, 0, 0))
    with pytest.warns(RuntimeWarning, match=r"^The CUDA driver version is older than the backend version\. "
                                            r"The generated ptx will not be loadable by the current driver\.$"):
        assert prog.compile("ptx", cache=cache).code == b"cached ptx"
    monkeypatch.setattr(_program, "driver_version", lambda: (999, 0, 0))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert prog.compile("ptx", cache=cache).code == b"cached ptx"


@pytest.mark.parametrize("option_kw", [{"include_path": False}, {"pre_include": False}, {"include_path": range(0)},
                                       {"include_path": []}, {"pre_include": ()}])
def test_empty_or_false_external_options_are_no_options(option_kw):
    # upstream 1.2.2: include_path / pre_include that is neither a str nor a sequence (False) or
    # an empty sequence (range(0) too) gives no NVRTC flag, so a key needs no extra_digest
    _key(options=_opts(**option_kw))
    args = _opts(**option_kw).as_bytes("nvrtc")
    assert not any(a.startswith((b"--include-path", b"--pre-include")) for a in args)


def test_path_like_include_path_needs_an_extra_digest(tmp_path):
    # a PathLike include_path is a flag (NVRTC reads files from it), so the key cannot be made without a digest
    args = _opts(include_path=tmp_path).as_bytes("nvrtc")
    assert f"--include-path={tmp_path}".encode() in args
    with pytest.raises(ValueError, match="extra_digest"):
        _key(options=_opts(include_path=tmp_path))
    _key(options=_opts(include_path=tmp_path), extra_digest=b"headers")


def test_unknown_code_type_is_upstreams_enum_error():
    # upstream 1.2.2 reads code_type as a cuda.core.typing.SourceCodeType
    with pytest.raises(ValueError, match=r"^'fortran' is not a valid SourceCodeType$"):
        _key(code_type="fortran")


def test_filestream_hit_survives_a_failing_fstat_in_the_atime_bump(tmp_path, monkeypatch):
    # the atime bump is best effort: an os.fstat failure there leaves the hit intact, closes its fd
    # and skips os.utime (upstream 1.2.2's tests fail os.fstat to reach that path)
    from cuda.core.utils import FileStreamProgramCache
    from cuda.core.utils._program_cache import _file_stream

    monkeypatch.setattr(_file_stream, "_UTIME_SUPPORTS_FD", True)
    with FileStreamProgramCache(tmp_path / "fc") as cache:
        cache[b"k"] = b"v"
        opened, closed, utimes = [], [], []
        real_open, real_close = os.open, os.close
        with monkeypatch.context() as m:   # undone before pytest's capture calls os.fstat again
            m.setattr(os, "open", lambda *a, **k: opened.append(real_open(*a, **k)) or opened[-1])
            m.setattr(os, "close", lambda fd: closed.append(fd) or real_close(fd))
            m.setattr(os, "fstat", lambda fd: (_ for _ in ()).throw(OSError("fstat refused")))
            m.setattr(os, "utime", lambda *a, **k: utimes.append(a))
            assert cache[b"k"] == b"v"
        assert opened and opened[-1] in closed and utimes == []


def test_filestream_unlink_goes_through_path_unlink(tmp_path, monkeypatch):
    # entries are removed with pathlib.Path.unlink (where upstream's tests inject failures): a
    # PermissionError that is not a Windows sharing violation surfaces from del and from eviction
    from pathlib import Path

    from cuda.core.utils import FileStreamProgramCache
    from cuda.core.utils._program_cache import _file_stream

    monkeypatch.setattr(_file_stream, "_IS_WINDOWS", False)
    with FileStreamProgramCache(tmp_path / "fc", max_size_bytes=200) as cache:
        cache[b"a"] = b"a" * 100
        cache[b"b"] = b"b" * 100
        with monkeypatch.context() as m:
            m.setattr(Path, "unlink", lambda self, *a, **k: (_ for _ in ()).throw(PermissionError("acl denied")))
            with pytest.raises(PermissionError, match="acl denied"):
                del cache[b"a"]
            with pytest.raises(PermissionError, match="acl denied"):
                cache[b"c"] = b"c" * 100


def test_nvvm_key_fingerprints_the_module_get_nvvm_module_gives(monkeypatch):
    # upstream 1.2.2: the NVVM part of a key is version() and ir_version() of _program._get_nvvm_module()
    # (one call each key), so a libNVVM update changes keys even when its IR version does not
    from cuda.core import _program

    class FakeNVVM:
        def __init__(self, version):
            self.calls = 0
            self._version = version

        def version(self):
            self.calls += 1
            return self._version

        def ir_version(self):
            return (1, 8, 3, 0)

    old, new = FakeNVVM((12, 3)), FakeNVVM((12, 4))
    monkeypatch.setattr(_program, "_get_nvvm_module", lambda: old)
    k_old = _key(code="abc", code_type="nvvm", target_type="ptx")
    monkeypatch.setattr(_program, "_get_nvvm_module", lambda: new)
    k_new = _key(code="abc", code_type="nvvm", target_type="ptx")
    assert k_old != k_new and old.calls == 1 and new.calls == 1
    assert _key(code="abc", code_type="nvvm", target_type="ptx") == k_new

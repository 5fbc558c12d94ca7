"""Child-process bodies for test_module_layout.py (spawned children import them by module name)."""


def child_cache_seen_across_modules(mr, desc):
    """Import `desc` through cuda.core._memory._ipc (Buffer.from_ipc_descriptor and the
    unpickling helper) and read the IPC import cache through cuda.core._resource_handles."""
    import pickle

    import cuda.core._memory._ipc as ipc_module   # noqa: F401  (the module that calls the C++ import)
    from cuda.core import Buffer, Device
    from cuda.core._resource_handles import _ipc_cache_size

    s = Device().create_stream()
    sizes = [_ipc_cache_size()]
    a = Buffer.from_ipc_descriptor(mr, desc, stream=s)
    sizes.append(_ipc_cache_size())
    b = pickle.loads(pickle.dumps(a))                # Buffer._reduce_helper -> the same cache entry
    sizes.append(_ipc_cache_size())
    same = (a.handle == b.handle)
    b.close()
    a.close()
    s.sync()
    sizes.append(_ipc_cache_size())
    return sizes, same

"""Spawned children of tests/test_graph_capture_ipc.py (importable by the spawn start method)."""


def child_export_pool_and_buffer(conn, nbytes, pattern, rounds):
    """Export an IPC pool and, per round, a Buffer filled with `pattern` + round;
    wait for the parent's "next" after each; close everything at "done" (the
    parent reads its imports only then)."""
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    dev = Device()
    dev.set_current()
    stream = dev.create_stream()
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(ipc_enabled=True))
    conn.send(mr)
    kept = []   # freed only at "done": the parent may still be copying from them
    for i in range(rounds):
        buf = mr.allocate(nbytes, stream=stream)
        buf.fill((pattern + i) & 0xFF, stream=stream)
        stream.sync()
        conn.send(buf)
        assert conn.recv() == "next"
        kept.append(buf)
    assert conn.recv() == "done"
    for buf in kept:
        buf.close(stream)
    stream.sync()
    mr.close()

"""Reading device memory back on the host, with the public cuda.core API only
(shared by the scenario scripts; works with any installed cuda.core)."""


def read_back(buffer, stream):
    """Copy `buffer` into host memory, wait for `stream`, return it as a numpy uint8 array."""
    import numpy as np
    from cuda.core import Buffer

    host = np.zeros(buffer.size, dtype=np.uint8)
    view = Buffer.from_handle(host.ctypes.data, buffer.size)
    buffer.copy_to(view, stream=stream)
    stream.sync()
    view.close()
    return host

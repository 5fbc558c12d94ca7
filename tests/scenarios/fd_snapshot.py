"""What this process's file descriptors point at (shared by the tests and the
scenario scripts, which run without pytest)."""
import os


def open_fd_targets():
    """{fd: what it points at} for this process (for messages on an fd leak)."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return out

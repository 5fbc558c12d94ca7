"""What this process's file descriptors point at (shared by the tests and the
scenario scripts, which run without pytest)."""
import os

# What the real driver's own device files are called (/dev/nvidiactl, /dev/nvidia0,
# /dev/nvidia-uvm, ...): the fd checks count them apart from every other fd.
DRIVER_DEVICE_FILES = "/dev/nvidia"


def open_fd_targets():
    """{fd: what it points at} for this process (for messages on an fd leak)."""
    out = {}
    for name in os.listdir("/proc/self/fd"):
        try:
            out[int(name)] = os.readlink(f"/proc/self/fd/{name}")
        except OSError:
            pass
    return out

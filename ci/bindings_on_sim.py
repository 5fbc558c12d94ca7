"""cuda-bindings drives the simulated driver, in one process with our package.

Run by the nox sessions bindings_on_sim and upstream_tests (noxfile.py) with
CUDA_CORE_DRIVER_LIBRARY naming libcuda_sim.so and a libcuda.so.1 symlink to
the same file first on LD_LIBRARY_PATH. Checks that cuda-bindings resolves its
entry points through the simulator's cuGetProcAddress, that exactly one driver
file is mapped, and that both see the same process state: the context our
Device.set_current() made current, and an allocation our memory resource made.
"""

import os

from cuda.bindings import driver

from cuda.core import Device, DeviceMemoryResource


def check(result):
    err, *rest = result
    if err != driver.CUresult.CUDA_SUCCESS:
        raise SystemExit(f"cuda-bindings call failed on the simulator: {err!r}")
    return rest[0] if len(rest) == 1 else rest


check(driver.cuInit(0))
count = check(driver.cuDeviceGetCount())
assert count >= 1, count
bus_id = check(driver.cuDeviceGetPCIBusId(13, 0))
assert bus_id.startswith(b"0000:"), bus_id

dev = Device(0)
dev.set_current()  # ours retains the primary context and makes it current
ctx = check(driver.cuCtxGetCurrent())
assert int(ctx) != 0, "cuda-bindings sees no current context after Device.set_current()"

mr = DeviceMemoryResource(dev)
buf = mr.allocate(4096, stream=dev.default_stream)
base, size = check(driver.cuMemGetAddressRange(int(buf.handle)))
assert (int(base), size) == (int(buf.handle), 4096), (base, size, buf.handle)
buf.close(dev.default_stream)

real = os.path.realpath(os.environ["CUDA_CORE_DRIVER_LIBRARY"])
with open("/proc/self/maps") as maps:
    mapped = {line.split()[-1] for line in maps if "libcuda" in line or "cuda_sim" in line}
assert mapped == {real}, f"expected one driver file mapped ({real}), got {sorted(mapped)}"
print(f"cuda-bindings {driver.__name__} on the simulator: one copy ({real}); "
      f"same current context {int(ctx):#x}; sees our allocation {int(base):#x}+{size}")

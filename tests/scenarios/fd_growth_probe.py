"""Where a long-lived IPC consumer's file descriptors go, cycle by cycle.

This process is the producer; an IpcWorker child (tests/helpers/ipc_worker.py)
is the consumer. Each named sequence runs `--cycles` times; after every cycle
both processes' fds are counted by target (the driver's device files apart), so
a bounded driver cache (grows, then stops) reads differently from a leak (grows
by the same amount every cycle). `--trace` prints the consumer's fd changes
after every step of the first two cycles of each sequence.

    python tests/scenarios/fd_growth_probe.py [--cycles 25] [--trace] [SEQUENCE ...]
"""
import argparse
import collections
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from scenarios.fd_snapshot import DRIVER_DEVICE_FILES, open_fd_targets  # noqa: E402
from helpers.ipc_worker import IpcWorker  # noqa: E402


def by_target(fds):
    """{target kind: count}: device files by name, everything else by its kind (pipe, socket, ...)."""
    kinds = collections.Counter()
    for target in fds.values():
        if target.startswith("/dev/"):
            kinds[target] += 1
        else:
            kinds[target.split(":")[0] if ":" in target else "file"] += 1
    return dict(sorted(kinds.items()))


class Producer:
    """One cycle's state in the producer: pools (key -> resource), buffers, streams."""

    def __init__(self, dev, worker, trace):
        self.dev = dev
        self.w = worker
        self.trace = trace
        self.pools = []
        self.bufs = []
        self.streams = []
        self.last = None

    def step(self, what):
        if not self.trace:
            return
        now = self.w.call("status")["fds"]
        if self.last is not None:
            gone = {fd: t for fd, t in self.last.items() if now.get(fd) != t}
            new = {fd: t for fd, t in now.items() if self.last.get(fd) != t}
            if gone or new:
                print(f"    consumer after {what}: +{sorted(new.values())} -{sorted(gone.values())}")
        self.last = now

    def new_pool(self, allocs=0):
        from cuda.core import DeviceMemoryResource, DeviceMemoryResourceOptions

        mr = DeviceMemoryResource(self.dev, DeviceMemoryResourceOptions(ipc_enabled=True, max_size=4 << 20))
        self.pools.append(mr)
        for _ in range(allocs):
            buf = mr.allocate(4096, stream=self.dev.default_stream)
            buf.fill(0x5A, stream=self.dev.default_stream)
            self.bufs.append(buf)
        self.dev.default_stream.sync()
        return len(self.pools) - 1

    def send(self, key):
        self.w.call("adopt_pool", key, self.pools[key])
        self.step(f"adopt_pool({key})")

    def import_one(self, key):
        bid, _, _ = self.w.call("import", key, self.bufs[0].ipc_descriptor, 0)
        self.step("import")
        return bid

    def teardown(self):
        self.w.call("reset")
        self.step("consumer reset")
        for b in self.bufs:
            b.close()
        for p in self.pools:
            p.close()
        for s in self.streams:
            s.close()
        self.dev.default_stream.sync()
        self.step("producer closed everything")


def minimal_case(p, closed):
    """start, create_pool, create_pool, close_pool_here(pool `closed`), teardown."""
    p.streams = [p.dev.create_stream(), p.dev.create_stream()]
    p.send(p.new_pool(allocs=1))
    p.new_pool()
    p.new_pool()
    p.pools[closed].close()
    p.step(f"producer closed pool {closed}")
    p.teardown()


def seq_minimal(p):
    """Hypothesis's minimal case, closing the pool that was sent."""
    minimal_case(p, 0)


def seq_minimal_close_unsent(p):
    """The same, closing a pool that was never sent."""
    minimal_case(p, 2)


def seq_adopt_only(p):
    """A pool sent, nothing imported."""
    p.send(p.new_pool(allocs=1))
    p.teardown()


def seq_adopt_close_producer_first(p):
    """A pool sent; the producer closes it before the consumer does."""
    p.send(p.new_pool(allocs=1))
    p.pools[0].close()
    p.step("producer closed pool 0")
    p.teardown()


def seq_plain(p):
    """A pool sent, one buffer imported and closed."""
    key = p.new_pool(allocs=1)
    p.send(key)
    p.import_one(key)
    p.teardown()


def seq_plain_synced(p):
    """A pool sent, one buffer imported and closed, its free synchronized before the pool closes."""
    key = p.new_pool(allocs=1)
    p.send(key)
    bid = p.import_one(key)
    p.w.call("close", bid, 0)
    p.w.call("sync")
    p.step("consumer closed the buffer and synchronized")
    p.teardown()


def seq_unsent_pools(p):
    """A pool sent, two more exported-capable pools made here and never sent."""
    p.send(p.new_pool(allocs=1))
    p.new_pool()
    p.new_pool()
    p.teardown()


def seq_streams(p):
    """Only streams made and closed in the producer (the machine makes two per example)."""
    p.streams = [p.dev.create_stream(), p.dev.create_stream()]
    p.send(p.new_pool(allocs=1))
    p.teardown()


SEQUENCES = {name[4:]: fn for name, fn in globals().items() if name.startswith("seq_")}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sequences", nargs="*", default=list(SEQUENCES))
    ap.add_argument("--cycles", type=int, default=25)
    ap.add_argument("--trace", action="store_true")
    args = ap.parse_args()

    from cuda.core import Device

    dev = Device()
    dev.set_current()
    print(f"driver files counted: targets starting with {DRIVER_DEVICE_FILES}")
    for name in args.sequences:
        w = IpcWorker().start()   # a fresh consumer per sequence: each starts from its own baseline
        try:
            counts = []
            for cycle in range(args.cycles):
                p = Producer(dev, w, trace=args.trace and cycle < 2)
                if p.trace:
                    print(f"  [{name}] cycle {cycle}")
                    p.step("start")
                SEQUENCES[name](p)
                consumer = w.call("status")["fds"]
                counts.append((sum(t.startswith(DRIVER_DEVICE_FILES) for t in consumer.values()), len(consumer),
                               sum(t.startswith(DRIVER_DEVICE_FILES) for t in open_fd_targets().values())))
                if cycle in (0, args.cycles - 1):
                    print(f"  [{name}] cycle {cycle}: consumer fds {by_target(consumer)}")
            drv = [c[0] for c in counts]
            every = [c[1] for c in counts]
            half = len(every) // 2
            per_cycle = (every[-1] - every[half]) / max(1, len(every) - 1 - half)
            verdict = "GROWS" if per_cycle > 0.2 else "flat"
            print(f"{name:32s} consumer driver fds by cycle: {drv[:6]} ... {drv[-3:]}  "
                  f"(all fds {counts[0][1]} -> {counts[-1][1]}; producer driver fds {counts[0][2]} -> {counts[-1][2]}) "
                  f"consumer fds, second half: {per_cycle:+.2f}/cycle  {verdict}")
        finally:
            w.stop()


if __name__ == "__main__":
    main()

"""A long-lived spawned child that holds imported IPC resources, driven over a
pipe by the parent (tests/test_property_ipc.py, tests/test_ipc_lifetime.py).

Pool imports need another process: the parent exports, this worker imports
and keeps what it imported (pools by key, buffers by id) between commands, so
one worker serves many Hypothesis examples. Each command is a tuple
(op, *args); the reply is ("ok", value) or ("error", type name, message,
traceback). Public cuda.core API, plus the simulator's counters when the
driver is the simulator (CUDA_CORE_DRIVER_LIBRARY).

Imported as helpers.ipc_worker (tests/ on sys.path, as under pytest; a
spawned child inherits the parent's sys.path). IpcWorker().start() spawns it.
"""
import os
import pickle
import threading
import traceback

from helpers import sim_library, stale_accesses
from scenarios.fd_snapshot import open_fd_targets
from scenarios.host_copy import read_back


class Worker:
    """What the child holds: pools by the parent's key, imported buffers by id, streams."""

    def __init__(self):
        from cuda.core import Device

        self.dev = Device()
        self.dev.set_current()
        self.streams = [self.dev.default_stream, self.dev.create_stream(), self.dev.create_stream()]
        self.pools = {}      # parent's key -> imported resource (open or closed)
        self.buffers = {}    # id -> imported Buffer
        self.next_id = 1
        self.sim = sim_library()

    def _stream(self, index):
        return None if index is None else self.streams[index]

    def _add(self, buf):
        bid = self.next_id
        self.next_id += 1
        self.buffers[bid] = buf
        return bid, buf.handle, buf.size

    # ---------------------------------------------------------------- pools
    def op_adopt_pool(self, key, mr):
        """`mr` arrived through the pipe (multiprocessing re-imports the pool's fd).
        Returns (uuid, mapped, same object as the open one already held under key)."""
        old = self.pools.get(key)
        same = old is not None and old is mr
        self.pools[key] = mr
        return str(mr.uuid), mr.is_mapped, same

    def op_close_pool(self, key):
        self.pools[key].close()
        return self.pools[key].is_closed

    def op_registry(self, key, new_uuid):
        """from_registry finds the imported pool by its uuid; register under another uuid
        is get-or-create. Returns (found by own uuid, register(new) is mr, found by new uuid)."""
        mr = self.pools[key]
        cls = type(mr)
        found = cls.from_registry(mr.uuid) is mr
        registered = mr.register(new_uuid) is mr
        found_new = cls.from_registry(new_uuid) is mr
        return found, registered, found_new

    # ---------------------------------------------------------------- buffers
    def op_import(self, key, desc, stream):
        from cuda.core import Buffer

        return self._add(Buffer.from_ipc_descriptor(self.pools[key], desc, stream=self.streams[stream]))

    def op_unpickle(self, blob):
        """A plainly pickled Buffer: its resource resolves through this process's registry."""
        return self._add(pickle.loads(blob))

    def op_read(self, bid):
        return bytes(read_back(self.buffers[bid], self.streams[0]))

    def op_write(self, bid, pattern):
        buf = self.buffers[bid]
        buf.fill(pattern, stream=self.streams[0])
        self.streams[0].sync()
        return True

    def op_sync(self):
        self.streams[0].sync()
        return True

    def op_close(self, bid, stream):
        buf = self.buffers.pop(bid)
        buf.close(self._stream(stream))
        return True

    def op_threads_import(self, jobs):
        """Import [(key, desc, stream), ...] from one thread each, released together.
        Returns [(id, ptr, size) or ('error', type, message)] in job order."""
        from cuda.core import Buffer

        barrier = threading.Barrier(len(jobs))
        out = [None] * len(jobs)

        def run(i, key, desc, stream):
            barrier.wait()
            try:
                out[i] = Buffer.from_ipc_descriptor(self.pools[key], desc, stream=self.streams[stream])
            except Exception as exc:  # noqa: BLE001
                out[i] = exc

        threads = [threading.Thread(target=run, args=(i, *job)) for i, job in enumerate(jobs)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return [("error", type(b).__name__, str(b)) if isinstance(b, Exception) else self._add(b) for b in out]

    def op_threads_close(self, jobs):
        """Close [(id, stream), ...] from one thread each, released together."""
        bufs = [(self.buffers.pop(bid), self._stream(stream)) for bid, stream in jobs]
        barrier = threading.Barrier(len(bufs))
        errors = []

        def run(buf, stream):
            barrier.wait()
            try:
                buf.close(stream)
            except Exception as exc:  # noqa: BLE001
                errors.append(f"{type(exc).__name__}: {exc}")

        threads = [threading.Thread(target=run, args=job) for job in bufs]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return errors

    def op_close_twice_on_streams(self, key, desc, first_stream, second_stream):
        """Two Buffers of one cached import, closed on two streams: returns (same pointer,
        the stream handle each named, the stream the simulator freed the mapping on)."""
        from cuda.core import Buffer

        mr = self.pools[key]
        a = Buffer.from_ipc_descriptor(mr, desc, stream=self.streams[0])
        b = Buffer.from_ipc_descriptor(mr, desc, stream=self.streams[0])
        same = a.handle == b.handle
        frees = int(self.sim.cuSimCallCount(b"cuMemFreeAsync"))
        a.close(self._stream(first_stream))
        frees_after_first = int(self.sim.cuSimCallCount(b"cuMemFreeAsync")) - frees
        b.close(self._stream(second_stream))
        frees_after_second = int(self.sim.cuSimCallCount(b"cuMemFreeAsync")) - frees
        handles = [None if s is None else int(self.streams[s].handle) for s in (first_stream, second_stream)]
        return same, handles, frees_after_first, frees_after_second, int(self.sim.cuSimLastFreeStream())

    def op_stream_handles(self):
        return [int(s.handle) for s in self.streams]

    def op_use_after_pool_close(self, key, desc):
        """An imported Buffer whose resource is closed while it lives: it keeps the
        pool mapped (reads work, no stale access); the closed resource refuses new imports."""
        from cuda.core import Buffer

        mr = self.pools[key]
        buf = Buffer.from_ipc_descriptor(mr, desc, stream=self.streams[0])
        mr.close()
        data = bytes(read_back(buf, self.streams[0]))
        buf.fill(0x3C, stream=self.streams[0])
        after_fill = bytes(read_back(buf, self.streams[0]))
        try:
            Buffer.from_ipc_descriptor(mr, desc, stream=self.streams[0])
            refused = None
        except RuntimeError as exc:
            refused = str(exc)
        buf.close()
        return data, after_fill, refused

    # ---------------------------------------------------------------- state
    def op_status(self):
        """What the invariants need: stale accesses, fds, live buffers, IPC cache size."""
        count, last = stale_accesses(self.sim)
        try:
            from cuda.core._resource_handles import _ipc_cache_size

            cache = _ipc_cache_size()
        except ImportError:
            cache = None
        return {"stale": count, "last_stale": last, "fds": open_fd_targets(), "live": sorted(self.buffers),
                "ipc_cache": cache, "pid": os.getpid()}

    def op_reset(self):
        """Close every buffer, then every pool (the end of an example)."""
        for bid in sorted(self.buffers):
            self.buffers.pop(bid).close()
        for mr in self.pools.values():
            mr.close()
        self.pools.clear()
        self.streams[0].sync()
        return self.op_status()


def serve(conn, env=None):
    """Answer commands from `conn` until it closes or says ("exit",). `env` is set
    before cuda.core is imported."""
    import faulthandler

    faulthandler.enable()
    os.environ.update(env or {})
    try:
        worker = Worker()
    except BaseException:  # noqa: BLE001
        conn.send(("error", "startup", "", traceback.format_exc()))
        return
    conn.send(("ok", os.getpid()))
    while True:
        try:
            msg = conn.recv()
        except EOFError:
            return
        if msg[0] == "exit":
            conn.send(("ok", None))
            return
        # A command that hangs shows every thread's stack on stderr (the parent gives up at its timeout).
        faulthandler.dump_traceback_later(30, exit=False)
        try:
            value = getattr(worker, "op_" + msg[0])(*msg[1:])
            conn.send(("ok", value))
        except BaseException as exc:  # noqa: BLE001
            conn.send(("error", type(exc).__name__, str(exc), traceback.format_exc()))
        finally:
            faulthandler.cancel_dump_traceback_later()


class WorkerError(Exception):
    """An operation raised in the worker: .type_name and .message say what."""

    def __init__(self, type_name, message, tb):
        super().__init__(f"{type_name}: {message}\n--- in the worker:\n{tb}")
        self.type_name = type_name
        self.message = message


class IpcWorker:
    """The parent's side: start (spawn), call(op, *args), stop. Restarts lazily
    when a previous example killed the child."""

    def __init__(self, timeout=60, env=None):
        self.timeout = timeout
        self.env = env
        self.proc = None
        self.conn = None

    def start(self):
        import multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.conn, child_end = ctx.Pipe(duplex=True)
        self.proc = ctx.Process(target=serve, args=(child_end, self.env), daemon=True)
        self.proc.start()
        child_end.close()
        self.pid = self._reply("startup")
        return self

    def alive(self):
        return self.proc is not None and self.proc.is_alive()

    def ensure(self):
        if not self.alive():
            self.stop()
            self.start()
        return self

    def _reply(self, op):
        if not self.conn.poll(self.timeout):
            code = self.proc.exitcode
            self.stop()
            raise AssertionError(f"the IPC worker gave no answer to {op!r} within {self.timeout} s "
                                 f"(exit code {code})")
        try:
            msg = self.conn.recv()
        except EOFError:
            self.proc.join(5)
            raise AssertionError(f"the IPC worker died during {op!r} (exit code {self.proc.exitcode})") from None
        if msg[0] == "error":
            raise WorkerError(*msg[1:])
        return msg[1]

    def call(self, op, *args):
        self.conn.send((op, *args))
        return self._reply(op)

    def stop(self):
        if self.proc is None:
            return
        try:
            if self.proc.is_alive():
                self.conn.send(("exit",))
                self.conn.poll(10) and self.conn.recv()
        except (OSError, EOFError, BrokenPipeError):
            pass
        self.proc.join(10)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
        self.proc = self.conn = None

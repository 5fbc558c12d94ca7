#!/usr/bin/env python3
"""Instructions per operation, counted by callgrind: ours and NVIDIA's cuda-core 1.2.2 on the simulated driver.

    python3 bench/icount.py --sim build/ci-sim/libcuda_sim.so [--ours-python PY] [--upstream-python PY]
                            [--check bench/icount_baseline.txt] [--write-baseline FILE] [--top K] [--out DIR]

In the manner of iai-callgrind and CodSpeed's CPU simulation: a count of
executed instructions (callgrind's Ir) does not depend on the machine's load or
clock, so it can gate CI on a shared 2-core machine where times cannot.

* One process per implementation is counted: the IPC consumer. A host process
  (not instrumented, same interpreter) makes the device current, an IPC pool
  and its descriptors, and spawns the consumer (multiprocessing "spawn", pool
  and descriptors through a Queue, as users do) under
  `valgrind --tool=callgrind --dump-before=os_sched_yield`. The consumer runs
  every row in turn: the row's setup, a warm-up, then the operation N times and
  2N times, calling `os.sched_yield()` between phases; each call makes
  callgrind write the counts of the phase that just ended (one file per phase).
* Per row and per object: (Ir(2N phase) - Ir(N phase)) / N / units, less the
  same count of the `empty` row (the harness alone: the loop and the call of a
  lambda that does nothing, ~520 Ir on CPython 3.11), which is printed as a row
  of its own. The difference removes everything that does not scale with N
  (the loop's entry, the marker call); start-up and setup lie in other phases. Objects: `pkg`
  (the cuda.core extensions), `bindings` (cuda.bindings: upstream's driver
  layer), `python` (libpython and its lib-dynload modules), `sim` (the
  simulated driver), `libc` (libc, libm, libstdc++, libgcc, ld.so), `other`.
  `core` = pkg + bindings + python: the count that does not depend on the
  driver, which the ratio ours/upstream compares.
* Deterministic inputs: PYTHONHASHSEED=0, the garbage collector off in the
  counted phases.
* --check FILE: the regression gate. FILE has one line per row, `key count`,
  ours' `core` Ir per operation (the extensions and libpython: libc's malloc
  share moves with the allocator's state, the simulator is not the product). A row that
  grows by more than the tolerance (the file's `# tolerance` line) fails the
  run (exit status 1); a row missing from the file fails too. Update the file
  in the same commit as the change that moves a row (--write-baseline), and
  say why in the commit message.
* --top K: per row, the K functions with the largest count per operation
  (self cost), ours and upstream: where the instructions go.
* The raw callgrind files go under --out (default build/icount); nothing is
  written into the source tree except by --write-baseline.
"""
import argparse
import gc
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
DEFAULT_OUT = REPO / "build" / "icount"
MARKER = "os_sched_yield"          # the C function of os.sched_yield() in libpython: nothing else calls it here
OBJECTS = ("pkg", "bindings", "python", "sim", "libc", "other")
DEFAULT_TOLERANCE = 0.03
IPC_SIZE = 1 << 20
BATCH = 1024                       # descriptors exported: the 1,024-distinct and batch rows use all of them
MISS_N = 256                       # the miss row's N: its 2N phase imports 2N distinct descriptors


# ---------------------------------------------------------------- rows (run inside the counted consumer)

# (key, label, N, warm-up, units per operation). A row's operation runs N and 2N times; units divide the
# per-operation count (the round rows count one round of 1,024 descriptors and report per descriptor).
ROWS = [
    ("alloc:64", "allocate(64)+close", 200, 50, 1),
    ("alloc:1048576", "allocate(1 MiB)+close", 200, 50, 1),
    ("alloc:67108864", "allocate(64 MiB)+close", 200, 50, 1),
    ("miss", "ipc import+close, miss (1 MiB)", MISS_N, MISS_N, 1),
    ("hit", "ipc import+close, hit", 200, 50, 1),
    ("distinct:1024", "1,024 distinct, one thread, per import", 2, 1, BATCH),
    ("batch:loop", "batch of 1,024, loop, per import", 2, 1, BATCH),
    ("batch:api", "batch of 1,024, one call, per import", 2, 1, BATCH),
    ("stream", "create_stream()+close", 200, 50, 1),
    ("event", "create_event()+close", 200, 50, 1),
    ("fill", "Buffer.fill(64 B)", 200, 50, 1),
    ("copy_to", "Buffer.copy_to(64 B)", 200, 50, 1),
    ("device", "Device()", 200, 50, 1),
    ("set_current", "Device.set_current()", 200, 50, 1),
    ("empty", "the harness alone (empty operation)", 200, 50, 1),
]
ROW_LABEL = {k: label for k, label, *_ in ROWS}


def _row_operations(mr_ipc, descriptors, dev, stream):
    """{key: (operation(i), teardown or None)} of every row this cuda.core has; set up here, outside the phases."""
    from cuda.core import Buffer, Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    ops = {}
    pool = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=1 << 30))
    allocate = pool.allocate
    for size in (64, 1 << 20, 64 << 20):
        ops[f"alloc:{size}"] = (lambda i, size=size: allocate(size, stream=stream).close(), None)
    imp = Buffer.from_ipc_descriptor
    # each phase imports descriptors nobody in this process holds: operation i takes the i-th (the 2N phase
    # has 2N of them), and the stream is synchronised after every phase, so each free has completed before
    # the next phase imports the same descriptor again
    miss_pool = descriptors[:2 * MISS_N]
    ops["miss"] = (lambda i: imp(mr_ipc, miss_pool[i], stream=stream).close(), None)
    held_descriptor = descriptors[-1]
    held = []
    ops["hit"] = (lambda i: imp(mr_ipc, held_descriptor, stream=stream).close(), held)

    def distinct(i):
        for d in descriptors:
            imp(mr_ipc, d, stream=stream).close()
        stream.sync()
    ops["distinct:1024"] = (distinct, None)

    def batch_loop(i):
        for b in [imp(mr_ipc, d, stream=stream) for d in descriptors]:
            b.close()
        stream.sync()
    ops["batch:loop"] = (batch_loop, None)
    many = getattr(Buffer, "from_ipc_descriptors", None)
    if many is not None:
        def batch_api(i):
            for b in many(mr_ipc, descriptors, stream=stream):
                b.close()
            stream.sync()
        ops["batch:api"] = (batch_api, None)
    create_stream, create_event = dev.create_stream, dev.create_event
    ops["stream"] = (lambda i: create_stream().close(), None)
    ops["event"] = (lambda i: create_event().close(), None)
    small, target = allocate(64, stream=stream), allocate(64, stream=stream)
    ops["fill"] = (lambda i: small.fill(0, stream=stream), None)
    ops["copy_to"] = (lambda i: small.copy_to(target, stream=stream), None)
    ops["device"] = (lambda i: Device(), None)
    set_current = dev.set_current
    ops["set_current"] = (lambda i: set_current(), None)
    ops["empty"] = (lambda i: None, None)
    return ops, (held, imp, held_descriptor, pool, small, target)


def _loop(op, n):
    for i in range(n):
        op(i)


def _consumer(q_in, q_out, rows):
    """The counted process: receives the IPC pool and descriptors, runs each row's phases, sends the phase list."""
    from cuda.core import Device

    mark = os.sched_yield
    phases = []

    def phase(label):
        phases.append(label)
        mark()                             # callgrind dumps the phase that ends here

    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    mr_ipc = q_in.get()
    descriptors = q_in.get()
    ops, keep = _row_operations(mr_ipc, descriptors, dev, stream)
    held, imp, held_descriptor = keep[0], keep[1], keep[2]
    held.append(imp(mr_ipc, held_descriptor, stream=stream))   # the hit row imports what this Buffer holds
    gc.collect()
    gc.disable()
    phase("setup")
    errors = {}
    for key, _label, n, warm, _units in ROWS:
        if key not in rows or key not in ops:
            continue
        op = ops[key][0]
        try:
            # every phase ends with one stream.sync(): the difference of two phases removes it
            _loop(op, warm)
            stream.sync()
            phase(f"warm:{key}")
            _loop(op, n)
            stream.sync()
            phase(f"n:{key}")
            _loop(op, 2 * n)
            stream.sync()
            phase(f"2n:{key}")
        except Exception as exc:  # noqa: BLE001
            errors[key] = f"{type(exc).__name__}: {exc}"
            phase(f"error:{key}")
        stream.sync()
    gc.enable()
    held[0].close()
    stream.sync()
    q_out.put({"phases": phases, "errors": errors, "pid": os.getpid()})


def host(args):
    """Not counted: the device, the IPC pool, the descriptors; spawns the counted consumer under callgrind."""
    import multiprocessing as mp

    import cuda.core
    from cuda.core import Device, DeviceMemoryResource, DeviceMemoryResourceOptions

    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    wrapper = out_dir / "callgrind-python"
    valgrind = [shutil.which("valgrind") or "valgrind", "--tool=callgrind", "-q", f"--dump-before={MARKER}",
                "--compress-strings=no", "--compress-pos=no", "--dump-instr=no",
                f"--callgrind-out-file={out_dir}/callgrind.out"]
    wrapper.write_text("#!/bin/sh\nexec " + " ".join(valgrind) + f" {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    for old in out_dir.glob("callgrind.out*"):
        old.unlink()
    dev = Device(0)
    dev.set_current()
    stream = dev.create_stream()
    granule = -(-IPC_SIZE // (2 << 20)) * (2 << 20)
    mr = DeviceMemoryResource(dev, DeviceMemoryResourceOptions(max_size=BATCH * granule + (64 << 20),
                                                               ipc_enabled=True))
    _ = mr.allocation_handle   # export the pool before any pointer (the real driver requires it)
    buffers = [mr.allocate(IPC_SIZE, stream=stream) for _ in range(BATCH)]
    stream.sync()
    descriptors = [b.ipc_descriptor for b in buffers]
    ctx = mp.get_context("spawn")
    ctx.set_executable(str(wrapper))
    q_in, q_out = ctx.Queue(), ctx.Queue()
    rows = args.rows.split(",") if args.rows else [k for k, *_ in ROWS]
    proc = ctx.Process(target=_consumer, args=(q_in, q_out, rows), daemon=True)
    started = time.monotonic()
    proc.start()
    q_in.put(mr)
    q_in.put(descriptors)
    result = None
    while result is None and time.monotonic() - started < args.timeout:
        try:
            result = q_out.get(timeout=1.0)
        except Exception:  # noqa: BLE001  (queue.Empty)
            if not proc.is_alive():
                break
    proc.join(60)
    if proc.is_alive():
        proc.kill()
        proc.join(5)
    for b in buffers:
        b.close()
    stream.sync()
    mr.close()
    if result is None:
        return {"error": f"the counted consumer gave no result (exit code {proc.exitcode}, "
                         f"{time.monotonic() - started:.0f} s)"}
    result["module"] = os.path.dirname(cuda.core.__file__)
    result["version"] = getattr(cuda.core, "__version__", "?")
    result["consumer_s"] = round(time.monotonic() - started, 1)
    result["files"] = sorted(str(p) for p in out_dir.glob("callgrind.out*"))
    return result


# ---------------------------------------------------------------- reading callgrind's files

def classify(obj):
    """The object group of a callgrind `ob=` path."""
    name = os.path.basename(obj)
    if "/cuda/core/" in obj:
        return "pkg"
    if "/cuda/bindings/" in obj:
        return "bindings"
    if "libcuda" in name:
        return "sim"
    if name.startswith(("libpython", "python")) or "/lib-dynload/" in obj:
        return "python"
    if name.startswith(("libc.so", "libc-", "libm.so", "libm-", "libstdc++", "libgcc_s", "ld-linux", "libpthread",
                        "libdl")):
        return "libc"
    return "other"


def read_part(path, with_functions):
    """(part number, {object group: self Ir}, {(object, function): self Ir} or None) of one callgrind file
    (written with --compress-strings=no --compress-pos=no)."""
    part, by_group, by_fn = 0, dict.fromkeys(OBJECTS, 0), ({} if with_functions else None)
    ob, fn, group = "", "", "other"
    skip_next = False
    with open(path) as f:
        for line in f:
            c = line[0]
            if c.isdigit() or c in "+-*":
                if skip_next:                  # the inclusive cost of a call, already counted in the callee
                    skip_next = False
                    continue
                fields = line.split()
                if len(fields) < 2:
                    continue
                ir = int(fields[1])
                by_group[group] += ir
                if by_fn is not None:
                    key = (ob, fn)
                    by_fn[key] = by_fn.get(key, 0) + ir
            elif line.startswith("ob="):
                ob = line[3:].strip()
                group = classify(ob)
            elif line.startswith("fn="):
                fn = line[3:].strip()
            elif line.startswith("calls="):
                skip_next = True
            elif line.startswith("part:"):
                part = int(line.split()[1])
    return part, by_group, by_fn


def per_op(res, with_functions):
    """{row key: {"groups": {group: Ir per op}, "functions": [...]}} from a host result."""
    parts = {}
    for path in res["files"]:
        part, groups, fns = read_part(path, with_functions)
        parts[part] = (groups, fns)
    phases = res["phases"]
    index = {label: i + 1 for i, label in enumerate(phases)}   # phase k is dump part k
    out = {}
    harness = None
    for key, _label, n, _warm, units in sorted(ROWS, key=lambda r: r[0] != "empty"):   # the empty row first
        a, b = index.get(f"n:{key}"), index.get(f"2n:{key}")
        if a is None or b is None or a not in parts or b not in parts:
            continue
        (ga, fa), (gb, fb) = parts[a], parts[b]
        raw = {g: (gb[g] - ga[g]) / n / units for g in OBJECTS}
        if key == "empty":
            harness = raw
        # net of the harness (the loop and the call of the row's lambda), itself per unit
        groups = {g: raw[g] - (harness[g] / units if harness and key != "empty" else 0.0) for g in OBJECTS}
        groups["total"] = sum(groups[g] for g in OBJECTS)
        groups["core"] = groups["pkg"] + groups["bindings"] + groups["python"]
        row = {"groups": groups, "raw": raw}
        if with_functions:
            diff = {k: (fb.get(k, 0) - fa.get(k, 0)) / n / units for k in set(fa) | set(fb)}
            row["functions"] = sorted(([round(v, 1), classify(k[0]), k[1]] for k, v in diff.items() if v),
                                      key=lambda x: -abs(x[0]))[:60]
        out[key] = row
    return out


# ---------------------------------------------------------------- the command

def sim_env(sim_lib, out):
    """CUDA_CORE_DRIVER_LIBRARY for ours, a libcuda.so.1 link to the simulator for cuda-bindings (upstream)."""
    folder = Path(out) / "libcuda-sim"
    folder.mkdir(parents=True, exist_ok=True)
    link = folder / "libcuda.so.1"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(Path(sim_lib).resolve())
    ld = os.environ.get("LD_LIBRARY_PATH")
    return {"CUDA_CORE_DRIVER_LIBRARY": str(Path(sim_lib).resolve()),
            "LD_LIBRARY_PATH": str(folder) + (os.pathsep + ld if ld else "")}


def start_count(python, name, upstream, sim_lib, out, rows, timeout):
    """Starts the host process of arm `name` (returns (Popen, its out dir)); `finish_count` reads it."""
    work = Path(out) / name
    env = dict(os.environ, PYTHONHASHSEED="0", PYTHONUNBUFFERED="1", **sim_env(sim_lib, out))
    if upstream:   # NVIDIA's cuda.core: nothing that points at ours
        env.pop("PYTHONPATH", None)
        env.pop("CUDA_CORE_DRIVER_LIBRARY", None)
    cmd = [python, str(Path(__file__).resolve()), "--host", "--out", str(work), "--timeout", str(timeout)]
    if rows:
        cmd += ["--rows", rows]
    log = open(Path(out) / f"{name}.log", "w")
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env, cwd=str(REPO)), work


def finish_count(proc, with_functions, timeout):
    try:
        stdout, _ = proc.communicate(timeout=timeout + 120)
    except subprocess.TimeoutExpired:
        proc.kill()
        return {"error": "host timed out"}
    lines = [ln for ln in stdout.splitlines() if ln.strip()]
    try:
        res = json.loads(lines[-1])
    except (IndexError, json.JSONDecodeError):
        return {"error": f"host exited {proc.returncode} without a result"}
    if "error" in res:
        return res
    res["rows"] = per_op(res, with_functions)
    return res


def measure(arms, sim_lib, out, rows=None, with_functions=False, timeout=900):
    """{arm name: host result with "rows"} for arms = [(name, python, kind)], counted at once (one per core)."""
    Path(out).mkdir(parents=True, exist_ok=True)
    started = {name: start_count(py, name, kind == "upstream", sim_lib, out, rows, timeout)
               for name, py, kind in arms}
    return {name: finish_count(proc, with_functions, timeout) for name, (proc, _w) in started.items()}


def fmt(x):
    return "-" if x is None else f"{x:,.0f}"


def table(rows, header):
    widths = [max(len(str(r[i])) for r in rows + [header]) for i in range(len(header))]
    line = lambda cells: "| " + " | ".join(str(c).ljust(w) if i == 0 else str(c).rjust(w)  # noqa: E731
                                           for i, (c, w) in enumerate(zip(cells, widths))) + " |"
    sep = "|" + "|".join(("-" * (w + 2)) if i == 0 else ("-" * (w + 1) + ":") for i, w in enumerate(widths)) + "|"
    return [line(header), sep] + [line(r) for r in rows]


def report(ours, up):
    """The table: ours and upstream per row and per object, and the core ratio."""
    head = ["row (Ir per operation)", "ours total", "pkg", "python", "libc", "sim", "up total", "pkg+bind",
            "python", "libc", "sim", "total o/u", "core o/u"]
    lines = []
    for key, label, *_ in ROWS:
        o = ours.get(key, {}).get("groups")
        u = up.get(key, {}).get("groups") if up else None
        if o is None and u is None:
            continue
        if key == "batch:api" and u is None and up and "batch:loop" in up:
            # upstream has no one-call batch: its loop is what a user of upstream writes instead
            u = up["batch:loop"]["groups"]
            label += " (up: its loop)"
        g = lambda d, k: d[k] if d else None  # noqa: E731
        ratio = lambda a, b: f"{a / b:.2f}" if a is not None and b else "-"  # noqa: E731
        lines.append([label, fmt(g(o, "total")), fmt(g(o, "pkg")), fmt(g(o, "python")), fmt(g(o, "libc")),
                      fmt(g(o, "sim")), fmt(g(u, "total")),
                      fmt(u["pkg"] + u["bindings"] if u else None), fmt(g(u, "python")), fmt(g(u, "libc")),
                      fmt(g(u, "sim")), ratio(g(o, "total"), g(u, "total")), ratio(g(o, "core"), g(u, "core"))])
    return table(lines, head)


def gated_count(groups):
    """What the gate compares: ours' instructions in the package's extensions and libpython (`core`). libc is
    left out with the simulator: malloc's share moves with the allocator's state (the batch rows' libc count
    moved by 12% between two runs of one build, their core by 0.1%)."""
    return groups["core"]


def read_baseline(path):
    counts, tolerance, meta = {}, DEFAULT_TOLERANCE, {}
    for line in Path(path).read_text().splitlines():
        m = re.match(r"#\s*tolerance\s+([\d.]+)", line)
        if m:
            tolerance = float(m.group(1))
            continue
        m = re.match(r"#\s*(python|machine)\s+(.*)$", line)
        if m:
            meta[m.group(1)] = m.group(2).strip()
            continue
        if line.strip() and not line.startswith("#"):
            key, value = line.split()
            counts[key] = float(value)
    return counts, tolerance, meta


def check(ours, path):
    """(ok, lines): every row of ours against the baseline file."""
    if not Path(path).is_file():
        return False, [f"gate: FAIL: no baseline file {path} (write one with --write-baseline)"]
    counts, tolerance, meta = read_baseline(path)
    lines = [f"gate: ours' core Ir per operation (extensions + libpython) vs {path} (tolerance {tolerance:.1%})"]
    ok = True
    if meta.get("python") and meta["python"] != platform.python_version():
        lines.append(f"NOTE: the baseline was counted with Python {meta['python']}, this is "
                     f"{platform.python_version()}: counts of another interpreter differ")
    for key, label, *_ in ROWS:
        row = ours.get(key)
        if row is None or key == "empty":
            continue
        now = gated_count(row["groups"])
        base = counts.get(key)
        if base is None:
            ok = False
            lines.append(f"  FAIL {key}: {now:,.0f}, not in the baseline (add it: --write-baseline)")
            continue
        change = now / base - 1 if base else 0.0
        verdict = "FAIL" if change > tolerance else ("better" if change < -tolerance else "ok")
        ok &= verdict != "FAIL"
        lines.append(f"  {verdict:6} {key:16} {now:>10,.0f} vs {base:>10,.0f} ({change:+.2%})")
    for key in counts:
        if key not in ours:
            ok = False
            lines.append(f"  FAIL {key}: in the baseline but not counted (see the NOTE lines)")
    lines.append("gate: " + ("PASS" if ok else "FAIL: a row grew beyond the tolerance; if the growth is "
                             "intended, update the baseline (--write-baseline) in the same commit and say why"))
    return ok, lines


def write_baseline(ours, path, tolerance):
    text = ["# bench/icount.py --check: ours' callgrind Ir per operation in the package's extensions + libpython (core).",
            "# A row above count x (1 + tolerance) fails CI. Update with --write-baseline in the commit that moves",
            "# a row, and say why in its message.",
            f"# tolerance {tolerance}", f"# python {platform.python_version()}",
            f"# machine {platform.machine()} {platform.system()}"]
    for key, *_ in ROWS:
        if key in ours and key != "empty":   # the harness alone measures the interpreter, not this package
            text.append(f"{key} {gated_count(ours[key]['groups']):.0f}")
    Path(path).write_text("\n".join(text) + "\n")


def top_functions(res, key, k):
    row = res.get("rows", {}).get(key)
    if not row or "functions" not in row:
        return []
    return [f"    {v:>9,.1f}  {grp:8} {fn}" for v, grp, fn in row["functions"][:k]]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--host", action="store_true", help=argparse.SUPPRESS)   # internal: the uncounted host
    ap.add_argument("--sim", help="the simulated driver (libcuda_sim.so)")
    ap.add_argument("--ours-python", default=sys.executable, help="interpreter importing this package as cuda.core")
    ap.add_argument("--upstream-python", default=None, help="interpreter importing NVIDIA's cuda-core 1.2.2")
    ap.add_argument("--rows", default=None, help="comma-separated row keys (default: all)")
    ap.add_argument("--out", default=str(DEFAULT_OUT), help="where callgrind's files and the JSON go")
    ap.add_argument("--check", default=None, help="the baseline file: exit 1 when a row of ours grew beyond it")
    ap.add_argument("--write-baseline", default=None, help="write ours' counts as the new baseline file")
    ap.add_argument("--tolerance", type=float, default=DEFAULT_TOLERANCE, help="with --write-baseline")
    ap.add_argument("--top", type=int, default=0, help="per row, the K costliest functions of each side")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds for one counted process")
    args = ap.parse_args(argv)
    if args.host:
        try:
            res = host(args)
        except Exception as exc:  # noqa: BLE001
            res = {"error": f"{type(exc).__name__}: {exc}"}
        print(json.dumps(res), flush=True)
        return 0
    if not args.sim or not Path(args.sim).is_file():
        ap.error("--sim must name the simulated driver (build it: cmake --build build/ci-sim --target cuda_sim)")
    if not shutil.which("valgrind"):
        print("icount: valgrind is not installed", file=sys.stderr)
        return 2
    started = time.monotonic()
    arms = [("ours", args.ours_python, "ours")]
    if args.upstream_python:
        arms.append(("upstream", args.upstream_python, "upstream"))
    results = measure(arms, args.sim, args.out, args.rows, with_functions=args.top > 0, timeout=args.timeout)
    ours, up = results["ours"], results.get("upstream")
    Path(args.out, "icount.json").write_text(json.dumps(results, indent=1) + "\n")
    if "error" in ours:
        print(f"icount: ours could not be counted: {ours['error']} (see {args.out}/ours.log)", file=sys.stderr)
        return 2
    lines = [f"instruction counts per operation (callgrind Ir, (Ir(2N) - Ir(N)) / N, one process each, "
             f"simulated driver); ours: {ours.get('module')}"]
    if up is not None:
        lines.append(f"upstream: {up.get('module', '-')} {up.get('version', '')}" if "error" not in up
                     else f"upstream could not be counted: {up['error']} (see {args.out}/upstream.log)")
    up_rows = up.get("rows", {}) if up and "error" not in up else {}
    for side, res in (("ours", ours), ("upstream", up or {})):
        for key, err in res.get("errors", {}).items():
            lines.append(f"NOTE: {side} {key}: {err}")
    lines += report(ours["rows"], up_rows)
    lines.append("core = the package's extensions (+ cuda.bindings for upstream) + libpython; o/u = ours / upstream")
    if args.top:
        for key, label, *_ in ROWS:
            lines.append(f"\n{label}: costliest functions per operation (self Ir)")
            for side, res in (("ours", ours), ("upstream", up or {})):
                lines.append(f"  {side}:")
                lines += top_functions(res, key, args.top)
    rc = 0
    if args.check:
        ok, gate = check(ours["rows"], args.check)
        lines += [""] + gate
        rc = 0 if ok else 1
    if args.write_baseline:
        write_baseline(ours["rows"], args.write_baseline, args.tolerance)
        lines.append(f"wrote {args.write_baseline}")
    lines.append(f"total {time.monotonic() - started:.0f} s")
    print("\n".join(lines))
    return rc


if __name__ == "__main__":
    sys.exit(main())

"""Child of tests/test_no_crash.py: call every public callable of cuda.core,
found by introspection, with synthesized arguments, and log each call.

Nothing here names a class or a method of cuda.core. The API is discovered
from ``cuda.core.__all__`` and the public names of every ``cuda.core``
submodule (so classes added to new modules are picked up), and:

1. setup: every class-level callable (constructor, staticmethod, classmethod)
   is called with each synthesized value; instances of discovered classes it
   returns join a pool. Then, level by level, every zero-argument method and
   property of a fresh copy of each pooled instance, and every method with
   arguments of the pooled instance itself (arguments filled from the pool,
   adapted to the TypeError that names the expected class), add what they
   return. A fresh copy that reports ``is_closed`` afterwards joins the pool
   as a closed instance.
2. probes: on a fresh copy of every pooled instance, every public method,
   property and protocol (repr, hash, pickle, copy, ==, dunders the class
   defines) is called with synthesized arguments: None, 0, -1, 1, 64, 2**64,
   a foreign handle, a string, a foreign object, and pooled instances (live,
   zero-handle, foreign-handle, closed), one argument varied at a time.

Every call is written to the progress file before it runs ("S idx label")
and after it returns or raises ("E idx outcome"), unbuffered, so the parent
can name the call a child died in. Objects a call created are dropped inside
its window, so a crash in their destructor is charged to that call.

Usage: no_crash_calls.py PROGRESS [--from N] [--only N] [--skip FILE] [--list]
"""
import argparse
import copy
import gc
import importlib
import inspect
import os
import pickle
import pkgutil
import random
import re
import sys
import warnings

RNG = random.Random(20261203)
FOREIGN = RNG.getrandbits(44) << 4  # an address-like int no process has handed out
BASE_VALUES = [("None", None), ("0", 0), ("foreign", FOREIGN), ("1", 1), ("-1", -1), ("64", 64),
               ("2**64", 2 ** 64), ("'x'", "x"), ("object()", object())]
# On a real driver (NO_CRASH_REAL_DRIVER=1), `*.from_handle` gets no made-up
# handle: a raw handle or pointer is the caller's promise, trusted as upstream
# trusts it, and the driver dereferences it (a CUstream is a pointer into the
# driver's own memory). There it is given only 0 and the handles that a live
# pooled object of its class owns (made_up_handle_refusal); every other input
# of every other callable stays. The simulator and "no driver" runs pass them all.
REAL_DRIVER = os.environ.get("NO_CRASH_REAL_DRIVER") == "1"
NO_GUESS = object()
MAX_PER_CLASS = 16         # pooled instances kept per class
MAX_PER_FACTORY = 5       # instances kept per class-level callable (first successes)
MAX_ALTERNATIVES = 3       # other pooled instances tried per filled parameter
MAX_LEVELS = 4             # setup levels beyond the class-level factories
MAX_VARIANTS = 60          # argument tuples tried per probed callable and receiver
SKIP_DUNDERS = {
    "__init__", "__new__", "__del__", "__dealloc__", "__init_subclass__", "__subclasshook__",
    "__class_getitem__", "__getattribute__", "__getattr__", "__setattr__", "__delattr__", "__dir__",
    "__sizeof__", "__format__", "__reduce_ex__", "__getstate__", "__setstate__", "__setstate_cython__",
    "__reduce_cython__", "__class__", "__doc__", "__module__", "__dict__", "__weakref__", "__slots__",
    "__annotations__", "__pyx_vtable__", "__dataclass_fields__", "__dataclass_params__",
    "__match_args__", "__hash__", "__eq__", "__ne__", "__repr__", "__str__", "__qualname__",
    "__firstlineno__", "__static_attributes__", "__slotnames__", "__orig_bases__", "__parameters__", "__abstractmethods__",
}


# ------------------------------------------------------------------ discovery


def reports_closed(obj):
    """True when obj.is_closed says so; any error reading it (e.g. cuda_utils.driver
    without cuda-bindings raises ImportError on attribute access) counts as not closed."""
    try:
        return getattr(obj, "is_closed", False) is True
    except Exception:
        return False

def discover():
    """(classes, instances, functions, modules, unimportable modules): the
    public API of cuda.core, by introspection."""
    import cuda.core as root

    modules = {"cuda.core": root}
    unimportable = []
    for info in pkgutil.walk_packages(root.__path__, "cuda.core.", onerror=unimportable.append):
        try:
            modules[info.name] = importlib.import_module(info.name)
        except Exception as exc:  # noqa: BLE001  (reported in the summary, not API to call)
            unimportable.append(f"{info.name} ({type(exc).__name__}: {exc})")
    objects = {}
    for name in getattr(root, "__all__", []):
        objects[f"cuda.core.{name}"] = getattr(root, name)
    for mname, module in sorted(modules.items()):
        names = getattr(module, "__all__", None) or [n for n in vars(module) if not n.startswith("_")]
        for name in names:
            if name.startswith("_") or not hasattr(module, name):
                continue
            objects.setdefault(f"{mname}.{name}", getattr(module, name))

    def ours(obj):
        return (getattr(obj, "__module__", None) or "").startswith("cuda.core")

    classes, instances, functions = {}, {}, {}
    for qual, obj in sorted(objects.items()):
        if inspect.ismodule(obj):
            continue
        if inspect.isclass(obj):
            if ours(obj):
                classes.setdefault(obj, qual.rsplit(".", 1)[1])
        elif callable(obj) and (inspect.isfunction(obj) or inspect.isbuiltin(obj)
                                or type(obj).__name__ == "cython_function_or_method"):
            if ours(obj):
                functions.setdefault(qual.rsplit(".", 1)[1], obj)
        elif ours(type(obj)):
            instances.setdefault(qual.rsplit(".", 1)[1], obj)
            classes.setdefault(type(obj), type(obj).__name__)
    for cls in list(classes):  # cuda.core base classes of discovered classes
        for base in cls.__mro__[1:]:
            if ours(base):
                classes.setdefault(base, base.__name__)
    order = sorted(classes, key=lambda c: (classes[c], c.__module__))
    return {c: classes[c] for c in order}, instances, functions, sorted(modules), unimportable


_MEMBERS = {}


def members(cls):
    """{name: kind} for the public members of cls; kind in attr/method/static.
    Computed once per class: calls may add attributes to a class (pickle adds
    __slotnames__), and the numbering of calls must not change with them."""
    if cls not in _MEMBERS:
        _MEMBERS[cls] = _members(cls)
    return _MEMBERS[cls]


def _members(cls):
    out = {}
    for name in sorted(set(dir(cls))):
        if name.startswith("_") and (not (name.startswith("__") and name.endswith("__")) or name in SKIP_DUNDERS):
            continue
        if name.startswith("__") and not any(name in vars(k) for k in cls.__mro__[:-1]):
            continue  # inherited from object
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is not None and owner.__module__ == "builtins":
            # a builtin base's method (str's for the StrEnum types of cuda.core.typing):
            # Python's, not this package's; 'device' * <a 2**47 int> would be a
            # 140 TB allocation, which a host that overcommits memory (the H200
            # machine) starts to fill instead of raising MemoryError
            continue
        try:
            raw = inspect.getattr_static(cls, name)
        except AttributeError:
            continue
        if isinstance(raw, (staticmethod, classmethod)) or type(raw).__name__ in ("classmethod_descriptor",):
            out[name] = "static"
        elif inspect.isclass(raw):
            continue
        elif callable(raw) and not isinstance(raw, (property,)) and \
                type(raw).__name__ not in ("getset_descriptor", "member_descriptor"):
            out[name] = "method"
        else:
            out[name] = "attr"
    return out


def params_of(fn):
    """([(name, kind, has_default, default)] without self/cls, variadic?) or None when unknown."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None
    if inspect.isclass(fn) and (sig is None or any(p.kind == p.VAR_POSITIONAL for p in sig.parameters.values())):
        sig = docstring_signature(fn) or sig
    if sig is None:
        return None, True
    out, variadic = [], False
    for p in sig.parameters.values():
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD):
            variadic = True
            continue
        if p.name in ("self", "cls") and not out:
            continue
        out.append((p.name, p.kind, p.default is not p.empty, p.default))
    return out, variadic


def docstring_signature(cls):
    """The signature a C extension class states on its docstring's first line
    ("Name(a, b=None)", as Cython's embedsignature writes it), or None."""
    first = (cls.__doc__ or "").strip().split("\n", 1)[0]
    m = re.fullmatch(rf"{re.escape(cls.__name__)}(\(.*\))(?:\s*->.*)?", first.strip())
    if not m:
        return None
    ns = {}
    try:
        exec(f"def _f{m.group(1)}: pass", {}, ns)  # noqa: S102  (our own package's docstring)
        return inspect.signature(ns["_f"])
    except Exception:  # noqa: BLE001
        return None


class MadeUpHandle(Exception):
    """A call not made on the real driver: it would pass a handle no live object owns."""


LIVE_POOL = None  # the Pool of main(): whose handles count as owned (made_up_handle_refusal)


def as_int(value):
    """The integer a handle parameter would read from value, or None (not int-like)."""
    if isinstance(value, bool) or not hasattr(type(value), "__index__") and not hasattr(type(value), "__int__"):
        return None
    try:
        return int(value)
    except Exception:  # noqa: BLE001
        return None


def owner_class(fn):
    """The class whose from_handle fn is (classmethods are bound to it; staticmethods by qualname)."""
    owner = getattr(fn, "__self__", None)
    if isinstance(owner, type):
        return owner
    qual = getattr(fn, "__qualname__", "").rsplit(".", 1)[0]
    return next((c for c in (LIVE_POOL.classes if LIVE_POOL else ()) if c.__qualname__ == qual), None)


def owned_handles(pool, cls):
    """[(entry, handle)] of the live pooled instances of cls with a non-zero handle."""
    out = []
    for e in (pool.of(cls) if pool is not None and cls is not None else ()):
        if reports_closed(e.obj):
            continue
        try:
            handle = as_int(e.obj.handle)
        except Exception:  # noqa: BLE001  (no handle, or one that cannot be read now)
            continue
        if handle:
            out.append((e, handle))
    return out


def made_up_handle_refusal(fn, plist, values):
    """Why calling from_handle fn with values would pass a made-up handle, or None.
    Allowed: 0, the `handle` of a live pooled instance of fn's class, such an
    instance itself, and (for a `size`) at most the size of the instance whose
    handle is passed; non-integer values of other types stay."""
    cls = owner_class(fn)
    owned = {handle: getattr(e.obj, "size", None) for e, handle in owned_handles(LIVE_POOL, cls)}
    passed = None
    for (name, _, _, _), value in zip(plist, values):
        if cls is not None and isinstance(value, cls):
            continue
        number = as_int(value)
        if number is None or number == 0:
            continue
        if name == "size":
            limit = owned.get(passed)
            if limit is None or not 0 < number <= limit:
                return f"size={number} is not within a live object's allocation"
        elif number in owned:
            passed = number
        else:
            return f"{name}={number:#x} is not a handle a live {getattr(cls, '__name__', '?')} owns"
    return None


def owned_handle_choices(pool, cls):
    """(label, value) of the handle and size of each live pooled instance of cls: what
    a from_handle may be given on the real driver besides 0 (and is given everywhere)."""
    out = []
    for e, handle in owned_handles(pool, cls):
        out.append((f"handle of [{e.label}]", handle))
        if isinstance(getattr(e.obj, "size", None), int):
            out.append((f"size of [{e.label}]", e.obj.size))
    return out[:6]


def call_with(fn, plist, values):
    """Call fn with values (one per plist entry), positional or keyword as declared;
    on the real driver, raises MadeUpHandle instead of passing a made-up handle to
    a from_handle."""
    if REAL_DRIVER and getattr(fn, "__name__", "") == "from_handle":
        reason = made_up_handle_refusal(fn, plist, values)
        if reason:
            raise MadeUpHandle(reason)
    args, kwargs = [], {}
    for (name, kind, _, _), value in zip(plist, values):
        if kind == inspect.Parameter.KEYWORD_ONLY:
            kwargs[name] = value
        else:
            args.append(value)
    return fn(*args, **kwargs)


# ------------------------------------------------------------------ the call log

class Log:
    def __init__(self, path, start, only, skip):
        self.fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_APPEND, 0o644)
        os.dup2(self.fd, 250)  # a high fd, away from the small ints the probes pass as fds
        os.close(self.fd)
        self.fd = 250
        self.idx = 0
        self.start, self.only, self.skip = start, only, skip
        self.counts = {}

    def write(self, line):
        os.write(self.fd, (line + "\n").encode("utf-8", "backslashreplace"))

    def attempt(self, label, fn, setup=False):
        """Run fn() as call number idx; returns (ok, result), ok None when the
        call was not run: probes before --from (and all but --only), and
        labels in --skip. Setup calls always run otherwise. The numbering
        never depends on which calls ran."""
        idx = self.idx
        self.idx += 1
        label = label.replace("\n", " ")[:300]
        if label in self.skip:
            return None, None
        if not setup and (idx < self.start or (self.only is not None and idx != self.only)):
            return None, None
        self.write(f"S {idx} {'setup' if setup else 'probe'} {label}")
        try:
            result = fn()
            outcome = "ok"
            ok = True
        except Exception as exc:  # noqa: BLE001  (a Python exception is the allowed outcome)
            result, ok, outcome = None, False, type(exc).__name__
        except BaseException as exc:  # noqa: BLE001  (SystemExit from an API would be a bug, not a crash)
            result, ok, outcome = None, False, "BaseException:" + type(exc).__name__
        self.write(f"E {idx} {outcome}")
        self.counts[outcome] = self.counts.get(outcome, 0) + 1
        return ok, result


def short(value):
    r = type(value).__name__ if not isinstance(value, (int, str, bytes, type(None))) else repr(value)
    return r if len(r) < 40 else r[:37] + "..."


# ------------------------------------------------------------------ pool

class Entry:
    """A pooled instance: `label` says how it was made, make() makes a fresh one."""

    def __init__(self, label, make, obj):
        self.label, self.make, self.obj = label, make, obj
        self.singleton = False  # make() returns obj itself (a per-device object)


class Pool:
    def __init__(self, classes):
        self.classes = classes
        self.entries = []

    def of(self, cls):
        return [e for e in self.entries if isinstance(e.obj, cls)]

    def add(self, label, make, obj, soft=False):
        if type(obj) not in self.classes and not any(isinstance(obj, c) for c in self.classes):
            return False
        # Made by swapping an argument for another pooled one: only while the class is thin.
        cap = MAX_PER_CLASS // 3 if soft else MAX_PER_CLASS
        if len([e for e in self.entries if type(e.obj) is type(obj)]) >= cap:
            return False
        if any(e.obj is obj for e in self.entries):
            return False
        self.entries.append(Entry(label, make, obj))
        return True

    def collect(self, label, make, result, soft=False):
        """Pool result, or the members of a list/tuple result; True when something was added."""
        if isinstance(result, (list, tuple)):
            return any([self.add(f"{label}[{i}]", lambda make=make, i=i: make()[i], item, soft)
                        for i, item in enumerate(result[:4])])
        return self.add(label, make, result, soft)

    def value_choices(self):
        """(label, value) per pooled instance: the arguments probes pass."""
        return [(e.label, e.obj) for e in self.entries]


def class_by_name(classes, name):
    for cls, cname in classes.items():
        if cname == name or cls.__name__ == name or f"{cls.__module__}.{cls.__name__}".endswith(name):
            return cls
    return None


EXPECTED = re.compile(r"(?:Argument '(\w+)' has incorrect type \(expected ([\w.]+)"
                      r"|(\w+) must be (?:an? )?(?:iterable of )?([A-Z]\w+))")


def guess_for(pool, pname, context):
    """A first guess for parameter pname: a pooled instance of a class whose
    name contains a word of pname (and of the callable's name, for *Options),
    else NO_GUESS."""
    words = [w for w in pname.lower().split("_") if w]
    best = None
    for e in pool.entries:
        cname = type(e.obj).__name__.lower()
        if reports_closed(e.obj):
            continue
        score = sum(1 for w in words if w in cname)
        if "options" in words and not any(w in cname for w in context.lower().split("_") if len(w) > 2):
            score = 0
        if score and (best is None or score > best[0]):
            best = (score, e.obj)
    return best[1] if best else NO_GUESS


def fill_args(log, pool, label, get_fn, plist, context):
    """Setup call of fn: required parameters guessed, then adapted to each
    TypeError naming a parameter and the class it expects. Returns
    (ok, result, values)."""
    values = []
    for name, _, has_default, default in plist:
        guess = guess_for(pool, name, context)
        values.append(guess if guess is not NO_GUESS else default if has_default else 64)
    for _ in range(len(plist) + 2):
        ok, result = log.attempt(f"{label}({', '.join(f'{p[0]}={short(v)}' for p, v in zip(plist, values))})",
                                 lambda: call_with(get_fn(), plist, values), setup=True)
        if ok:
            return True, result, values
        err = getattr(log, "last_error", "")
        match = EXPECTED.search(err)
        if not match:
            return False, None, values
        pname = match.group(1) or match.group(3)
        cname = (match.group(2) or match.group(4)).rsplit(".", 1)[-1]
        cls = class_by_name(pool.classes, cname)
        names = [p[0] for p in plist]
        if pname not in names or cls is None:
            return False, None, values
        live = [e.obj for e in pool.of(cls) if not reports_closed(e.obj)]
        if not live or values[names.index(pname)] is live[0]:
            return False, None, values
        values[names.index(pname)] = live[0]
    return False, None, values


def safe_repr(obj):
    try:
        return f"{type(obj).__name__}:{obj!r}"
    except Exception:  # noqa: BLE001
        return f"{type(obj).__name__}:{id(obj)}"


class Maker:
    """A call that makes a pooled instance again: get_fn()(*vals)."""

    def __init__(self, get_fn, plist, vals):
        self.get_fn, self.plist, self.vals = get_fn, plist, list(vals)

    def __call__(self):
        return call_with(self.get_fn(), self.plist, self.vals)


def fill_variants(log, pool, label, get_fn, plist, context, done):
    """Setup calls of get_fn() with every parameter filled (fill_args), then
    with each pooled parameter swapped for other live instances of its class.
    Returns [(label, Maker, result)] of the calls that returned."""
    ok, result, values = fill_args(log, pool, label, get_fn, plist, context)
    out = [(f"{label}(guessed)", Maker(get_fn, plist, values), result, False)] if ok else []
    for i, v in enumerate(values):
        if not any(e.obj is v for e in pool.entries):
            continue
        for alt in pool.of(type(v))[:MAX_ALTERNATIVES + 1]:
            if alt.obj is v or reports_closed(alt.obj):
                continue
            key = (label, i, id(alt))
            if key in done:
                continue
            done.add(key)
            vals = list(values)
            vals[i] = alt.obj
            maker = Maker(get_fn, plist, vals)
            ok, res = log.attempt(f"{label}({plist[i][0]}=[{alt.label}])", maker, setup=True)
            if ok:
                out.append((f"{label}({plist[i][0]}=[{alt.label}])", maker, res, True))
    return out


# ------------------------------------------------------------------ main

def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("progress")
    ap.add_argument("--from", dest="start", type=int, default=0)
    ap.add_argument("--only", type=int, default=None)
    ap.add_argument("--skip", default=None, help="file of call labels not to run (one per line)")
    opts = ap.parse_args()
    skip = set()
    if opts.skip:
        with open(opts.skip) as f:
            skip = {line.rstrip("\n") for line in f if line.strip()}
    warnings.simplefilter("ignore")
    sys.unraisablehook = lambda *a: None  # destructor noise; a crash is what we look for
    log = Log(opts.progress, opts.start, opts.only, skip)

    # Remember the last exception text for the argument adaptation.
    orig_attempt = log.attempt

    def attempt(label, fn, setup=False):
        def wrapped():
            try:
                return fn()
            except Exception as exc:
                log.last_error = str(exc)
                raise
        log.last_error = ""
        return orig_attempt(label, wrapped, setup)

    log.attempt = attempt

    classes, instances, functions, modules, unimportable = discover()
    log.write(f"I discovered modules={len(modules)} classes={len(classes)} functions={len(functions)} "
              f"instances={len(instances)}")
    log.write("I classes " + " ".join(classes.values()))
    if unimportable:
        log.write("I unimportable " + " | ".join(map(str, unimportable)))
    global LIVE_POOL
    pool = LIVE_POOL = Pool(classes)
    for name, obj in sorted(instances.items()):
        pool.add(name, lambda obj=obj: obj, obj)

    # Level 0: class-level callables with each synthesized value, for every
    # parameter at once and for one parameter at a time (the others at their
    # defaults).
    statics = []
    for cls, cname in classes.items():
        statics += [(f"{cname}", cls)] + [(f"{cname}.{m}", getattr(cls, m))
                                          for m, k in members(cls).items() if k == "static"]
    for flabel, fn in statics:
        plist, variadic = params_of(fn)
        if plist is None or (variadic and not plist):
            arities = [[(f"a{i}", inspect.Parameter.POSITIONAL_ONLY, False, None) for i in range(n)]
                       for n in range(3)]
        else:
            arities = [plist]
        seen = set()
        values = BASE_VALUES
        for pl in arities:
            variants = [("", [])] if not pl else []
            for vlabel, v in values if pl else []:
                variants.append((", ".join([vlabel] * len(pl)), [v] * len(pl)))
            one_at_a_time = []
            for i, p in enumerate(pl):
                if len(pl) > 1 and all(q[2] for j, q in enumerate(pl) if j != i):
                    for vlabel, v in values:
                        vals = [q[3] for q in pl]
                        vals[i] = v
                        one_at_a_time.append((f"{p[0]}={vlabel}", vals))
            # A single flag set (=1) first: options classes with one switch on.
            variants = [x for x in one_at_a_time if x[0].endswith("=1")] + variants + \
                [x for x in one_at_a_time if not x[0].endswith("=1")]
            for vlabel, vals in variants:
                label = f"{flabel}({vlabel})"
                make = (lambda fn=fn, pl=pl, vals=vals: call_with(fn, pl, vals))
                ok, made = log.attempt(label, lambda make=make: (lambda r: (r, safe_repr(r)))(make()), setup=True)
                if ok and len(seen) < MAX_PER_FACTORY and made[1] not in seen:
                    if pool.collect(label, make, made[0]):
                        seen.add(made[1])
                made = None

    # Levels 1..: class-level callables with required parameters filled from
    # the pool, and products of pooled instances.
    done = set()
    good_args = {}  # (class, method) -> values that worked
    for _level in range(MAX_LEVELS):
        for flabel, fn in statics:
            plist, _ = params_of(fn)
            if not plist:
                continue
            key = (flabel, frozenset(type(e.obj) for e in pool.entries))
            if key in done:
                continue
            done.add(key)
            for label, make, res, soft in fill_variants(log, pool, flabel, lambda fn=fn: fn, plist, flabel, done):
                pool.collect(label, make, res, soft)
        for entry in list(pool.entries):
            cls = type(entry.obj)
            if ("remake", id(entry)) not in done:
                done.add(("remake", id(entry)))
                ok, again = log.attempt(f"remake [{entry.label}]", entry.make, setup=True)
                entry.singleton = ok and again is entry.obj
                again = None
            for m, kind in members(cls).items():
                if kind == "static" or (id(entry), m) in done:
                    continue
                if entry.singleton and hasattr(entry.obj, "is_closed") and kind == "method" \
                        and all(p[2] for p in (params_of(getattr(cls, m))[0] or [])):
                    continue  # close() of a shared closable object would spoil later calls: probes do it, last
                done.add((id(entry), m))
                label = f"{entry.label}.{m}"
                if kind == "attr":
                    ok, res = log.attempt(label, lambda e=entry, m=m: getattr(e.obj, m), setup=True)
                    if ok:
                        pool.collect(label, lambda e=entry, m=m: getattr(e.make(), m), res)
                    continue
                plist, _ = params_of(getattr(cls, m))
                if plist is None:
                    plist = []
                if all(p[2] for p in plist):
                    # On a fresh copy: a method like close() must not spoil the pooled one.
                    holder = {}

                    def fresh_call(e=entry, m=m, holder=holder):
                        holder["obj"] = e.make()
                        if holder["obj"] is e.obj:  # not a copy: the probes call it, last
                            e.singleton = True
                            return holder["obj"]
                        return getattr(holder["obj"], m)()

                    ok, res = log.attempt(label + "() on a fresh copy", fresh_call, setup=True)
                    fresh = holder.get("obj")
                    if ok and res is not fresh:
                        pool.collect(label + "()", lambda e=entry, m=m: getattr(e.make(), m)(), res)
                    if ok:
                        if fresh is not None and reports_closed(fresh) \
                                and " after " not in entry.label and "=[" not in entry.label:
                            def closed(e=entry, m=m):
                                o = e.make()
                                getattr(o, m)()
                                return o

                            pool.add(f"{entry.label} after {m}()", closed, fresh)
                    holder.clear()
                if plist:  # on fresh copies too (close(stream=...) takes arguments)
                    found = fill_variants(log, pool, label, lambda e=entry, m=m: getattr(e.make(), m), plist, m, done)
                    for glabel, make, res, soft in found:
                        good_args.setdefault((cls, m), make.vals)
                        pool.collect(glabel, make, res, soft)
    per_class = {}
    for e in pool.entries:
        per_class[type(e.obj).__name__] = per_class.get(type(e.obj).__name__, 0) + 1
    log.write(f"I pool={len(pool.entries)} " + " ".join(f"{k}={v}" for k, v in sorted(per_class.items())))
    log.write("I pool " + " | ".join(e.label for e in pool.entries))
    log.write("I unpooled " + " ".join(sorted(n for c, n in classes.items() if not pool.of(c))))

    # Probes.
    choices = BASE_VALUES + pool.value_choices()
    for name, fn in sorted(functions.items()):
        probe_callable(log, name, lambda fn=fn: fn, fn, choices, None)
    for entry in pool.entries:
        cls = type(entry.obj)
        for m, kind in members(cls).items():
            label = f"[{entry.label}].{m}"
            if kind == "attr":
                log.attempt(label, lambda e=entry, m=m: getattr(e.make(), m))
                continue
            holder = {}

            def receiver(e=entry, m=m, holder=holder):
                if "obj" not in holder:
                    holder["obj"] = e.make()
                return getattr(holder["obj"], m)

            # Probed even when no fresh copy can be made (each call then raises): the
            # numbering of calls must not depend on outcomes.
            log.attempt(f"[{entry.label}] fresh copy for {m}", lambda: receiver(), setup=False)
            probe_callable(log, label, receiver, getattr(cls, m),
                           choices + owned_handle_choices(pool, cls) if m == "from_handle" else choices,
                           good_args.get((cls, m)))
            holder.clear()
        probe_protocols(log, entry, choices)

    # Teardown, one object at a time, so a crashing destructor is named.
    for entry in list(pool.entries):
        pool.entries.remove(entry)
        log.attempt(f"release [{entry.label}]", lambda e=entry: (setattr(e, "obj", None), gc.collect()), setup=True)
    log.write("I counts " + " ".join(f"{k}={v}" for k, v in sorted(log.counts.items())))
    log.write(f"DONE {log.idx}")


def probe_callable(log, label, get_fn, declared, choices, good):
    """Call get_fn() with argument tuples built from choices; one parameter
    varied at a time over `good` (values that worked in setup) or over its
    default / a guess. `declared` (the function as the class holds it) gives
    the parameters, so nothing runs outside a logged call."""
    plist, variadic = params_of(declared)
    if plist is None:
        plist = [("a", inspect.Parameter.POSITIONAL_ONLY, False, None)]
    if not plist:
        log.attempt(f"{label}()", lambda: get_fn()())
        return
    base = list(good) if good else [d if has_d else None for (_, _, has_d, d) in plist]
    variants = []
    for vlabel, v in choices:  # every parameter the same value
        variants.append((f"all={vlabel}", [v] * len(plist)))
    for i, p in enumerate(plist):  # one parameter varied
        for vlabel, v in choices:
            vals = list(base)
            vals[i] = v
            variants.append((f"{p[0]}={vlabel}", vals))
    if len(variants) > MAX_VARIANTS:
        keep = variants[:len(choices)]
        rest = variants[len(choices):]
        RNG.shuffle(rest)
        variants = keep[:MAX_VARIANTS // 2] + rest[:MAX_VARIANTS - MAX_VARIANTS // 2]
    for vlabel, vals in variants:
        log.attempt(f"{label}({vlabel})", lambda vals=vals: call_with(get_fn(), plist, vals))


def probe_protocols(log, entry, choices):
    """Generic protocols on a fresh copy: repr, str, hash, bool, ==, copy, pickle, memoryview."""
    holder = {}

    def obj():
        if "o" not in holder:
            holder["o"] = entry.make()
        return holder["o"]

    for name, fn in (("repr", lambda: repr(obj())), ("str", lambda: str(obj())), ("hash", lambda: hash(obj())),
                     ("bool", lambda: bool(obj())), ("copy.copy", lambda: copy.copy(obj())),
                     ("copy.deepcopy", lambda: copy.deepcopy(obj())),
                     ("pickle round trip", lambda: pickle.loads(pickle.dumps(obj()))),
                     ("memoryview", lambda: memoryview(obj()))):
        log.attempt(f"{name}([{entry.label}])", fn)
    for vlabel, v in choices[:len(BASE_VALUES)] + choices[len(BASE_VALUES)::3]:
        log.attempt(f"[{entry.label}] == {vlabel}", lambda v=v: obj() == v)
    holder.clear()


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""Compare the public surface of this package with upstream cuda-core 1.2.2: all seven public modules.

Two steps, each run by a different interpreter (no GPU needed, nothing is called):

  python ci/api_compare.py dump OUT.json
      Imports ``cuda.core`` as installed for *this* interpreter and writes, for
      every name of the subset below, what it is: its kind, ``__module__``,
      ``__qualname__``, and for classes every public attribute, method and
      property with its signature (parameter names, kinds and defaults).

  python ci/api_compare.py compare UPSTREAM.json OURS.json [--allow ci/api_allowlist.txt]
      Prints every difference as a table and exits 1 if any difference is not
      allowed by the allow-list (2 for a malformed allow-list).

The nox session ``api_compare`` runs both: upstream from the ``upstream_env``
session's venv (cuda-core 1.2.2 + cuda-bindings from PyPI), ours from its own.

Where signatures come from: ``inspect.signature`` on the live object first
(upstream's Cython is compiled with ``binding=True``, so most methods have real
signatures); where that fails (Cython ``__init__`` slot wrappers, extension
types), the ``.pyi`` stub shipped next to the defining module, parsed with
``ast``. Annotations are never compared: only parameter names, kinds and
defaults (a stub default of ``...`` matches any default).

The surface is every name in upstream's ``__all__`` of its seven public modules
(``cuda.core``, ``.utils``, ``.typing``, ``.graph``, ``.texture``, ``.system``,
``.checkpoint``: ALL_OF below), every member of each class among them, and
the design card's API list (docs/API.md: Device, Stream, Event, the memory resources,
Buffer, the IPC types, CUDAError) plus ManagedMemoryResource(+Options),
LegacyPinnedMemoryResource, VirtualMemoryResource(+Options) and the
cuda.core.typing.VirtualMemory* enums, the kernel classes (Program, ProgramOptions,
ObjectCode, Kernel, LaunchConfig, launch), Device.get_all_devices, cuda.core._device._tls,
cuda.core._stream.Stream_accept and cuda.core._utils.cuda_utils.{CUDAError,
handle_return, driver}. Each entry is a dotted path as upstream code reaches
it (``cuda.core.Buffer`` and ``cuda.core._memory._buffer.Buffer`` are both
checked: one is what users import, the other what pickles and upstream's tests
name).

Besides public names, the private ``_init`` factories of IPCBufferDescriptor
and IPCAllocationHandle are compared, because upstream's own tests call them.
A property and a plain attribute count as the same kind (both read as
``obj.x``); settability is compared where both sides say.

Allow-list: see the header of ci/api_allowlist.txt. Differences are keyed as
``PATH ASPECT`` where ASPECT is one of: missing, kind, module, qualname, type,
signature, all (a name in upstream's ``__all__`` of that module but not in
ours), module-import, member-missing, member-kind, setter. Members of ours
that upstream lacks are listed as ``extra`` for information and never fail
(``--show-info`` prints them).
"""
from __future__ import annotations

import argparse
import ast
import fnmatch
import importlib
import inspect
import json
import os
import sys
import types

# ---------------------------------------------------------------------------
# The subset. Modules whose upstream ``__all__`` is taken whole are listed in
# ALL_OF; everything else is named explicitly.
# ---------------------------------------------------------------------------
TOP_LEVEL = [
    "Buffer", "MemoryResource",
    "DeviceMemoryResource", "DeviceMemoryResourceOptions",
    "PinnedMemoryResource", "PinnedMemoryResourceOptions",
    "ManagedMemoryResource", "ManagedMemoryResourceOptions",
    "LegacyPinnedMemoryResource",
    "VirtualMemoryResource", "VirtualMemoryResourceOptions",
    "Device", "Context",
    "Stream", "StreamOptions", "LEGACY_DEFAULT_STREAM", "PER_THREAD_DEFAULT_STREAM",
    "Event", "EventOptions",
    "system",
    "Program", "ProgramOptions", "ObjectCode", "Kernel", "LaunchConfig", "launch",
]
EXPLICIT = [
    "cuda.core._memory._ipc.IPCBufferDescriptor",
    "cuda.core._memory._ipc.IPCAllocationHandle",
    "cuda.core._event.IPCEventDescriptor",
    "cuda.core._device._tls",
    "cuda.core._device.DeviceProperties",
    "cuda.core._stream.Stream_accept",
    "cuda.core._utils.cuda_utils.CUDAError",
    "cuda.core._utils.cuda_utils.handle_return",
    "cuda.core._utils.cuda_utils.driver",
    "cuda.core.typing.VirtualMemoryAccessType",
    "cuda.core.typing.VirtualMemoryAllocationType",
    "cuda.core.typing.VirtualMemoryGranularityType",
    "cuda.core.typing.VirtualMemoryHandleType",
    "cuda.core.typing.VirtualMemoryLocationType",
    # internal names upstream's own tests import
    "cuda.core._utils.version.binding_version",
    "cuda.core._utils.version.driver_version",
    "cuda.core._utils.version._parse_version_triple",
    "cuda.core._dlpack.DLDeviceType",
    "cuda.core._stream.default_stream",
    "cuda.core._utils.cuda_utils.ComputeCapability",
]
# Modules of the subset: each must import, and every name in upstream's
# ``__all__`` for it is part of the surface.
ALL_OF = [
    # upstream 1.2.2's seven public modules, whole
    "cuda.core",
    "cuda.core.utils",
    "cuda.core.typing",
    "cuda.core.graph",
    "cuda.core.texture",
    "cuda.core.system",
    "cuda.core.checkpoint",
    # the modules behind them that upstream's tests and pickles name
    "cuda.core._memory._buffer",
    "cuda.core._memory._ipc",
    "cuda.core._memory._device_memory_resource",
    "cuda.core._memory._pinned_memory_resource",
    "cuda.core._memory._managed_memory_resource",
    "cuda.core._memory._legacy",
    "cuda.core._memory._virtual_memory_resource",
    "cuda.core._device",
    "cuda.core._stream",
    "cuda.core._event",
    "cuda.core._program",
    "cuda.core._module",
    "cuda.core._launch_config",
    "cuda.core._launcher",
]
# Names in ``cuda.core._memory`` (the package) that belong to the subset.
MEMORY_PACKAGE = [
    "Buffer", "MemoryResource", "DeviceMemoryResource", "DeviceMemoryResourceOptions",
    "PinnedMemoryResource", "PinnedMemoryResourceOptions", "ManagedMemoryResource",
    "ManagedMemoryResourceOptions", "LegacyPinnedMemoryResource",
    "VirtualMemoryResource", "VirtualMemoryResourceOptions",
]
# Dunders that are part of the behaviour users and tests rely on; compared
# when upstream or ours defines them (i.e. they are not object's own).
DUNDERS = [
    "__init__", "__reduce__", "__eq__", "__hash__", "__int__", "__index__",
    "__enter__", "__exit__", "__dlpack__", "__dlpack_device__", "__cuda_stream__",
    "__sub__", "__buffer__", "__release_buffer__",
]
# Classes compared on a named subset of members only (none today: DeviceProperties
# is compared whole, all of upstream's attributes).
MEMBER_SUBSET = {}
# Private members that upstream's own tests call (cuda_core/tests/memory_ipc:
# test_errors.py builds descriptors and handles through them), by class name.
TESTED_PRIVATE = {"IPCBufferDescriptor": ["_init"], "IPCAllocationHandle": ["_init"], "DeviceProperties": ["_init"],
                  "Stream": ["_init", "_legacy_default", "_per_thread_default"]}
# Of those, the ones whose parameters matter; for the rest (operator slots,
# whose parameter names are the interpreter's) only presence is compared.
SIG_DUNDERS = {"__init__", "__dlpack__", "__dlpack_device__", "__cuda_stream__", "__enter__", "__exit__", "__reduce__"}


# ---------------------------------------------------------------------------
# dump
# ---------------------------------------------------------------------------
def _resolve(path):
    """Import the longest module prefix of ``path`` and getattr the rest.
    Returns (object, error-string)."""
    parts = path.split(".")
    not_found = None
    for i in range(len(parts), 1, -1):
        modname = ".".join(parts[:i])
        try:
            obj = importlib.import_module(modname)
        except ModuleNotFoundError as e:
            if e.name and (modname == e.name or modname.startswith(e.name + ".")):
                if i < len(parts) and not_found is None:
                    not_found = e.name
                continue  # this prefix is not a module; try a shorter one
            return None, f"import {modname}: {type(e).__name__}: {e}"
        except Exception as e:  # a module that exists but fails to import
            return None, f"import {modname}: {type(e).__name__}: {e}"
        for attr in parts[i:]:
            try:
                obj = getattr(obj, attr)
            except AttributeError:
                if not_found:
                    return None, f"no module named {not_found}"
                return None, f"{modname} has no attribute {'.'.join(parts[i:])}"
        return obj, None
    return None, f"no module in {path}"


_STUB_CACHE = {}


def _stub_for_module(modname):
    """Parsed .pyi stub next to the file of module ``modname`` (None if none)."""
    if modname in _STUB_CACHE:
        return _STUB_CACHE[modname]
    tree = None
    mod = sys.modules.get(modname)
    f = getattr(mod, "__file__", None) if mod else None
    if f:
        base = f
        for suf in sorted(importlib.machinery.all_suffixes(), key=len, reverse=True):
            if base.endswith(suf):
                base = base[: -len(suf)]
                break
        pyi = base + ".pyi"
        if os.path.basename(base) == "__init__":
            pyi = os.path.join(os.path.dirname(base), "__init__.pyi")
        if os.path.exists(pyi):
            with open(pyi, encoding="utf-8") as fh:
                tree = ast.parse(fh.read(), pyi)
    _STUB_CACHE[modname] = tree
    return tree


def _stub_class(cls):
    tree = _stub_for_module(getattr(cls, "__module__", ""))
    if tree is None:
        return None
    node = tree
    for part in cls.__qualname__.split("."):
        node = next((n for n in getattr(node, "body", []) if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
    return node


def _stub_function(module, qualname):
    tree = _stub_for_module(module)
    if tree is None:
        return None
    node = tree
    parts = qualname.split(".")
    for part in parts[:-1]:
        node = next((n for n in getattr(node, "body", []) if isinstance(n, ast.ClassDef) and n.name == part), None)
        if node is None:
            return None
    return next((n for n in node.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))
                 and n.name == parts[-1] and not _is_setter(n)), None)


def _is_setter(fn):
    return any(isinstance(d, ast.Attribute) and d.attr in ("setter", "deleter") for d in fn.decorator_list)


def _norm_default_text(text):
    if text == "...":
        return "..."
    try:
        return repr(ast.literal_eval(text))
    except Exception:
        return text


def _norm_default_live(value):
    if value is inspect.Parameter.empty:
        return None
    if value is Ellipsis:
        return "..."
    if isinstance(value, (bool, int, float, str, bytes, type(None), tuple)):
        return repr(value)
    if isinstance(value, type):
        return value.__qualname__
    return f"<{type(value).__name__}>"


def _params_from_signature(sig):
    return [[p.name, p.kind.name, _norm_default_live(p.default)] for p in sig.parameters.values()]


def _params_from_ast(fn):
    a = fn.args
    out = []
    positional = list(a.posonlyargs) + list(a.args)
    defaults = [None] * (len(positional) - len(a.defaults)) + [ast.unparse(d) for d in a.defaults]
    for i, arg in enumerate(positional):
        kind = "POSITIONAL_ONLY" if i < len(a.posonlyargs) else "POSITIONAL_OR_KEYWORD"
        out.append([arg.arg, kind, _norm_default_text(defaults[i]) if defaults[i] is not None else None])
    if a.vararg:
        out.append([a.vararg.arg, "VAR_POSITIONAL", None])
    for arg, d in zip(a.kwonlyargs, a.kw_defaults):
        out.append([arg.arg, "KEYWORD_ONLY", _norm_default_text(ast.unparse(d)) if d is not None else None])
    if a.kwarg:
        out.append([a.kwarg.arg, "VAR_KEYWORD", None])
    return out


def _dataclass_init_from_ast(clsnode):
    """Synthesized __init__ of a stub class decorated with @dataclass."""
    if not any((isinstance(d, ast.Name) and d.id == "dataclass") or
               (isinstance(d, ast.Call) and getattr(d.func, "id", None) == "dataclass")
               for d in clsnode.decorator_list):
        return None
    params = []
    for n in clsnode.body:
        if isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name):
            ann = ast.unparse(n.annotation)
            if ann.startswith("ClassVar"):
                continue
            params.append([n.target.id, "POSITIONAL_OR_KEYWORD",
                           _norm_default_text(ast.unparse(n.value)) if n.value is not None else None])
    return params


def _drop_bound(params):
    if params and params[0][0] in ("self", "cls") and params[0][1] in ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD"):
        return params[1:]
    return params


def _signature(func, *, module, qualname, bound_first):
    """(params, source). ``bound_first``: drop a leading self/cls."""
    try:
        params = _params_from_signature(inspect.signature(func))
        src = "inspect"
    except (TypeError, ValueError):
        fn = _stub_function(module, qualname)
        if fn is None:
            return None, "none"
        params = _params_from_ast(fn)
        src = "stub"
    if bound_first:
        params = _drop_bound(params)
    return params, src


def _defining_class(cls, name):
    for klass in cls.__mro__:
        if name in vars(klass):
            return klass
    return None


def _stub_has_setter(klass, name):
    node = _stub_class(klass)
    if node is None:
        return None
    fns = [n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == name]
    if not fns:
        return None
    return any(_is_setter(f) for f in fns)


def _describe_member(cls, name):
    owner = _defining_class(cls, name)
    raw = inspect.getattr_static(cls, name)
    tname = type(raw).__name__
    d = {"defined_in": f"{owner.__module__}.{owner.__qualname__}" if owner else None}
    qual = f"{owner.__qualname__}.{name}" if owner else f"{cls.__qualname__}.{name}"
    module = owner.__module__ if owner else cls.__module__
    if isinstance(raw, property) or tname == "getset_descriptor":
        d["kind"] = "property"
        if isinstance(raw, property):
            d["setter"] = raw.fset is not None
        else:
            d["setter"] = _stub_has_setter(owner, name) if owner else None
        return d
    if tname == "member_descriptor":
        d["kind"] = "attribute"
        d["setter"] = True
        return d
    if isinstance(raw, staticmethod):
        d["kind"] = "staticmethod"
        d["signature"], d["sig_source"] = _signature(raw.__func__, module=module, qualname=qual, bound_first=False)
        return d
    if isinstance(raw, classmethod) or tname == "classmethod_descriptor":
        d["kind"] = "classmethod"
        func = raw.__func__ if isinstance(raw, classmethod) else getattr(cls, name)
        # A leading ``cls`` (from the unbound function or a stub) is dropped;
        # a bound builtin's signature has none to drop.
        d["signature"], d["sig_source"] = _signature(func, module=module, qualname=qual, bound_first=True)
        return d
    if name == "__init__":
        d["kind"] = "method"
        params = None
        src = "none"
        if not isinstance(raw, (types.WrapperDescriptorType,)) and owner is not object:
            try:
                params = _drop_bound(_params_from_signature(inspect.signature(raw)))
                src = "inspect"
            except (TypeError, ValueError):
                params = None
        if params is None:
            try:
                params = _params_from_signature(inspect.signature(cls))
                src = "inspect"
            except (TypeError, ValueError):
                params = None
        if params is None:
            for klass in cls.__mro__:
                node = _stub_class(klass)
                if node is None:
                    continue
                fn = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == "__init__"), None)
                if fn is not None:
                    params, src = _drop_bound(_params_from_ast(fn)), "stub"
                    break
                dc = _dataclass_init_from_ast(node)
                if dc is not None:
                    params, src = dc, "stub-dataclass"
                    break
        d["signature"], d["sig_source"] = params, src
        return d
    if callable(raw):
        d["kind"] = "method"
        if name.startswith("__") and name not in SIG_DUNDERS:
            d["signature"], d["sig_source"] = None, "slot (presence only)"
        else:
            d["signature"], d["sig_source"] = _signature(raw, module=module, qualname=qual, bound_first=True)
        return d
    d["kind"] = "attribute"
    d["type"] = f"{type(raw).__module__}.{type(raw).__qualname__}"
    d["setter"] = None if raw is not None else False
    return d


def _describe(obj):
    if isinstance(obj, types.ModuleType):
        return {"kind": "module", "name": obj.__name__}
    if isinstance(obj, type):
        d = {"kind": "class", "module": obj.__module__, "qualname": obj.__qualname__,
             "bases": [f"{b.__module__}.{b.__qualname__}" for b in obj.__bases__],
             "is_exception": issubclass(obj, BaseException)}
        members = {}
        names = [n for n in dir(obj) if not n.startswith("_")]
        names += [n for n in TESTED_PRIVATE.get(obj.__name__, []) if hasattr(obj, n)]
        dunders = DUNDERS
        if obj.__name__ in MEMBER_SUBSET:
            names = [n for n in MEMBER_SUBSET[obj.__name__] if hasattr(obj, n)]
            dunders = []
        for n in dunders:
            owner = _defining_class(obj, n)
            if owner is not None and owner is not object:
                names.append(n)
        for n in sorted(set(names)):
            try:
                members[n] = _describe_member(obj, n)
            except Exception as e:  # never let one odd member stop the dump
                members[n] = {"kind": "error", "error": f"{type(e).__name__}: {e}"}
        d["members"] = members
        return d
    if callable(obj) and not isinstance(obj, type):
        module = getattr(obj, "__module__", None)
        qual = getattr(obj, "__qualname__", getattr(obj, "__name__", ""))
        params, src = _signature(obj, module=module, qualname=qual, bound_first=False)
        return {"kind": "function", "module": module, "qualname": qual, "signature": params, "sig_source": src}
    t = type(obj)
    return {"kind": "data", "type": f"{t.__module__}.{t.__qualname__}"}


def subset_paths():
    paths = [f"cuda.core.{n}" for n in TOP_LEVEL]
    paths += [f"cuda.core._memory.{n}" for n in MEMORY_PACKAGE]
    paths += EXPLICIT
    paths += ["cuda.core.Device.get_all_devices"]
    return paths


def dump(out_path, like=None):
    result = {"python": sys.version.split()[0], "entries": {}, "modules": {}}
    try:
        import cuda.core as cc
        result["package"] = {"version": getattr(cc, "__version__", None), "file": getattr(cc, "__file__", None)}
    except Exception as e:
        result["package"] = {"error": f"{type(e).__name__}: {e}"}
    paths = subset_paths()
    for modname in ALL_OF:
        try:
            mod = importlib.import_module(modname)
            names = list(getattr(mod, "__all__", None) or [])
            result["modules"][modname] = {"imports": True, "__all__": names}
        except Exception as e:
            result["modules"][modname] = {"imports": False, "error": f"{type(e).__name__}: {e}", "__all__": None}
            names = []
        paths += [f"{modname}.{n}" for n in names]
    if like:
        # Dump exactly what the other dump holds too, so both have every path.
        with open(like, encoding="utf-8") as fh:
            paths += list(json.load(fh)["entries"])
    paths = list(dict.fromkeys(paths))
    seen = {}
    keep = []  # ids are compared below: keep every object alive so none is reused
    for p in paths:
        obj, err = _resolve(p)
        if err:
            result["entries"][p] = {"kind": "missing", "error": err}
            continue
        d = _describe(obj)
        keep.append(obj)
        first = seen.setdefault(id(obj), p)
        d["same_as"] = first if first != p else None
        result["entries"][p] = d
    with open(out_path, "w", encoding="utf-8") as fh:
        json.dump(result, fh, indent=1, sort_keys=True)
    print(f"wrote {out_path}: {len(result['entries'])} entries "
          f"({sum(1 for e in result['entries'].values() if e['kind'] == 'missing')} missing)")


# ---------------------------------------------------------------------------
# compare
# ---------------------------------------------------------------------------
ASPECTS = {"missing", "kind", "module", "qualname", "type", "signature", "all",
           "member-missing", "member-kind", "setter", "module-import"}


def _member_kind(k):
    """A property and a plain attribute read alike (``obj.x``); settability is
    compared separately where both sides say."""
    return "data" if k in ("property", "attribute") else k


def load_allowlist(path):
    """Entries: ``PATTERN ASPECT -- reason`` (see ci/api_allowlist.txt)."""
    entries = []
    if not path or not os.path.exists(path):
        return entries
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            s = line.strip()
            if not s or s.startswith("#"):
                continue
            head, sep, reason = s.partition(" -- ")
            fields = head.split()
            if not sep or not reason.strip() or len(fields) != 2 or fields[1] not in ASPECTS:
                raise SystemExit(f"{path}:{lineno}: expected 'PATH ASPECT -- reason' with ASPECT in "
                                 f"{sorted(ASPECTS)}, got: {s!r}")
            entries.append({"pattern": fields[0], "aspect": fields[1], "reason": reason.strip(),
                            "line": lineno, "used": 0})
    return entries


def _fmt_sig(params):
    if params is None:
        return "(unknown)"
    out, star = [], False
    n_posonly = sum(1 for p in params if p[1] == "POSITIONAL_ONLY")
    for i, (name, kind, default) in enumerate(params):
        if kind == "KEYWORD_ONLY" and not star:
            out.append("*")
            star = True
        if kind == "VAR_POSITIONAL":
            out.append("*" + name)
            star = True
            continue
        if kind == "VAR_KEYWORD":
            out.append("**" + name)
            continue
        out.append(name if default is None else f"{name}={default}")
        if kind == "POSITIONAL_ONLY" and i == n_posonly - 1:
            out.append("/")
    return "(" + ", ".join(out) + ")"


def _type_note(d):
    return f" ({d['type']})" if d.get("kind") == "attribute" and d.get("type") else ""


def _sig_equal(a, b):
    if a is None or b is None:
        return a is b
    if len(a) != len(b):
        return False
    for (na, ka, da), (nb, kb, db) in zip(a, b):
        if ka != kb:
            return False
        if na != nb and ka not in ("VAR_POSITIONAL", "VAR_KEYWORD"):  # *args/**kw names are invisible to callers
            return False
        if (da is None) != (db is None):
            return False
        if da is not None and "..." not in (da, db) and da != db:
            return False
    return True


def compare(up, ours):
    rows = []  # (path, aspect, upstream, ours, fails)

    def add(path, aspect, u, o, fails=True):
        rows.append([path, aspect, str(u), str(o), fails])

    for modname, um in sorted(up["modules"].items()):
        om = ours["modules"].get(modname, {"imports": False, "error": "not dumped"})
        if um["imports"] and not om["imports"]:
            add(modname, "module-import", "imports", om.get("error"))
        if om["imports"]:
            for name in um.get("__all__") or []:
                if name not in (om.get("__all__") or []):
                    add(f"{modname}.{name}", "all", "in __all__", "not in __all__")

    for path, u in up["entries"].items():
        o = ours["entries"].get(path, {"kind": "missing", "error": "not dumped"})
        if u["kind"] == "missing":
            continue  # not part of upstream's surface after all (e.g. optional)
        if o["kind"] == "missing":
            add(path, "missing", u["kind"], o.get("error", "missing"))
            continue
        if u["kind"] != o["kind"]:
            add(path, "kind", u["kind"], o["kind"])
            continue
        if u.get("same_as") and o.get("same_as") == u.get("same_as"):
            continue  # the same object as an earlier path on both sides: already compared
        if u["kind"] in ("class", "function"):
            if u.get("module") != o.get("module"):
                add(path, "module", u.get("module"), o.get("module"))
            if u.get("qualname") != o.get("qualname"):
                add(path, "qualname", u.get("qualname"), o.get("qualname"))
        if u["kind"] == "module" and u.get("name") != o.get("name"):
            add(path, "type", u.get("name"), o.get("name"))
        if u["kind"] == "data" and u.get("type") != o.get("type"):
            add(path, "type", u.get("type"), o.get("type"))
        if u["kind"] == "function" and not _sig_equal(u.get("signature"), o.get("signature")):
            add(path, "signature", _fmt_sig(u.get("signature")), _fmt_sig(o.get("signature")))
        if u["kind"] == "class":
            um, omm = u["members"], o["members"]
            for name, ud in sorted(um.items()):
                mp = f"{path}.{name}"
                od = omm.get(name)
                if od is None:
                    add(mp, "member-missing", ud["kind"], "missing")
                    continue
                if _member_kind(ud["kind"]) != _member_kind(od["kind"]):
                    add(mp, "member-kind", ud["kind"] + _type_note(ud), od["kind"] + _type_note(od))
                    continue
                if _member_kind(ud["kind"]) == "data":
                    if ud.get("setter") is not None and od.get("setter") is not None and ud["setter"] != od["setter"]:
                        add(mp, "setter", "settable" if ud["setter"] else "read-only",
                            "settable" if od["setter"] else "read-only")
                elif "signature" in ud:
                    us, os_ = ud.get("signature"), od.get("signature")
                    if us is None:
                        continue  # upstream's signature cannot be read: nothing to hold ours to
                    if not _sig_equal(us, os_):
                        add(mp, "signature", _fmt_sig(us), _fmt_sig(os_))
            for name in sorted(set(omm) - set(um)):
                add(f"{path}.{name}", "extra", "-", omm[name]["kind"], fails=False)
    return rows


def _table(rows, headers):
    widths = [max(len(h), *(len(str(r[i])) for r in rows)) if rows else len(h) for i, h in enumerate(headers)]
    widths = [min(w, 70) for w in widths]

    def cut(s, w):
        s = str(s)
        return s if len(s) <= w else s[: w - 1] + "~"
    line = "  ".join(h.ljust(w) for h, w in zip(headers, widths))
    out = [line, "  ".join("-" * w for w in widths)]
    for r in rows:
        out.append("  ".join(cut(c, w).ljust(w) for c, w in zip(r, widths)).rstrip())
    return "\n".join(out)


def main_compare(args):
    with open(args.upstream, encoding="utf-8") as fh:
        up = json.load(fh)
    with open(args.ours, encoding="utf-8") as fh:
        ours = json.load(fh)
    allow = load_allowlist(args.allow)
    rows = compare(up, ours)
    for r in rows:
        if not r[4]:
            continue
        for a in allow:
            if a["aspect"] == r[1] and fnmatch.fnmatchcase(r[0], a["pattern"]):
                r[4] = False
                r.append(a["reason"])
                a["used"] += 1
                break
    table_rows = []
    for r in rows:
        status = "FAIL" if r[4] else ("allowed" if len(r) > 5 else "info")
        table_rows.append([status, r[0], r[1], r[2], r[3]])
    if args.json_out:
        with open(args.json_out, "w", encoding="utf-8") as fh:
            json.dump(table_rows, fh, indent=1)
    print(f"upstream: cuda-core {up.get('package', {}).get('version')} | "
          f"ours: {ours.get('package', {}).get('file')}")
    if table_rows:
        shown = table_rows if args.show_info else [t for t in table_rows if t[0] != "info"]
        print(_table(shown, ["status", "path", "aspect", "upstream 1.2.2", "ours"]))
    for a in allow:
        if not a["used"]:
            print(f"warning: allow-list line {a['line']} matched nothing: {a['pattern']} {a['aspect']}")
    n_fail = sum(1 for t in table_rows if t[0] == "FAIL")
    n_allowed = sum(1 for t in table_rows if t[0] == "allowed")
    n_info = sum(1 for t in table_rows if t[0] == "info")
    n_checked = len(up["entries"]) + sum(len(e.get("members", {})) for e in up["entries"].values())
    print(f"api-compare: {n_checked} upstream names/members checked; "
          f"{n_fail} differences fail, {n_allowed} allowed, {n_info} extra in ours (info"
          f"{'' if args.show_info else '; --show-info lists them'})")
    return 1 if n_fail else 0


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("dump", help="dump the installed cuda.core's surface to JSON")
    d.add_argument("out")
    d.add_argument("--like", help="also dump every path that this other dump holds")
    c = sub.add_parser("compare", help="compare two dumps; exit 1 on a difference not allowed")
    c.add_argument("upstream")
    c.add_argument("ours")
    c.add_argument("--allow", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "api_allowlist.txt"))
    c.add_argument("--json-out", help="also write the table rows as JSON here")
    c.add_argument("--show-info", action="store_true", help="also list members only ours has")
    args = ap.parse_args(argv)
    if args.cmd == "dump":
        dump(args.out, like=args.like)
        return 0
    return main_compare(args)


if __name__ == "__main__":
    sys.exit(main())

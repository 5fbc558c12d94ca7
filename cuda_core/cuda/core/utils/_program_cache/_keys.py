"""The cache key of one ``Program`` compile (:func:`make_program_cache_key`).

One strategy class per ``code_type`` (:class:`_KeyBackend`) says which inputs
reach its compiler, which options the cache must refuse, and which compiler
version pins the key; :func:`make_program_cache_key` validates the request,
picks the strategy and hashes its parts, each as ``label, length, bytes`` so
no two different inputs can run together into the same byte stream.
"""
import abc
import collections.abc
import hashlib
import os
from typing import Any, Callable, Sequence

# _program imports this package only inside Program.compile, so importing
# ProgramOptions here at the top makes no cycle.
from cuda.core._program import ProgramOptions
from cuda.core.typing import SourceCodeType

# Bump when the key derivation changes: later keys never meet older entries.
_KEY_SCHEMA_VERSION = 1
# Keys of this package are not upstream's: the label keeps them apart in a shared directory.
_KEY_FAMILY = b"cuda-core-ipcsafe"

_VALID_CODE_TYPES = ("c++", "nvvm", "ptx")
_VALID_TARGET_TYPES = frozenset({"ptx", "cubin", "ltoir"})
# What Program.compile accepts for each code_type.
_SUPPORTED_TARGETS_BY_CODE_TYPE = {
    "c++": frozenset({"ptx", "cubin", "ltoir"}),
    "ptx": frozenset({"cubin", "ptx"}),
    "nvvm": frozenset({"ptx", "ltoir"}),
}


# How the linker turns each ProgramOptions field it reads (PTX input) into a
# flag; the fingerprint passes every field through the same rule, so inputs
# the linker treats alike (debug=False and None; time=True and "file") hash alike.
def _gate_presence(v: Any) -> bool:
    return v is not None


def _gate_truthy(v: Any) -> bool:
    return bool(v)


def _gate_is_true(v: Any) -> bool:
    return v is True


def _gate_tristate_bool(v: Any) -> bool | None:
    return None if v is None else bool(v)


def _gate_identity(v: Any) -> Any:
    return v


def _gate_ptxas_options(v: Any) -> Any:
    """One -Xptxas flag per item, in order (ptxas flags can depend on order); "" or [] is no flag."""
    if v is None:
        return None
    if isinstance(v, str):
        return (f"-Xptxas={v}",)
    if isinstance(v, collections.abc.Sequence):
        return tuple(f"-Xptxas={s}" for s in v) or None
    return v


_LINKER_FIELD_GATES = {
    "name": _gate_identity,
    "arch": _gate_identity,
    "max_register_count": _gate_identity,
    "time": _gate_presence,
    "link_time_optimization": _gate_truthy,
    "debug": _gate_truthy,
    "lineinfo": _gate_truthy,
    "ftz": _gate_tristate_bool,
    "prec_div": _gate_tristate_bool,
    "prec_sqrt": _gate_tristate_bool,
    "fma": _gate_tristate_bool,
    "split_compile": _gate_identity,
    "ptxas_options": _gate_ptxas_options,
    "no_cache": _gate_is_true,
}

# Fields the driver linker ignores (with a DeprecationWarning): one placeholder each under it.
_DRIVER_IGNORED_LINKER_FIELDS = frozenset({"ftz", "prec_div", "prec_sqrt", "fma"})
# Fields the driver linker refuses: no key for a compile that cannot succeed here.
_DRIVER_LINKER_UNSUPPORTED_FIELDS = ("time", "ptxas_options", "split_compile")

# Options that make NVRTC read files whose contents the key cannot see: they need extra_digest.
_EXTERNAL_CONTENT_OPTIONS = ("include_path", "pre_include", "pch", "use_pch", "pch_dir")
# Options whose effect is a file written during the compile, which a hit would skip: refused.
_SIDE_EFFECT_OPTIONS = ("create_pch", "time", "fdevice_time_trace")
_BOOLEAN_OPTION_FIELDS = frozenset({"pch"})
_STR_OR_SEQUENCE_OPTION_FIELDS = frozenset({"include_path", "pre_include"})


def _linker_option_fingerprint(options: ProgramOptions, *, use_driver_linker: bool | None) -> list[bytes]:
    """The linker-read fields of ``options``, each through its gate (driver-ignored ones collapsed
    when the driver linker is known to be used)."""
    parts = []
    for name, gate in _LINKER_FIELD_GATES.items():
        if use_driver_linker is True and name in _DRIVER_IGNORED_LINKER_FIELDS:
            parts.append(f"{name}=<driver-ignored>".encode())
        else:
            parts.append(f"{name}={gate(getattr(options, name, None))!r}".encode())
    return parts


def _driver_version() -> int:
    """The driver's version as cuDriverGetVersion reports it (13000 for 13.0)."""
    from cuda.core._utils.version import driver_version

    major, minor = driver_version()[:2]
    return int(major) * 1000 + int(minor) * 10


def _nvrtc_version() -> tuple[int, int]:
    """NVRTC's (major, minor); loads NVRTC (NVRTCError when it cannot)."""
    from cuda.core._program import _nvrtc_version as loaded_nvrtc_version

    major, minor = loaded_nvrtc_version()
    return int(major), int(minor)


def _linker_backend_and_version(use_driver: bool) -> tuple[str, str]:
    """``(backend, version)`` of the linker that compiles PTX: the driver's version for the
    driver linker, nvJitLink's otherwise (its output does not depend on the driver)."""
    if use_driver:
        return ("driver", str(_driver_version()))
    from cuda.core._linker import _loaded_nvjitlink_version

    major, minor = _loaded_nvjitlink_version()
    return ("nvJitLink", f"{major}.{minor}")


def _nvvm_fingerprint() -> str:
    """libNVVM's identity: its version and the NVVM IR version it reads, as the module
    ``cuda.core._program._get_nvvm_module()`` reports them (upstream's source; it loads
    libNVVM, RuntimeError where NVVM is not available, as ``Program(code_type="nvvm")`` raises)."""
    from cuda.core import _program

    nvvm = _program._get_nvvm_module()
    version = tuple(nvvm.version())
    ir = tuple(nvvm.ir_version())
    return f"lib={'.'.join(str(v) for v in version)};ir={'.'.join(str(v) for v in ir)}"


def _option_is_set(options: ProgramOptions, name: str) -> bool:
    """Whether NVRTC would act on field ``name`` (the same test the option spelling applies)."""
    value = getattr(options, name, None)
    if value is None:
        return False
    if name in _BOOLEAN_OPTION_FIELDS:
        return bool(value)
    if name in _STR_OR_SEQUENCE_OPTION_FIELDS:
        if isinstance(value, (str, os.PathLike)):
            return True
        return isinstance(value, collections.abc.Sequence) and len(value) > 0
    return True


def _hash_probe_failure(update: Callable[[str, bytes], None], label: str, exc: BaseException) -> None:
    """Mix a failed version probe in: the exception's class only, so every process that fails
    the same way gets the same key, and never the key of a working toolchain."""
    update(f"{label}_probe_failed", type(exc).__name__.encode())


class _KeyBackend(abc.ABC):
    """How one code_type contributes to a key (one instance per make_program_cache_key call)."""

    @abc.abstractmethod
    def validate(self, options: ProgramOptions, target_type: str, extra_digest: bytes | None) -> None:
        """Raise ValueError for inputs a key cannot represent safely."""

    def encode_code(self, code: object, code_type: str) -> bytes:
        """The source as bytes: str only (bytes are NVVM's)."""
        if isinstance(code, str):
            return code.encode("utf-8")
        if isinstance(code, (bytes, bytearray)):
            raise TypeError(f"code must be str for code_type={code_type!r}; bytes/bytearray are only "
                            f"accepted for code_type='nvvm'.")
        raise TypeError(f"code must be str or bytes, got {type(code).__name__}")

    @abc.abstractmethod
    def option_fingerprint(self, options: ProgramOptions, target_type: str) -> list[bytes]:
        """The options as the compiler receives them."""

    def encode_name_expressions(self, name_expressions: Sequence[Any]) -> tuple[bytes, ...] | None:  # noqa: ARG002
        """The name expressions (sorted, typed), or None where the compiler ignores them."""
        return None

    @abc.abstractmethod
    def hash_version_probe(self, update: Callable[[str, bytes], None]) -> None:
        """Mix the compiler's version in (or the probe's failure)."""

    def hash_extra_payload(self, options: ProgramOptions, update: Callable[[str, bytes], None]) -> None:  # noqa: B027
        """Mix anything else the compiler reads; nothing by default."""


class _NvrtcBackend(_KeyBackend):
    def validate(self, options, target_type, extra_digest):  # noqa: ARG002
        side_effects = [n for n in _SIDE_EFFECT_OPTIONS if _option_is_set(options, n)]
        if side_effects:
            raise ValueError(
                f"make_program_cache_key() refuses to build a key for options that have compile-time side "
                f"effects ({', '.join(side_effects)}); a cache hit skips compilation, so the side effect "
                f"would not occur. Disable the option, or compile directly without the cache.")
        if getattr(options, "extra_sources", None) is not None:
            raise ValueError("extra_sources is only valid for code_type='nvvm'; Program() rejects it for "
                             "code_type='c++'.")
        if extra_digest is not None:
            return
        external = [n for n in _EXTERNAL_CONTENT_OPTIONS if _option_is_set(options, n)]
        if external:
            raise ValueError(
                f"make_program_cache_key() refuses to build a key for options that pull in external file "
                f"content ({', '.join(external)}) without an extra_digest; compute a digest over the "
                f"header/PCH bytes the compile will read and pass it as extra_digest=...")
        name = getattr(options, "name", None)
        if isinstance(name, str) and ("/" in name or "\\" in name):
            raise ValueError(
                f"make_program_cache_key() refuses to build a key for options.name={name!r} (NVRTC "
                f"source-filename with a directory component) without an extra_digest; NVRTC resolves "
                f"quoted #include directives relative to that directory, so a digest covering the headers "
                f"it may pull in must be supplied.")

    def option_fingerprint(self, options, target_type):
        return options.as_bytes("nvrtc", target_type)

    def encode_name_expressions(self, name_expressions):
        def tag(n):
            if isinstance(n, bytes):
                return b"b:" + n
            if isinstance(n, str):
                return b"s:" + n.encode("utf-8")
            if isinstance(n, bytearray):
                raise TypeError("name_expressions elements must be str or bytes; bytearray is not accepted "
                                "because Program.compile uses each element as a dict key and bytearray is "
                                "unhashable.")
            raise TypeError(f"name_expressions elements must be str or bytes; got {type(n).__name__}")

        return tuple(sorted(tag(n) for n in name_expressions))

    def hash_version_probe(self, update):
        try:
            major, minor = _nvrtc_version()
        except Exception as exc:
            _hash_probe_failure(update, "nvrtc", exc)
            return
        update("nvrtc", f"{major}.{minor}".encode("ascii"))


_DECISION_UNSET = object()


class _LinkerBackend(_KeyBackend):
    """PTX input: the Linker compiles it; one backend decision serves the whole key."""

    def __init__(self) -> None:
        self._cached_decision = _DECISION_UNSET
        self._cached_decision_exc = None

    def _decide_driver(self) -> bool | None:
        """True: the driver linker; False: nvJitLink; None: the probe failed."""
        if self._cached_decision is _DECISION_UNSET:
            try:
                from cuda.core._linker import _decide_nvjitlink_or_driver

                self._cached_decision = bool(_decide_nvjitlink_or_driver())
            except Exception as exc:
                self._cached_decision = None
                self._cached_decision_exc = exc
        return self._cached_decision

    def validate(self, options, target_type, extra_digest):  # noqa: ARG002
        if getattr(options, "extra_sources", None) is not None:
            raise ValueError("extra_sources is only valid for code_type='nvvm'; Program() rejects it for "
                             "code_type='ptx'.")
        if self._decide_driver() is True:
            unsupported = [n for n in _DRIVER_LINKER_UNSUPPORTED_FIELDS if getattr(options, n, None) is not None]
            if unsupported:
                raise ValueError(
                    f"the cuLink driver linker does not support these options: {', '.join(unsupported)}; "
                    f"Program.compile() would reject this configuration before producing an ObjectCode.")

    def option_fingerprint(self, options, target_type):  # noqa: ARG002
        return _linker_option_fingerprint(options, use_driver_linker=self._decide_driver())

    def hash_version_probe(self, update):
        use_driver = self._decide_driver()
        if use_driver is None:
            _hash_probe_failure(update, "linker", self._cached_decision_exc)
            return
        try:
            backend, version = _linker_backend_and_version(use_driver)
        except Exception as exc:
            _hash_probe_failure(update, "linker", exc)
            return
        update("linker_backend", backend.encode("ascii"))
        update("linker_version", version.encode("ascii"))


class _NvvmBackend(_KeyBackend):
    def encode_code(self, code, code_type):  # noqa: ARG002
        if isinstance(code, str):
            return code.encode("utf-8")
        if isinstance(code, (bytes, bytearray)):
            return bytes(code)
        raise TypeError(f"code must be str or bytes, got {type(code).__name__}")

    def validate(self, options, target_type, extra_digest):  # noqa: ARG002
        if extra_digest is None and getattr(options, "use_libdevice", None):
            raise ValueError(
                "make_program_cache_key() refuses to build an NVVM key with use_libdevice=True and no "
                "extra_digest: the linked libdevice bitcode can change out from under a cached ObjectCode. "
                "Pass an extra_digest that fingerprints the libdevice file you intend to link against, or "
                "disable use_libdevice.")

    def option_fingerprint(self, options, target_type):
        return options.as_bytes("nvvm", target_type)

    def hash_version_probe(self, update):
        try:
            fingerprint = _nvvm_fingerprint()
        except Exception as exc:
            _hash_probe_failure(update, "nvvm", exc)
            return
        update("nvvm", fingerprint.encode("ascii"))

    def hash_extra_payload(self, options, update):
        extra_sources = getattr(options, "extra_sources", None)
        if extra_sources:
            # in the caller's order: NVVM's module linking can depend on it
            update("extra_sources_count", str(len(extra_sources)).encode("ascii"))
            for item in extra_sources:
                if isinstance(item, (tuple, list)) and len(item) == 2:
                    name, src = item
                    update("extra_source_name", str(name).encode("utf-8"))
                    if isinstance(src, (bytes, bytearray)):
                        update("extra_source_code", bytes(src))
                    else:
                        update("extra_source_code", str(src).encode("utf-8"))
                else:
                    update("extra_source", str(item).encode("utf-8"))
        if getattr(options, "use_libdevice", None):
            update("use_libdevice", b"1")


_BACKENDS_BY_CODE_TYPE = {"c++": _NvrtcBackend, "ptx": _LinkerBackend, "nvvm": _NvvmBackend}


def make_program_cache_key(
    *,
    code: str | bytes,
    code_type: str,
    options: ProgramOptions,
    target_type: str,
    name_expressions: Sequence[str | bytes | bytearray] = (),
    extra_digest: bytes | None = None,
) -> bytes:
    """Build a stable cache key (32 bytes, SHA-256) from compile inputs.

    Parameters
    ----------
    code:
        Source text (``str``, UTF-8 encoded); ``bytes`` only for ``"nvvm"``.
    code_type:
        One of ``"c++"``, ``"ptx"``, ``"nvvm"`` (any case).
    options:
        A :class:`cuda.core.ProgramOptions` (its ``arch`` set, as its constructor does).
    target_type:
        One of ``"ptx"``, ``"cubin"``, ``"ltoir"`` (any case), valid for ``code_type``.
    name_expressions:
        Names to look up after an NVRTC compile; order does not matter, ``"f"`` and
        ``b"f"`` are different keys (``bytearray`` is refused). Ignored for PTX and NVVM.
    extra_digest:
        Caller-supplied bytes mixed into the key. Required when ``options`` makes the
        compiler read files the key cannot see (``include_path``, ``pre_include``,
        ``pch``, ``use_pch``, ``pch_dir``, NVVM ``use_libdevice=True``, or an NVRTC
        ``options.name`` with a directory part): fingerprint those files here.

    Returns
    -------
    bytes
        An opaque digest of the code, code_type, target_type, the options as the
        compiler sees them, the compiler's version (NVRTC; for PTX the linker
        backend and its version, and the driver's when the driver links),
        ``options.name``, the name expressions and ``extra_digest``.

    Raises
    ------
    ValueError
        For an unknown or mismatched code_type / target_type; for options with
        compile-time side effects (``create_pch``, ``time``, ``fdevice_time_trace``),
        which a hit would skip; for options that read external files without an
        ``extra_digest``; for options the selected linker rejects.
    TypeError
        For code or name expressions of the wrong type.

    Examples
    --------
    Most callers pass ``cache=`` to :meth:`cuda.core.Program.compile` instead::

        with FileStreamProgramCache() as cache:
            obj = Program(source, "c++", options=options).compile("cubin", cache=cache)

    With headers on ``include_path``::

        key = make_program_cache_key(code=source, code_type="c++", options=options,
                                     target_type="cubin",
                                     extra_digest=fingerprint_headers(options.include_path))
        data = cache.get(key)
        obj = ObjectCode.from_cubin(data) if data is not None else Program(source, "c++", options).compile("cubin")
    """
    code_type = code_type.lower() if isinstance(code_type, str) else code_type
    target_type = target_type.lower() if isinstance(target_type, str) else target_type
    if code_type not in _VALID_CODE_TYPES:
        SourceCodeType(code_type)   # upstream's ValueError: "'fortran' is not a valid SourceCodeType"
        raise ValueError(f"code_type={code_type!r} is not supported (must be one of "
                         f"{', '.join(repr(c) for c in _VALID_CODE_TYPES)})")
    if target_type not in _VALID_TARGET_TYPES:
        raise ValueError(f"target_type={target_type!r} is not supported by the program cache (must be "
                         f"{', '.join(repr(t) for t in sorted(_VALID_TARGET_TYPES))})")
    supported = _SUPPORTED_TARGETS_BY_CODE_TYPE[code_type]
    if target_type not in supported:
        raise ValueError(f"target_type={target_type!r} is not valid for code_type={code_type!r} (supported: "
                         f"{sorted(supported)}). Program.compile() rejects this combination, so caching a key "
                         f"for it is meaningless.")
    if not isinstance(options, ProgramOptions):
        raise TypeError(f"options must be a ProgramOptions, not {type(options).__name__}")
    if extra_digest is not None and not isinstance(extra_digest, (bytes, bytearray, memoryview)):
        raise TypeError(f"extra_digest must be bytes or None, not {type(extra_digest).__name__}")
    if isinstance(name_expressions, (str, bytes)) or not isinstance(name_expressions, collections.abc.Iterable):
        raise TypeError("name_expressions must be a sequence of str or bytes")

    backend = _BACKENDS_BY_CODE_TYPE[code_type]()
    backend.validate(options, target_type, extra_digest)
    code_bytes = backend.encode_code(code, code_type)
    option_bytes = backend.option_fingerprint(options, target_type)
    name_tags = backend.encode_name_expressions(tuple(name_expressions))

    hasher = hashlib.sha256(usedforsecurity=False)

    def update(label: str, payload: bytes) -> None:
        hasher.update(label.encode("ascii"))
        hasher.update(len(payload).to_bytes(8, "big"))
        hasher.update(payload)

    update("family", _KEY_FAMILY)
    update("schema", str(_KEY_SCHEMA_VERSION).encode("ascii"))
    backend.hash_version_probe(update)
    update("code_type", code_type.encode("ascii"))
    update("target_type", target_type.encode("ascii"))
    update("code", code_bytes)
    update("option_count", str(len(option_bytes)).encode("ascii"))
    for opt in option_bytes:
        update("option", bytes(opt))
    if name_tags is not None:
        update("names_count", str(len(name_tags)).encode("ascii"))
        for tag in name_tags:
            update("name", tag)
    backend.hash_extra_payload(options, update)
    # Program.compile gives options.name to the ObjectCode: a hit must carry the right one.
    name = getattr(options, "name", None)
    if name is not None:
        update("options_name", str(name).encode("utf-8"))
    if extra_digest is not None:
        update("extra_digest", bytes(extra_digest))
    return hasher.digest()

"""Every public class, method and property of cuda.core carries a real
docstring: text beyond the signature line that Cython's embedsignature writes
first (the API reference, docs/, is built from these with autodoc)."""
import inspect
import re

import pytest

pytestmark = pytest.mark.no_driver_ok

_DESCRIPTOR_TYPES = (property, classmethod, staticmethod, type(int.real), type(str.join), type(int.__dict__["from_bytes"]))


def _documentable(value):
    return inspect.isroutine(value) or isinstance(value, _DESCRIPTOR_TYPES) or inspect.isdatadescriptor(value)


def public_api():
    """(qualified name, object) for every public class, function, method and
    property reachable from cuda.core.__all__, inherited ones included (under
    the public class that first exposes them)."""
    import cuda.core

    public = [getattr(cuda.core, name) for name in cuda.core.__all__]
    public_classes = {id(obj) for obj in public if inspect.isclass(obj)}
    seen = set()
    for name in cuda.core.__all__:
        obj = getattr(cuda.core, name)
        if not inspect.isclass(obj) and not inspect.isroutine(obj):
            if id(type(obj)) in public_classes:
                continue                          # the default streams: Stream is walked
            obj = type(obj)                       # `system`: its (private) class, under its public name
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        yield name, obj
        if not inspect.isclass(obj):
            continue
        for attr in sorted(dir(obj)):
            if attr.startswith("_"):
                continue
            owner = next(k for k in obj.__mro__ if attr in vars(k))
            if owner is object or owner.__module__ == "builtins":
                continue
            if owner is not obj and id(owner) in public_classes:
                continue                          # listed under that public class
            value = vars(owner)[attr]
            if _documentable(value):
                yield f"{name}.{attr}", value


def real_text(qualname, obj):
    """The docstring without an embedded signature line ("name(args) -> ret")."""
    doc = obj.__doc__ if not isinstance(obj, (classmethod, staticmethod)) else obj.__func__.__doc__
    if not isinstance(doc, str):
        return ""
    lines = inspect.cleandoc(doc).splitlines()
    short = re.escape(qualname.rsplit(".", 1)[-1])
    if lines and re.match(rf"^(\w+\.)*{short}\s*\(.*\)\s*(->.*)?$", lines[0].strip()):
        lines = lines[1:]
    return "\n".join(lines).strip()


def test_the_walk_finds_methods_and_properties():
    names = dict(public_api())
    for expected in ("Buffer.from_ipc_descriptor", "Buffer.close", "Device.create_stream", "Stream.sync",
                     "DeviceMemoryResource.get_allocation_handle", "Buffer.size", "Device.device_id"):
        assert expected in names, expected
    assert len(names) > 60


def test_a_signature_line_alone_is_not_a_docstring():
    def sync(self): ...
    sync.__doc__ = "sync(self)"
    assert real_text("Stream.sync", sync) == ""
    sync.__doc__ = "sync(self) -> None\n\nWait until every operation queued on the stream has completed."
    assert real_text("Stream.sync", sync).startswith("Wait until")


def test_every_public_member_has_a_real_docstring():
    missing = [name for name, obj in public_api() if len(real_text(name, obj).split()) < 3]
    assert missing == [], f"{len(missing)} public names without a real docstring:\n  " + "\n  ".join(missing)


def test_the_api_reference_lists_every_public_name():
    """docs/api.rst (built by ci/docs.sh) has an entry for each name in
    cuda.core.__all__, so a class added to the package reaches the reference."""
    from pathlib import Path

    import cuda.core

    api = Path(__file__).resolve().parents[1] / "docs" / "api.rst"
    if not api.is_file():
        pytest.skip("docs/api.rst is not beside the tests (an sdist without docs/)")
    text = api.read_text()
    listed = set(re.findall(r"^\.\. auto(?:class|exception|function):: cuda\.core\.(\w+)\s*$", text, flags=re.M))
    listed |= set(re.findall(r"^\.\. data:: (\w+)\s*$", text, flags=re.M))
    missing = sorted(set(cuda.core.__all__) - listed)
    assert missing == [], f"docs/api.rst does not list: {', '.join(missing)}"

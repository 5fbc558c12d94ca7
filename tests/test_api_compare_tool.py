"""ci/api_compare.py itself: the comparison flags what differs, the allow-list
lets through only what it names (with a reason), and stub signatures are read
by parameter names, kinds and defaults. No upstream package is needed: the
dumps here are small hand-made ones; the real run is the api_compare nox session."""
import ast
import importlib.util
import json
from pathlib import Path

import pytest

pytestmark = pytest.mark.no_driver_ok

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("api_compare", ROOT / "ci" / "api_compare.py")
api_compare = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(api_compare)


def _cls(module, members, same_as=None):
    return {"kind": "class", "module": module, "qualname": "Buffer", "bases": [], "is_exception": False,
            "members": members, "same_as": same_as}


def _meth(sig, kind="method"):
    return {"kind": kind, "signature": sig}


UP_SIG = [["size", "POSITIONAL_OR_KEYWORD", None], ["stream", "KEYWORD_ONLY", None]]


def _dumps(ours_members, ours_module="cuda.core._memory._buffer"):
    up = {"modules": {}, "entries": {"cuda.core.Buffer": _cls("cuda.core._memory._buffer", {
        "allocate": _meth(UP_SIG), "size": {"kind": "property", "setter": False},
        "from_handle": _meth([["ptr", "POSITIONAL_OR_KEYWORD", None]], "staticmethod")})}}
    ours = {"modules": {}, "entries": {"cuda.core.Buffer": _cls(ours_module, ours_members)}}
    return up, ours


def _fails(rows):
    return sorted((r[0], r[1]) for r in rows if r[4])


def test_identical_surface_has_no_difference():
    up, ours = _dumps({"allocate": _meth(UP_SIG), "size": {"kind": "attribute", "setter": None},
                       "from_handle": _meth([["ptr", "POSITIONAL_OR_KEYWORD", None]], "staticmethod")})
    assert _fails(api_compare.compare(up, ours)) == []


def test_each_kind_of_difference_is_flagged():
    up, ours = _dumps({"allocate": _meth([["size", "POSITIONAL_OR_KEYWORD", None],
                                          ["stream", "KEYWORD_ONLY", "None"]]),  # stream became optional
                       "size": {"kind": "property", "setter": True},               # became settable
                       "extra_thing": _meth([])},                                   # only ours: info
                      ours_module="cuda.core._core")                               # wrong __module__
    rows = api_compare.compare(up, ours)
    assert _fails(rows) == [
        ("cuda.core.Buffer", "module"),
        ("cuda.core.Buffer.allocate", "signature"),
        ("cuda.core.Buffer.from_handle", "member-missing"),
        ("cuda.core.Buffer.size", "setter"),
    ]
    assert [r[:2] for r in rows if not r[4]] == [["cuda.core.Buffer.extra_thing", "extra"]]


def test_missing_entry_and_module_import_are_flagged():
    up = {"modules": {"cuda.core._memory._ipc": {"imports": True, "__all__": ["X"]}},
          "entries": {"cuda.core._memory._ipc.IPCBufferDescriptor": {"kind": "class", "module": "m", "qualname": "q",
                                                                      "members": {}}}}
    ours = {"modules": {"cuda.core._memory._ipc": {"imports": False, "error": "ModuleNotFoundError"}},
            "entries": {"cuda.core._memory._ipc.IPCBufferDescriptor": {"kind": "missing", "error": "no module"}}}
    assert _fails(api_compare.compare(up, ours)) == [
        ("cuda.core._memory._ipc", "module-import"),
        ("cuda.core._memory._ipc.IPCBufferDescriptor", "missing"),
    ]


def test_stub_ellipsis_default_matches_any_default_but_not_a_required_parameter():
    a = [["mr", "POSITIONAL_OR_KEYWORD", "..."]]
    assert api_compare._sig_equal(a, [["mr", "POSITIONAL_OR_KEYWORD", "None"]])
    assert not api_compare._sig_equal(a, [["mr", "POSITIONAL_OR_KEYWORD", None]])
    assert not api_compare._sig_equal(a, [["mr", "KEYWORD_ONLY", "None"]])
    assert not api_compare._sig_equal(a, [["memory_resource", "POSITIONAL_OR_KEYWORD", "None"]])
    assert not api_compare._sig_equal([["n", "POSITIONAL_OR_KEYWORD", "0"]], [["n", "POSITIONAL_OR_KEYWORD", "1"]])
    # The names of *args / **kwargs are invisible to callers; their kinds are not.
    assert api_compare._sig_equal([["arg", "VAR_POSITIONAL", None]], [["args", "VAR_POSITIONAL", None]])
    assert not api_compare._sig_equal([["args", "VAR_POSITIONAL", None]], [["args", "VAR_KEYWORD", None]])


def test_stub_parsing_reads_names_kinds_defaults_and_dataclass_fields():
    tree = ast.parse(
        "from dataclasses import dataclass\n"
        "@dataclass\nclass Opts:\n    ipc_enabled: bool = False\n    max_size: int = 0\n"
        "class R:\n    def f(self, a, /, b: int = 3, *args, c: str = 'x', d, **kw) -> None: ...\n")
    opts, r = tree.body[1], tree.body[2]
    assert api_compare._dataclass_init_from_ast(opts) == [
        ["ipc_enabled", "POSITIONAL_OR_KEYWORD", "False"], ["max_size", "POSITIONAL_OR_KEYWORD", "0"]]
    assert api_compare._drop_bound(api_compare._params_from_ast(r.body[0])) == [
        ["a", "POSITIONAL_ONLY", None], ["b", "POSITIONAL_OR_KEYWORD", "3"], ["args", "VAR_POSITIONAL", None],
        ["c", "KEYWORD_ONLY", "'x'"], ["d", "KEYWORD_ONLY", None], ["kw", "VAR_KEYWORD", None]]


def test_allowlist_needs_a_reason_and_a_known_aspect(tmp_path):
    good = tmp_path / "good.txt"
    good.write_text("# comment\n\ncuda.core.Device.create_* member-missing -- graphs are out of scope\n")
    (entry,) = api_compare.load_allowlist(str(good))
    assert entry["pattern"] == "cuda.core.Device.create_*" and entry["reason"] == "graphs are out of scope"
    for bad in ("cuda.core.X member-missing\n", "cuda.core.X bogus -- why\n", "cuda.core.X member-missing -- \n"):
        p = tmp_path / "bad.txt"
        p.write_text(bad)
        with pytest.raises(SystemExit):
            api_compare.load_allowlist(str(p))


def test_main_exit_code_follows_allowlist(tmp_path, capsys):
    up, ours = _dumps({"allocate": _meth(UP_SIG), "size": {"kind": "property", "setter": False}})
    (tmp_path / "up.json").write_text(json.dumps(up))
    (tmp_path / "ours.json").write_text(json.dumps(ours))
    empty = tmp_path / "empty.txt"
    empty.write_text("")
    allow = tmp_path / "allow.txt"
    allow.write_text("cuda.core.Buffer.from_handle member-missing -- deliberately absent (test)\n")
    args = ["compare", str(tmp_path / "up.json"), str(tmp_path / "ours.json"), "--allow"]
    assert api_compare.main(args + [str(empty)]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert api_compare.main(args + [str(allow)]) == 0
    out = capsys.readouterr().out
    assert "allowed" in out and "0 differences fail" in out

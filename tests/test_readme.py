"""The README (also the package's long description) stands alone: its links
resolve inside the repository, and it names what a new user needs."""
import re
from importlib import metadata
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.no_driver_ok

LINK = re.compile(r"\]\(([^)\s]+)\)")


def _anchor(heading):
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


@pytest.mark.parametrize("doc", ["README.md", "CHANGELOG.md", "bench/README.md"])
def test_links_resolve_inside_the_repository(doc):
    text = (ROOT / doc).read_text()
    anchors = {_anchor(h) for h in re.findall(r"^#+ (.+)$", text, flags=re.M)}
    bad = []
    for target in LINK.findall(text):
        if target.startswith(("http://", "https://")):
            continue
        path, _, frag = target.partition("#")
        if not path:
            if frag not in anchors:
                bad.append(target)
            continue
        resolved = ((ROOT / doc).parent / path).resolve()
        if ROOT not in resolved.parents or not resolved.exists():
            bad.append(target)
    assert bad == [], f"{doc}: links that do not resolve inside the repository: {bad}"


def test_readme_names_the_requirements_and_the_two_commands():
    text = (ROOT / "README.md").read_text()
    for needed in ("clang", "Python.h", "GoogleTest", "CMake", "cuda.h", "nvidia-cuda-runtime",
                   "bash ci/main_job.sh", "bash ci/test.sh", "__ipcsafe_version__", "pip uninstall"):
        assert needed in text, needed
    assert "## Status (" not in text   # the dated log lives in CHANGELOG.md


@pytest.mark.ours_only
def test_installed_metadata_points_nowhere_outside_the_repository():
    meta = metadata.metadata("cuda-core-ipcsafe")
    description = meta.get_payload() or meta.get("Description", "")
    assert "cuda-core-ipcsafe" in description
    assert "](../" not in description and "../shared" not in description
    assert not [v for k, v in meta.items() if k in ("Home-page", "Project-URL", "Download-URL")]


def _default_sessions():
    """noxfile.py's nox.options.sessions (what `nox -l` marks as default), read without importing nox."""
    import ast

    tree = ast.parse((ROOT / "noxfile.py").read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and ast.unparse(node.targets[0]) == "nox.options.sessions":
            return ast.literal_eval(node.value)
    raise AssertionError("noxfile.py sets no nox.options.sessions")


def test_the_sessions_table_names_every_default_session():
    text = (ROOT / "README.md").read_text()
    table = text[text.index("| nox session | what it checks |"):]
    table = table[:table.index("\n\n")]
    named = set()
    for row in table.splitlines()[2:]:
        named |= set(re.findall(r"`([^`]+)`", row.split("|")[1]))
    missing = [s for s in _default_sessions() if s not in named]
    assert missing == [], f"default nox sessions the README's table does not name: {missing}"


def test_the_wheel_name_the_readme_gives_is_the_one_built():
    text = (ROOT / "README.md").read_text()
    shown = re.search(r"-> dist/(cuda_core_ipcsafe-\S+\.whl)", text)
    assert shown, "the README names no wheel after `bash ci/nox.sh -s wheel`"
    pattern = re.escape(shown.group(1)).replace(re.escape("<version>"), r"[^-]+").replace("cp3XX", r"cp3\d+")
    built = sorted((ROOT / "dist").glob("cuda_core_ipcsafe-*.whl"))
    if not built:
        pytest.skip("no wheel in dist/ (the wheel session builds it)")
    assert [w.name for w in built if not re.fullmatch(pattern, w.name)] == [], (shown.group(1), built)


def test_the_readme_names_the_runtime_dependencies():
    declared = re.search(r"^dependencies = \[(.*)\]", (ROOT / "pyproject.toml").read_text(), re.M).group(1)
    text = (ROOT / "README.md").read_text()
    assert "no runtime dependencies" not in text
    for dist in re.findall(r'"([A-Za-z0-9_.-]+)', declared):
        assert f"runtime dependency, {dist}" in text or f"runtime dependencies, {dist}" in text, dist

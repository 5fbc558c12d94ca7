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

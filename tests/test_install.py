"""What `cuda.core` says about itself: its versions, and an install mixed with
NVIDIA's cuda-core (the end-to-end mixed install, with both real wheels in a
scratch venv, is the mixed_install nox session)."""
from importlib import metadata

import pytest

pytestmark = [pytest.mark.no_driver_ok, pytest.mark.ours_only]


def test_version_is_the_upstream_api_level_and_ours_is_separate():
    import cuda.core

    assert cuda.core.__version__ == "1.2.2"
    # what upstream-gated code does with it
    assert tuple(int(x) for x in cuda.core.__version__.split(".")) >= (1, 2)
    assert cuda.core.__ipcsafe_version__ == metadata.version("cuda-core-ipcsafe")
    assert cuda.core.__ipcsafe_version__ != cuda.core.__version__


def _fake_dist(site, name, version, direct_url=None):
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
    if direct_url:
        (info / "direct_url.json").write_text('{"url": "%s", "archive_info": {}}' % direct_url)


def test_mixed_install_names_both_distributions_and_the_fix(tmp_path):
    from cuda.core._ipcsafe import mixed_install_message

    _fake_dist(tmp_path, "cuda-core-ipcsafe", "0.1.0", "file:///w/dist/cuda_core_ipcsafe-0.1.0.whl")
    _fake_dist(tmp_path, "cuda-core", "1.2.2")
    msg = mixed_install_message(str(tmp_path), python="/v/bin/python")
    assert msg is not None
    assert "cuda-core-ipcsafe 0.1.0" in msg and "NVIDIA's cuda-core 1.2.2" in msg
    assert str(tmp_path / "cuda" / "core") in msg
    assert ("/v/bin/python -m pip uninstall -y cuda-core cuda-core-ipcsafe && "
            "/v/bin/python -m pip install '/w/dist/cuda_core_ipcsafe-0.1.0.whl'") in msg
    assert "pip install 'cuda-core[cu13]==1.2.2'" in msg


def test_no_message_without_upstream(tmp_path):
    from cuda.core._ipcsafe import mixed_install_message

    _fake_dist(tmp_path, "cuda-core-ipcsafe", "0.1.0")   # its name starts with cuda_core too
    _fake_dist(tmp_path, "cuda-bindings", "13.0.0")
    assert mixed_install_message(str(tmp_path)) is None


def test_installed_from_an_index_says_the_name(tmp_path):
    from cuda.core._ipcsafe import mixed_install_message

    _fake_dist(tmp_path, "cuda-core-ipcsafe", "0.1.0")
    _fake_dist(tmp_path, "cuda-core", "1.2.0")
    msg = mixed_install_message(str(tmp_path), python="py")
    assert "py -m pip install 'cuda-core-ipcsafe'" in msg and "cuda-core 1.2.0" in msg


def test_import_checks_its_own_directory():
    """The check at import looks where this cuda/core is installed."""
    import os

    import cuda.core
    from cuda.core import _ipcsafe

    assert os.path.join(_ipcsafe._SITE_DIR, "cuda", "core") == os.path.dirname(os.path.abspath(cuda.core.__file__))
    assert _ipcsafe.mixed_install_message() is None


def test_the_check_at_import_is_one_directory_listing():
    """Without upstream installed beside it, importing cuda.core does not import
    importlib.metadata (its import costs more than the rest of cuda.core's)."""
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-c", "import sys, cuda.core; print('importlib.metadata' in sys.modules)"],
                         capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"


def test_egg_info_of_upstream_counts_too(tmp_path):
    from cuda.core._ipcsafe import _lists_upstream_metadata

    assert not _lists_upstream_metadata(str(tmp_path))
    (tmp_path / "cuda_core_ipcsafe-0.1.0.dist-info").mkdir()
    assert not _lists_upstream_metadata(str(tmp_path))
    (tmp_path / "cuda_core.egg-info").mkdir()
    assert _lists_upstream_metadata(str(tmp_path))
    assert not _lists_upstream_metadata(str(tmp_path / "missing"))

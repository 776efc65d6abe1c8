"""scripts/setup.sh runs pip only when something changed: the real script, a real venv and real pip, on
a one-module project laid out like this one. A skipped pip is observed through what it would have
done: a package uninstalled behind the script's back stays uninstalled until the stamp no longer
matches."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

PYPROJECT = """[build-system]
requires = []
build-backend = "probe_backend"
backend-path = ["."]

[project]
name = "setup-stamp-probe"
version = "0.0.1"

[project.optional-dependencies]
extra = []

"""

#: A PEP 517 backend in the project itself, so pip installs it offline with nothing to fetch.
BACKEND = """
import base64, hashlib, pathlib, zipfile

DIST = "setup_stamp_probe-0.0.1"


def _wheel(directory, files):
    name = f"{DIST}-py3-none-any.whl"
    files = {**files,
             f"{DIST}.dist-info/METADATA": "Metadata-Version: 2.1\\nName: setup-stamp-probe\\nVersion: 0.0.1\\n"
                                           "Provides-Extra: extra\\n",
             f"{DIST}.dist-info/WHEEL": "Wheel-Version: 1.0\\nGenerator: probe\\nRoot-Is-Purelib: true\\n"
                                        "Tag: py3-none-any\\n"}
    record = []
    with zipfile.ZipFile(pathlib.Path(directory) / name, "w") as archive:
        for path, text in files.items():
            data = text.encode()
            archive.writestr(path, data)
            digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
            record.append(f"{path},sha256={digest},{len(data)}")
        archive.writestr(f"{DIST}.dist-info/RECORD", "\\n".join([*record, f"{DIST}.dist-info/RECORD,,"]) + "\\n")
    return name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"setup_stamp_probe.py": ""})


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, {"setup_stamp_probe.pth": str(pathlib.Path.cwd()) + "\\n"})
"""


def _setup(project: Path, *extras: str) -> None:
    result = subprocess.run(["bash", "scripts/setup.sh", *extras], cwd=project, capture_output=True, text=True,
                            env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "HOME": str(project)} | _pip_env())
    assert result.returncode == 0, result.stdout + result.stderr


def _pip_env() -> dict[str, str]:
    """Offline and fast: no index at all; the project's own backend builds it."""
    return {"PIP_NO_INDEX": "1", "PIP_NO_BUILD_ISOLATION": "0", "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "PIP_CONFIG_FILE": "/dev/null"}


def _installed(project: Path) -> bool:
    probe = [str(project / ".venv" / "bin" / "python"), "-c", "import setup_stamp_probe"]
    return subprocess.run(probe, cwd=project.parent, capture_output=True).returncode == 0


def _uninstall(project: Path) -> None:
    subprocess.run([str(project / ".venv" / "bin" / "python"), "-m", "pip", "uninstall", "-q", "-y",
                    "setup-stamp-probe"], check=True, capture_output=True, env={**os.environ, **_pip_env()})
    assert not _installed(project)


@pytest.mark.slow
def test_setup_skips_pip_until_pyproject_or_extras_change(tmp_path: Path) -> None:
    project = tmp_path / "project"
    (project / "scripts").mkdir(parents=True)
    shutil.copy(ROOT / "scripts" / "setup.sh", project / "scripts" / "setup.sh")
    (project / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (project / "setup_stamp_probe.py").write_text("", encoding="utf-8")
    (project / "probe_backend.py").write_text(BACKEND, encoding="utf-8")

    _setup(project, "")
    assert _installed(project)
    assert (project / ".venv" / "hindsight-setup.stamp").read_text().splitlines()[1] == "base"

    _uninstall(project)
    _setup(project, "")  # nothing changed: pip does not run, so nothing reinstalls the package
    assert not _installed(project)

    _setup(project, "extra")  # an extra not installed yet: pip runs
    assert _installed(project)
    assert (project / ".venv" / "hindsight-setup.stamp").read_text().splitlines()[1] == "base,extra"

    _uninstall(project)
    _setup(project, "")  # a subset of what is installed: still nothing to do
    assert not _installed(project)

    (project / "pyproject.toml").write_text(PYPROJECT + "\n# changed\n", encoding="utf-8")
    _setup(project, "")  # pyproject.toml changed: pip runs again
    assert _installed(project)

"""A wheel built from the repository holds every package and subpackage, and runs.

Subpackages are found by setuptools, not listed (pyproject.toml); this catches a package
left out of the wheel, which an editable install used by every other test never would.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("eventlog", "projector", "crawler")


def _packages_in_the_tree() -> set[str]:
    return {
        init.parent.relative_to(ROOT).as_posix()
        for top in PACKAGES
        for init in (ROOT / top).rglob("__init__.py")
        if "__pycache__" not in init.parts
    }


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    # No build isolation: the dev extra brings the setuptools the build needs, so no network.
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(out),
            str(ROOT),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if built.returncode != 0 and "setuptools" in built.stderr:
        pytest.skip(f"cannot build the wheel here: {built.stderr.strip().splitlines()[-1]}")
    assert built.returncode == 0, built.stderr
    (found,) = out.glob("crawlog-*.whl")
    return found


def test_the_wheel_holds_every_package_of_the_tree_with_its_type_marker(wheel: Path) -> None:
    names = set(zipfile.ZipFile(wheel).namelist())
    in_wheel = {name.rsplit("/", 1)[0] for name in names if name.endswith("/__init__.py")}
    assert _packages_in_the_tree() <= in_wheel
    assert {f"{top}/py.typed" for top in PACKAGES} <= names


@pytest.mark.timeout(300)
def test_the_installed_wheel_runs_the_command_line_from_its_own_files(
    wheel: Path, tmp_path: Path
) -> None:
    site = tmp_path / "site"
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "install",
            "--no-deps",
            "-q",
            "--target",
            str(site),
            str(wheel),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    env = {**os.environ, "PYTHONPATH": str(site)}
    where = subprocess.run(
        [sys.executable, "-c", "import crawler.cli, crawler.testsite; print(crawler.__file__)"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    assert where.stdout.strip().startswith(str(site))
    for args in (["--help"], ["testsite", "--help"], ["demo", "--help"]):
        ran = subprocess.run(
            [sys.executable, "-m", "crawler.cli", *args],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
        )
        assert ran.returncode == 0, ran.stderr
        assert "Example:" in ran.stdout

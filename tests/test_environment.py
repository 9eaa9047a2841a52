"""environment.yml (conda users) must ask for exactly what pyproject.toml asks for."""

import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent


def _pyproject_requirements() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = set(project["dependencies"]) | set(project["optional-dependencies"]["dev"])
    return {r.replace(" ", "") for r in reqs}


def _conda_pip_requirements() -> set[str]:
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    pip_lists = [d["pip"] for d in env["dependencies"] if isinstance(d, dict) and "pip" in d]
    assert len(pip_lists) == 1, "environment.yml needs exactly one pip: section"
    return {r.replace(" ", "") for r in pip_lists[0] if not r.startswith("-e")}


def test_environment_yml_matches_pyproject():
    missing = _pyproject_requirements() - _conda_pip_requirements()
    extra = _conda_pip_requirements() - _pyproject_requirements()
    assert not missing and not extra, (
        f"environment.yml lacks {sorted(missing)}, has extra {sorted(extra)}"
    )


def test_environment_yml_python_matches_requires_python():
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    python = next(d for d in env["dependencies"] if isinstance(d, str) and d.startswith("python="))
    requires = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["requires-python"]
    version = python.split("=", 1)[1]
    low = requires.split(",")[0].removeprefix(">=")
    assert tuple(map(int, version.split("."))) >= tuple(map(int, low.split(".")))


def test_gpu_extra_is_tensorflow_and_cuda():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert any(r.startswith("tensorflow[and-cuda]") for r in extras["gpu"])


def test_dev_extra_includes_the_fixture_extra():
    extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"][
        "optional-dependencies"
    ]
    assert set(extras["fixture"]) <= set(extras["dev"])

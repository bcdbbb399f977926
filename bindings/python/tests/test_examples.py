"""The programs of examples/: each runs as a user would run it, and they and
the package pass ``mypy --strict``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]  # bindings/python
EXAMPLES = ROOT / "examples"
#: Each example and a line its output holds.
EXPECTED = {
    "quickstart.py": "answer: assistant|Answer in one line: What is libaf?",
    "schema_types.py": "traced: Ticket(title='', severity=1, priority=<Priority.LOW: 'low'>, kind='bug', component='')",
    "batch.py": "2 of 3 items answered",
}


def _env() -> dict[str, str]:
    """This process's environment: the same libaf (LIBAF_LIBRARY when set,
    PYTHONPATH as the tests got it, else the installed package)."""
    return dict(os.environ, PYTHONIOENCODING="utf-8")


def test_every_example_is_run() -> None:
    assert sorted(p.name for p in EXAMPLES.glob("*.py")) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_example_runs(name: str) -> None:
    r = subprocess.run([sys.executable, str(EXAMPLES / name)], capture_output=True, text=True, env=_env(),
                       timeout=120)
    assert r.returncode == 0, f"{name} exited {r.returncode}:\n{r.stdout}\n{r.stderr}"
    assert EXPECTED[name] in r.stdout.splitlines(), r.stdout


def test_examples_and_package_pass_mypy_strict(tmp_path: Path) -> None:
    pytest.importorskip("mypy")
    r = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--cache-dir", str(tmp_path / "mypy_cache"),
         str(EXAMPLES), str(ROOT / "src" / "libaf")],
        capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=300,
    )
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_readme_python_block_runs_as_written() -> None:
    """The top-level README's first Python block, verbatim, with the output
    its comments promise."""
    from conftest import REPO

    readme = (REPO / "README.md").read_text()
    block = readme.split("```python\nimport asyncio\nimport dataclasses")[1].split("```")[0]
    code = "import asyncio\nimport dataclasses" + block
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=_env(), timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.splitlines() == ["Hello, World!?", "Ticket(team='billing', urgency=1, summary='')", "m|hi",
                                     "m|hi"], r.stdout
    assert "1000" in r.stderr  # the progress bar's count of LM calls

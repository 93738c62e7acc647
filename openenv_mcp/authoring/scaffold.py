"""``openenv-mcp init`` and ``openenv-mcp dockerfile``: a new environment package that
works first time, and a container file generated from an environment's manifest.

``init NAME`` writes an installable package (``openenv_mcp/authoring/templates/``): a
pyproject registering the env under the ``openenv_mcp.envs`` entry point, one
env class on the contract with a worked example of each part, a README, tests
(the contract checker and a game through MCP) and a Dockerfile. The Dockerfile
is rendered whole from the manifest (:func:`dockerfile`), never patched.
"""

from __future__ import annotations

import importlib.util
import json
import keyword
import re
from importlib import resources
from pathlib import Path
from string import Template
from typing import Literal

from openenv_mcp.authoring.manifest import FORMAT, Manifest
from openenv_mcp.errors import ArgumentError
from openenv_mcp.registry import env_extra, env_names

__all__ = ["KINDS", "Kind", "dockerfile", "init_package"]

Kind = Literal["discrete", "text", "continuous", "frames"]
#: What each kind of template is, for ``init --help``.
KINDS: dict[str, str] = {
    "discrete": "named discrete actions (a corridor to walk; one MCP tool per action)",
    "text": "text actions and observations (guess the number; what a language model plays)",
    "continuous": "a Box action and observation (steer a point to a target)",
    "frames": "discrete actions, the observation an RGB image (sent as PNG frames)",
}
#: The action a generated test sends, per kind.
_SAMPLE = {
    "discrete": "env.action_space.sample()",
    "continuous": "env.action_space.sample()",
    "frames": "env.action_space.sample()",
    "text": "str(step * 7)",
}
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def _template(name: str) -> Template:
    text = resources.files("openenv_mcp.authoring").joinpath("templates", name).read_text()
    return Template(text)


def _check_name(name: str) -> None:
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        suggestion = re.sub(r"[^a-z0-9_]", "_", name.lower()).strip("_") or "my_env"
        if not suggestion[0].isalpha():
            suggestion = f"env_{suggestion}"
        raise ArgumentError(
            f"an environment name is a lower-case Python identifier (letters, digits, _; "
            f"it names the package, the entry point and the tools' server), got {name!r}: "
            f"try {suggestion!r}"
        )


def _check_free(name: str) -> None:
    """The new package's name is no installed module's (it would shadow one, or be
    shadowed: OpenEnv's env packages take names like ``atari_env``) and no registered
    environment's (its entry point would collide)."""
    if name in env_names():
        raise ArgumentError(
            f"{name!r} is an environment here already (openenv-mcp list): choose another "
            f"name, e.g. 'my_{name}'"
        )
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        spec = None
    if spec is not None:
        where = spec.origin if spec.origin not in (None, "built-in", "frozen") else "built in"
        raise ArgumentError(
            f"a module named {name!r} is installed here ({where}): a package of that name "
            f"would shadow it or be shadowed by it; choose another name, e.g. 'my_{name}'"
        )


def init_package(name: str, directory: Path | None = None, kind: Kind = "discrete") -> list[Path]:
    """Write a new environment package ``name`` into ``directory`` (default ``./NAME``).

    Returns:
        The files written, in order.

    Raises:
        ArgumentError: a name that is not a lower-case identifier or is taken (an
            installed module's, a registered environment's), an unknown kind, or a
            directory that exists and is not empty.
    """
    from openenv_mcp._util.version import __version__

    _check_name(name)
    _check_free(name)
    if kind not in KINDS:
        raise ArgumentError(f"kind must be one of {', '.join(KINDS)}, got {kind!r}")
    root = Path(directory) if directory is not None else Path(name)
    if root.exists() and (not root.is_dir() or any(root.iterdir())):
        raise ArgumentError(f"{root} already exists and is not empty: choose another --dir")
    words = {
        "name": name,
        "module": name,
        "dist": name.replace("_", "-"),
        "Class": "".join(part.capitalize() for part in name.split("_")),
        "title": " ".join(part.capitalize() for part in name.split("_")),
        "kind": kind,
        "sample": _SAMPLE[kind],
        "openenv_version": __version__,
    }
    files = {
        "pyproject.toml": "pyproject.toml.tmpl",
        "README.md": "README.md.tmpl",
        f"{name}/__init__.py": "init.py.tmpl",
        f"{name}/env.py": f"env_{kind}.py.tmpl",
        "tests/test_env.py": "test_env.py.tmpl",
        ".dockerignore": "dockerignore.tmpl",
    }
    written = []
    for target, template in files.items():
        path = root / target
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(_template(template).substitute(words))
        written.append(path)
    # The Dockerfile comes from the manifest of the class just written, as later runs of
    # `openenv-mcp dockerfile NAME` make it: one renderer, never a patch.
    path = root / "Dockerfile"
    path.write_text(dockerfile(_manifest_of(root, name, words["Class"]), install="/app"))
    written.append(path)
    return written


def _manifest_of(root: Path, name: str, class_name: str) -> Manifest:
    """The manifest of the env class in a package just written (imported from its files)."""
    import importlib.util
    import sys

    from openenv_mcp.authoring.manifest import build_manifest

    spec = importlib.util.spec_from_file_location(
        f"{name}.env", root / name / "env.py", submodule_search_locations=None
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    previous = sys.modules.get(spec.name)
    sys.modules[spec.name] = module
    try:
        spec.loader.exec_module(module)
        manifest = build_manifest(getattr(module, f"{class_name}Env"))
    finally:
        if previous is None:
            sys.modules.pop(spec.name, None)
        else:
            sys.modules[spec.name] = previous
    return manifest.model_copy(update={"package": name.replace("_", "-"), "version": "0.1.0"})


def dockerfile(manifest: Manifest, install: str | None = None) -> str:
    """A Dockerfile serving the environment of ``manifest`` over HTTP, rendered whole.

    Args:
        install: the directory whose package the image installs (``/app``: the build
            context, copied in); ``None`` installs ``manifest.package`` from the index.

    The image runs as a non-root user, binds 0.0.0.0 (so openenv-mcp refuses to start
    without a bearer token in ``OPENENV_MCP_AUTH_TOKEN``), answers ``/healthz`` for
    the health check, and carries the manifest's facts as labels.
    """
    serve = manifest.serve
    labels = {
        "org.opencontainers.image.title": manifest.title,
        "org.opencontainers.image.description": manifest.description,
        "dev.openenv-mcp.manifest": FORMAT,
        "dev.openenv-mcp.env": manifest.name,
        "dev.openenv-mcp.cpu": f"{manifest.resources.cpu:g}",
        "dev.openenv-mcp.memory-mib": str(manifest.resources.memory_mib),
        "dev.openenv-mcp.offline": str(manifest.offline).lower(),
    }
    label_lines = " \\\n      ".join(f"{k}={json.dumps(v)}" for k, v in labels.items())
    if install is not None:
        get = f"COPY . {install}\nRUN pip install --no-cache-dir {install}"
    else:
        if not manifest.package or not manifest.version:
            raise ArgumentError(
                f"{manifest.name} is not from an installed package, so an image cannot install "
                "it from an index: generate the Dockerfile inside its package (init does)"
            )
        # A shipped environment's heavy dependencies are in its own extra.
        found = env_extra(manifest.name)
        extra = f"[{found[1]}]" if found is not None and found[0] == manifest.package else ""
        get = f"RUN pip install --no-cache-dir {manifest.package}{extra}=={manifest.version}"
    health = (
        "import urllib.request; urllib.request.urlopen("
        f"'http://127.0.0.1:{serve.port}{serve.health_path}', timeout=4)"
    )
    return f"""\
# Generated by openenv-mcp from the manifest of {manifest.name!r} ({FORMAT}).
# Regenerate it, do not edit it: openenv-mcp dockerfile {manifest.name} > Dockerfile
FROM python:3.11-slim
LABEL {label_lines}
ENV PYTHONDONTWRITEBYTECODE=1 \\
    PYTHONUNBUFFERED=1 \\
    PIP_DISABLE_PIP_VERSION_CHECK=1
RUN groupadd --gid 10001 openenv \\
 && useradd --create-home --uid 10001 --gid 10001 openenv
WORKDIR /app
{get}
USER 10001:10001
EXPOSE {serve.port}
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \\
    CMD {json.dumps(["python", "-c", health])}
# The bearer token comes at run time: docker run -e {serve.token_env}=... (it will not
# start without one: it listens on 0.0.0.0).
CMD {json.dumps(serve.command)}
"""

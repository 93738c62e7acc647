"""What a Minari dataset of recorded episodes holds besides the steps: an env spec
that makes a working env again, and frames stored compressed.

**The env spec.** ``dataset.recover_environment()`` calls ``gym.make(spec)``. The
spec made here names :class:`~openenv_mcp.client.MCPGymEnv` (by its import path,
so it serialises) with the command that serves the recorded environment::

    openenv-mcp serve atari --game pong --frameskip 4 ... [--reward ...]

so the recovered env starts its own server over stdio, with the recorded config
and reward composition, and stops it at ``close()`` (or at exit). ``openenv-mcp``
is the one installed beside the client that runs it (on ``PATH`` or not); the
environment's own package (ale-py for Atari) must be installed there, as the
dataset's ``requirements`` say. The same spec is the eval env spec.

**Compression.** Minari writes HDF5 datasets without a filter: 600 Pong frames
take 60 MB. After Minari has written the dataset, every large numeric array is
rewritten gzip-compressed, in chunks of about one frame (HDF5's own deflate filter, which
h5py, and so ``minari``, reads transparently): consecutive Atari frames are mostly
background, so the same steps take a few hundred KB, and loading is no slower.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from gymnasium import spaces as gym_spaces
from gymnasium.envs.registration import EnvSpec

from openenv_mcp.errors import DependencyNotInstalled

__all__ = ["GZIP_LEVEL", "compress_hdf5", "create", "recorded_env_spec", "require", "requirements"]

#: gzip level of stored arrays: 4 is as small as 6-9 on Atari frames, and faster.
GZIP_LEVEL = 4
#: Arrays smaller than this are copied as they are (nothing to win).
_COMPRESS_FROM = 64 * 1024
#: Bytes of one compressed chunk, about: one Atari frame, or many small rows.
_CHUNK_BYTES = 128 * 1024
#: Rows copied at a time while compressing (bounds memory on long episodes).
_ROWS = 256


def require() -> Any:
    """The ``minari`` module.

    Raises:
        DependencyNotInstalled: naming the extra that installs it.
    """
    try:
        import h5py  # noqa: F401  (the HDF5 storage; compressing needs it too)
        import minari
    except ImportError as exc:
        raise DependencyNotInstalled(
            f"export --format minari needs the minari package (pip install "
            f"'openenv-mcp[data]'): {exc}"
        ) from None
    return minari


def recorded_env_spec(
    start: dict[str, Any],
    *,
    source: str | os.PathLike[str] = "the recording",
    allow: Iterable[str] = (),
    folders: Iterable[str | os.PathLike[str]] = (),
) -> EnvSpec:
    """The spec of an :class:`MCPGymEnv` serving what the recording's ``start`` record
    says was served: the environment, its config and its reward composition.

    The environment class and rewards the record names are resolved as a replay resolves
    them (:func:`~openenv_mcp.registry.get_data_env_class`): a dataset never names a module
    that would come from the current directory or the recording's folder, unless
    ``allow`` (``--allow-module``) names it.

    Raises:
        ArgumentError: the record names a module that is not allowed (saying which).
    """
    from openenv_mcp.client._gym import gym_spec
    from openenv_mcp.options import serve_command
    from openenv_mcp.registry import check_data_reference, get_data_env_class, serve_name

    allow, folders = tuple(allow), tuple(folders)
    try:
        env_cls = get_data_env_class(
            str(start["env_class"]),
            str(start.get("env") or ""),
            source=source,
            allow=allow,
            folders=folders,
        )
        name = serve_name(env_cls)
    except DependencyNotInstalled:  # not installed where the export runs: name it as recorded
        name = start["env_class"]
    rewards = start.get("rewards") or ()
    for reward in rewards:
        with contextlib.suppress(DependencyNotInstalled):  # named, not imported
            check_data_reference(
                str(reward), "--reward", source=source, allow=allow, folders=folders
            )
    command = serve_command(name, start["config"], rewards)
    return gym_spec(start["env"], command)


def requirements(start: dict[str, Any]) -> list[str]:
    """What ``recover_environment`` checks is installed: the recording's openenv-mcp."""
    version = (start.get("versions") or {}).get("openenv-mcp")
    return [f"openenv-mcp>={version}"] if version else ["openenv-mcp"]


def create(
    minari: Any,
    dataset_id: str,
    buffers: Iterable[Any],
    observation_space: gym_spaces.Space[Any],
    action_space: gym_spaces.Space[Any],
    *,
    env_spec: EnvSpec,
    description: str,
    requirements: Sequence[str],
) -> None:
    """Write the dataset (episodes taken from ``buffers`` one at a time), with
    ``env_spec`` as its env and eval env, then compress it."""
    with warnings.catch_warnings():  # Minari asks for an author and an email
        warnings.simplefilter("ignore", UserWarning)
        # Given as a spec, the env would be made (a server started) to read its
        # spaces: the spaces are given and the spec is given as the eval env, which
        # Minari only stores; the env spec is stored next (nothing is made).
        dataset = minari.create_dataset_from_buffers(
            dataset_id=dataset_id,
            buffer=buffers,
            eval_env=env_spec,
            observation_space=observation_space,
            action_space=action_space,
            algorithm_name="openenv-mcp recordings",
            description=description,
            requirements=list(requirements),
            jpeg_encoding=False,
        )
    storage = dataset.storage
    storage.update_metadata({"env_spec": env_spec.to_json()})
    main = Path(storage.data_path) / "main_data.hdf5"
    if main.exists():
        compress_hdf5(main)
        storage.update_metadata({"dataset_size": storage.get_size()})


def compress_hdf5(path: str | os.PathLike[str], level: int = GZIP_LEVEL) -> None:
    """Rewrite an HDF5 file with its large numeric arrays gzip-compressed (chunks of
    about 128 KiB, at least a row); groups, attributes and everything else as they
    were. The file is replaced only once the new one is whole."""
    import h5py

    path = Path(path)
    partial = path.with_name(path.name + ".partial")
    try:
        with h5py.File(path, "r") as src, h5py.File(partial, "w", track_order=True) as dst:
            _copy_group(src, dst, level)
        os.replace(partial, path)
    finally:
        partial.unlink(missing_ok=True)


def _copy_group(src: Any, dst: Any, level: int) -> None:
    import h5py

    dst.attrs.update(src.attrs)
    for name, item in src.items():
        if isinstance(item, h5py.Group):
            _copy_group(item, dst.create_group(name, track_order=True), level)
        elif (
            isinstance(item, h5py.Dataset)
            and item.ndim >= 1
            and item.dtype.kind in "biuf"
            and item.nbytes >= _COMPRESS_FROM
        ):
            row_bytes = max(1, item.nbytes // max(1, item.shape[0]))
            rows = max(1, min(item.shape[0], _CHUNK_BYTES // row_bytes))
            out = dst.create_dataset(
                name,
                shape=item.shape,
                dtype=item.dtype,
                maxshape=item.maxshape,
                chunks=(rows, *item.shape[1:]),
                compression="gzip",
                compression_opts=level,
            )
            for begin in range(0, item.shape[0], _ROWS):
                out[begin : begin + _ROWS] = item[begin : begin + _ROWS]
            out.attrs.update(item.attrs)
        else:
            src.copy(item, dst, name=name)

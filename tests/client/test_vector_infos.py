"""MCPVectorEnv batches infos a key at a time: the result is what Gymnasium's own
``VectorEnv._add_info`` makes of the same infos, episode by episode."""

from __future__ import annotations

from typing import Any

import numpy as np

from openenv_mcp.client import MCPVectorEnv
from openenv_mcp.testing import values_equal


def gymnasiums(env: MCPVectorEnv, infos: list[tuple[int, dict[str, Any]]]) -> dict[str, Any]:
    batched: dict[str, Any] = {}
    for i, info in infos:
        batched = env._add_info(batched, info, i)
    return batched


def same(a: dict[str, Any], b: dict[str, Any]) -> bool:
    if a.keys() != b.keys():
        return False
    for key in a:
        x, y = a[key], b[key]
        if isinstance(x, dict):
            if not same(x, y):
                return False
        elif x.dtype == object:
            if not all(values_equal(p, q) for p, q in zip(x, y, strict=True)):
                return False
        elif not values_equal(x, y):
            return False
    return True


def test_batched_infos_equal_gymnasiums() -> None:
    env = object.__new__(MCPVectorEnv)  # no server: only the batching is under test
    env.num_envs = 4
    first = {"lives": 3, "reward": 1.5, "terminated": False, "episode_id": "ep_a"}
    infos: list[tuple[int, dict[str, Any]]] = [
        (0, {**first, "np": np.int64(7)}),
        (1, {"lives": 2, "reward": -1.0, "terminated": True, "episode_id": "ep_b", "x": None}),
        (2, {"mask": np.array([1, 0, 1], np.int8), "rewards": {"env": 1.0, "bonus": 0.5}}),
        (3, {"lives": 1, "rewards": {"env": 0.0}, "final_obs": np.zeros(2), "final_info": {}}),
    ]
    for i, info in infos:  # in every episode: built in one call per key
        info.update(step=i, ok=i % 2 == 0, name=f"n{i}", arr=np.full(2, i, np.float32))
    ours = env._batch_infos(infos)
    assert same(ours, gymnasiums(env, infos))
    assert ours["lives"].tolist() == [3, 2, 0, 1] and ours["_lives"].tolist() == [1, 1, 0, 1]
    assert ours["arr"].dtype == np.float32 and ours["name"].tolist() == ["n0", "n1", "n2", "n3"]
    assert env._batch_infos([]) == {}

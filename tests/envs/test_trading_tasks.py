"""The trading env's task sets: date-range splits of the shipped sample and of a user's
CSV, seed splits of generated markets, and success as beating buy-and-hold, played over
MCP (in memory)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest

from openenv_mcp.client import MCPEnvClient
from openenv_mcp.errors import ArgumentError, UnknownTask
from openenv_mcp.server import build_server
from openenv_mcp.tasks import Ending
from openenv_mcp_envs.trading import TradingConfig, TradingEnv
from openenv_mcp_envs.trading._data import SAMPLE_CSV, WARMUP, load_sample
from openenv_mcp_envs.trading._tasks import FixedDataTasks, buy_and_hold_return

pytestmark = pytest.mark.anyio


def trading(**options: Any) -> MCPEnvClient:
    return MCPEnvClient(build_server("trading", **options))


async def play(env: MCPEnvClient, options: dict[str, Any], hold: bool) -> dict[str, Any]:
    """Buy equal weights on the first day; then hold them (``hold``) or rebalance to
    equal weights every day (paying costs buy-and-hold does not)."""
    _, info = await env.reset(options=options)
    tickers = [t for t in info["weights"] if t != "cash"]
    action = [1.0 / len(tickers)] * len(tickers)
    while True:
        _, _, terminated, truncated, info = await env.step(action)
        if terminated or truncated:
            return info
        if hold:
            action = [info["weights"][t] for t in tickers]


def test_the_sample_splits_by_date_without_overlap() -> None:
    env = TradingEnv(TradingConfig(window=60))
    tasks = env.task_set()
    assert env.task_set() is tasks  # built once per data, window and cost
    assert [(s.name, s.type) for s in tasks.splits()] == [
        ("train", "train"),
        ("validation", "validation"),
        ("test", "test"),
    ]
    assert tasks.check() == []
    market = load_sample()
    spans = {}
    for split in ("train", "validation", "test"):
        split_tasks = tasks.split_tasks(split)
        days = [market.dates.index(t.options["start"]) for t in split_tasks]
        assert days == list(range(days[0], days[0] + len(days)))  # every day, in order
        spans[split] = (days[0], days[-1] + 60)  # the first start to the last close
        assert all(t.data["window"] == 60 for t in split_tasks)
        assert split_tasks[0].data["end"] == market.dates[days[0] + 60]
    assert spans["train"][0] == WARMUP
    assert spans["train"][1] < spans["validation"][0]
    assert spans["validation"][1] < spans["test"][0]
    assert spans["test"][1] == market.days - 1
    usable = market.days - WARMUP
    assert len(tasks.split_tasks("train")) == round(usable * 0.6) - 60
    seeds = [{t.seed for t in tasks.split_tasks(s)} for s in ("train", "validation", "test")]
    assert not seeds[0] & seeds[1] and not seeds[1] & seeds[2] and not seeds[0] & seeds[2]
    task = tasks.task("test", 0)
    assert task.id == f"trading-sample-w60-test-{task.options['start']}"
    assert tasks.locate(task.id) == ("test", 0, task)
    last = tasks.task("train", len(tasks.split_tasks("train")) - 1)
    assert tasks.locate(last.id)[:2] == ("train", len(tasks.split_tasks("train")) - 1)


def test_a_window_longer_than_a_period_leaves_that_split_out() -> None:
    market = load_sample()
    usable = market.days - WARMUP
    tasks = FixedDataTasks(market, "sample", round(usable * 0.2), 0.001)
    assert [s.name for s in tasks.splits()] == ["train"]
    assert tasks.check() == []
    with pytest.raises(UnknownTask, match="Splits: train"):
        tasks.task("test", 0)


def test_buy_and_hold_pays_the_envs_cost_once() -> None:
    start, end = np.array([10.0, 20.0]), np.array([11.0, 18.0])
    assert buy_and_hold_return(start, end, 0.0) == pytest.approx(0.0)
    assert buy_and_hold_return(start, end * 2, 0.001) == pytest.approx(2 / 1.001 - 1)


def test_an_ending_without_a_return_fails() -> None:
    tasks = TradingEnv(TradingConfig()).task_set()
    task = tasks.task("test", 0)
    for info in ({}, {"return": "0.5"}, {"return": True}, {"return": None}):
        ending = Ending(1.0, 1.0, 60, False, True, info)
        assert tasks.success(task, ending) is False
        assert "excess_return" not in tasks.scores(task, ending)


async def test_splits_over_mcp_and_a_task_starts_the_same_twice() -> None:
    with anyio.fail_after(60):
        async with trading(window=20) as env:
            names = [(s["name"], s["type"]) for s in env.splits]
            assert names == [("train", "train"), ("validation", "validation"), ("test", "test")]
            assert all(s["tasks"] > 0 for s in env.splits)
            first, info = await env.reset(options={"split": "validation", "index": 5})
            task = info["task"]
            assert info["date"] == task["data"]["start"] and task["index"] == 5
            again, info = await env.reset(options={"task": task["id"]})
            assert info["date"] == task["data"]["start"]
            for key in first:
                np.testing.assert_array_equal(first[key], again[key])


async def test_success_is_beating_buy_and_hold_judged_at_the_end() -> None:
    with anyio.fail_after(60):
        async with trading(window=20) as env:
            options = {"split": "test", "index": 3}
            held = await play(env, options, hold=True)
            judged = held["task"]
            scores = judged["scores"]
            assert held["date"] == judged["data"]["end"]
            # Holding the first day's equal weights is buy-and-hold itself: a tie, no win.
            assert scores["excess_return"] == pytest.approx(0.0, abs=1e-12)
            assert scores["return"] == pytest.approx(held["return"])
            assert judged["success"] is False
            # Rebalancing daily pays costs buy-and-hold does not: below it, a failure.
            rebalanced = await play(env, options, hold=False)
            assert rebalanced["task"]["scores"]["excess_return"] < 0
            assert rebalanced["task"]["success"] is False
            # All in the asset that did best over these days beats the equal weights.
            best = await _best_asset(env, options)
            _, info = await env.reset(options=options)
            while True:
                _, _, terminated, truncated, info = await env.step(best)
                if terminated or truncated:
                    break
            assert info["task"]["success"] is True
            assert info["task"]["scores"]["excess_return"] > 0


async def _best_asset(env: MCPEnvClient, options: dict[str, Any]) -> list[float]:
    _, info = await env.reset(options=options)
    tickers = [t for t in info["weights"] if t != "cash"]
    start = info["prices"]
    while True:
        _, _, terminated, truncated, info = await env.step([0.0] * len(tickers))
        if terminated or truncated:
            break
    growth = [info["prices"][t] / start[t] for t in tickers]
    return [1.0 if i == int(np.argmax(growth)) else 0.0 for i in range(len(tickers))]


async def test_generated_markets_are_seed_splits_judged_on_their_own_prices() -> None:
    with anyio.fail_after(60):
        async with trading(data="synthetic", window=15) as env:
            assert [s["tasks"] for s in env.splits] == [1000, 100, 100]
            assert TradingEnv(TradingConfig(data="synthetic", window=15)).task_set().check() == []
            options = {"split": "test", "index": 2}
            held = await play(env, options, hold=True)
            assert held["task"]["id"] == "trading-synthetic-a5-w15-test-0002"
            assert held["task"]["scores"]["excess_return"] == pytest.approx(0.0, abs=1e-12)
            assert held["task"]["success"] is False
            first, _ = await env.reset(options=options)
            again, _ = await env.reset(options={"task": "trading-synthetic-a5-w15-test-0002"})
            for key in first:
                np.testing.assert_array_equal(first[key], again[key])


async def test_a_users_csv_gets_date_splits_named_after_its_file(tmp_path: Path) -> None:
    data = tmp_path / "my prices.csv"
    data.write_text(SAMPLE_CSV.read_text())
    with anyio.fail_after(60):
        async with trading(csv=str(data), window=30) as env:
            tasks = await env.tasks("test")
            assert tasks[0].id.startswith("trading-csv-my_prices-w30-test-")
            _, info = await env.reset(options={"task": tasks[0].id})
            assert info["date"] == tasks[0].options["start"]


async def test_bad_task_references_are_clear_errors_and_the_server_goes_on() -> None:
    with anyio.fail_after(60):
        async with trading(window=60) as env:
            size = {s["name"]: s["tasks"] for s in env.splits}["test"]
            first = (await env.tasks("test"))[0]
            cases: list[tuple[dict[str, Any], type[Exception], str]] = [
                ({"split": "testing", "index": 0}, UnknownTask, "Did you mean 'test'"),
                ({"split": "test", "index": -1}, UnknownTask, f"has {size} tasks"),
                ({"split": "test", "index": size}, UnknownTask, f"indices 0-{size - 1}"),
                ({"task": "CartPole-v1-test-0001"}, UnknownTask, "no task 'CartPole-v1"),
                ({"task": "trading-sample-w20-test-2023-06-01"}, UnknownTask, "no task"),
                ({"task": "trading-sample-w60-test-2021-01-04"}, UnknownTask, "no task"),
                ({"task": "trading-sample-w60-test-2099-01-01"}, UnknownTask, "no task"),
                ({"task": "trading-sample-w60-test-"}, UnknownTask, "no task"),
                (
                    {"task": first.id, "start": "2021-03-01"},
                    ArgumentError,
                    "sets option 'start'",
                ),
            ]
            for options, kind, words in cases:
                with pytest.raises(kind) as raised:
                    await env.reset(options=options)
                assert words in str(raised.value), (options, str(raised.value))
            _, info = await env.reset(options={"task": first.id})
            assert info["task"]["index"] == 0

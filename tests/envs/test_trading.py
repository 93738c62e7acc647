"""The trading env: its accounting (weights, costs, rewards), its data (the shipped
sample, the seeded generator, users' CSVs), its frame, and the env over MCP: in
memory here; over stdio (MCPEnvClient), HTTP (the MCP Inspector CLI) and the
harness config's own command in the integration tier.
"""

from __future__ import annotations

import json
import math
import os
import pickle
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import numpy as np
import pytest
from fastmcp import Client
from hypothesis import given, settings
from hypothesis import strategies as st

from openenv_mcp.authoring.testing import check_env
from openenv_mcp.client import MCPEnvClient
from openenv_mcp.codecs import encode_raw, png_from_b64
from openenv_mcp.environment import contract_problems, parse_options
from openenv_mcp.errors import ArgumentError, InvalidAction, ResetNeeded, UnsupportedOption
from openenv_mcp.narration import narration_of
from openenv_mcp.server import ServerSettings, build_server
from openenv_mcp.server.transports._host import HOST_DIR_ENV
from openenv_mcp.spec import EnvSpec, model_properties
from openenv_mcp_envs.trading import TradingConfig, TradingEnv
from openenv_mcp_envs.trading import _chart as chart
from openenv_mcp_envs.trading._data import (
    FEATURES,
    SAMPLE_CSV,
    WARMUP,
    generate_prices,
    load_sample,
)
from openenv_mcp_envs.trading.make_data import sample_csv_text
from tests.server.test_fuzz import FUZZ, Target, fuzz_target, json_values, run_case
from tests.servers import ROOT, episode_host_dir, http_server, stdio_command
from tests.test_independent_clients import call as inspector_call
from tests.test_independent_clients import (
    http_target,
    inspector,
    node_tools,  # noqa: F401  (a shared fixture)
)

TICKERS = ["ALPH", "BRVO", "CHRL", "DLTA", "ECHO"]
EQUAL = [0.2] * 5


def make(**options: Any) -> TradingEnv:
    return TradingEnv(TradingConfig(**options))


def weights_of(info: dict[str, Any], tickers: list[str] = TICKERS) -> np.ndarray:
    """The current asset weights, as an action that holds them."""
    return np.array([info["weights"][t] for t in tickers], dtype=np.float64)


def rollout(env: TradingEnv, seed: int, actions: list[Any]) -> list[tuple[Any, ...]]:
    """(date, reward, value, terminated, truncated) per step."""
    _, info = env.reset(seed=seed)
    out: list[tuple[Any, ...]] = [(info["date"], 0.0, info["value"], False, False)]
    for action in actions:
        r = env.step(env.parse_action(action))
        out.append((r.info["date"], r.reward, r.info["value"], r.terminated, r.truncated))
        if r.terminated or r.truncated:
            break
    return out


# -- the contract ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "options",
    [
        {},
        {"data": "synthetic"},
        {"data": "synthetic", "assets": 2, "reward": "pnl", "window": 5},
        {"reward": "differential_sharpe", "long_only": True, "cost": 0.01},
    ],
    ids=["sample", "synthetic", "synthetic-2-assets-pnl", "sharpe-long-only"],
)
def test_check_env_in_memory(options: dict[str, Any]) -> None:
    check_env(TradingEnv, worker=False, **options)


def test_check_env_with_a_csv(tmp_path: Path) -> None:
    path = tmp_path / "mine.csv"
    generate_prices(np.random.default_rng(1), 3, 80).to_csv(path, index=False)
    check_env(TradingEnv, worker=False, csv=str(path), window=30)


@pytest.mark.integration
def test_check_env_in_a_worker_process() -> None:
    check_env(TradingEnv, data="synthetic", window=10)


def test_spaces_and_observation() -> None:
    env = make()
    assert env.action_space.shape == (5,) and env.action_space.dtype == np.float32
    assert float(env.action_space.low.min()) == -1.0 and float(env.action_space.high.max()) == 1.0
    obs, info = env.reset(seed=0)
    assert obs["features"].shape == (5, len(FEATURES)) and obs["features"].dtype == np.float32
    assert np.array_equal(obs["weights"], np.array([0, 0, 0, 0, 0, 1], dtype=np.float32))
    assert obs["value"][0] == 1.0 and obs["time_left"][0] == 1.0
    assert info["value"] == 100_000.0 and info["cash"] == 100_000.0 and info["day"] == 0
    # RSI lies in 0..1 and volatility is positive once the warm-up is over
    assert np.all((obs["features"][:, 3] >= 0) & (obs["features"][:, 3] <= 1))
    assert np.all(obs["features"][:, 4] > 0)


# -- accounting ---------------------------------------------------------------------------------


def test_weights_are_clipped_and_normalised_by_l1() -> None:
    env, long_only = make(), make(long_only=True)
    assert np.allclose(env.target_weights(np.ones(5)), EQUAL)
    assert np.allclose(env.target_weights(np.array([0.5, -0.5, 0, 0, 0])), [0.5, -0.5, 0, 0, 0])
    assert np.allclose(env.target_weights(np.array([0.3, 0.1, 0, 0, 0])), [0.3, 0.1, 0, 0, 0])
    assert np.allclose(env.target_weights(np.array([1, -1, 0, 0, 0])), [0.5, -0.5, 0, 0, 0])
    assert np.allclose(long_only.target_weights(np.array([1, -1, 0, 0, 0])), [1, 0, 0, 0, 0])


def test_a_short_position_holds_its_proceeds_as_cash() -> None:
    env = make(cost=0.0)
    _, info = env.reset(seed=4)
    prices = np.array([info["prices"][t] for t in TICKERS])
    r = env.step(env.parse_action([-0.5, 0, 0, 0, 0]))
    assert r.info["cash"] == pytest.approx(150_000.0)
    held = env.portfolio()["holdings"][0]
    assert held["shares"] == pytest.approx(-50_000.0 / prices[0])
    assert r.info["value"] == pytest.approx(150_000.0 + held["shares"] * held["price"])


def test_buy_and_hold_earns_the_price_path_minus_the_one_time_cost() -> None:
    w = np.array([0.25, 0.125, 0.375, 0.0625, 0.0625])  # 87.5% invested (exact in float32)
    for cost in (0.0, 0.001, 0.02):
        env = make(cost=cost, window=40)
        _, info = env.reset(seed=11)
        first = np.array([info["prices"][t] for t in TICKERS])
        r = env.step(env.parse_action(w))
        paid = r.info["cost"]
        rewards = [r.reward]
        while not r.truncated:
            r = env.step(env.parse_action(weights_of(r.info)))  # hold: no trades
            assert r.info["cost"] == 0.0 and r.info["turnover"] == 0.0
            rewards.append(r.reward)
        last = np.array([r.info["prices"][t] for t in TICKERS])
        # The value after costs V' solves V' = V0 - cost * |w| V'.
        invested = 100_000.0 / (1 + cost * float(np.abs(w).sum()))
        expected = invested * (float(w @ (last / first)) + 1 - float(w.sum()))
        assert r.info["value"] == pytest.approx(expected, rel=1e-10)
        assert paid == pytest.approx(100_000.0 - invested, rel=1e-10)
        assert r.info["costs_total"] == pytest.approx(paid)
        assert len(rewards) == 40 and r.info["day"] == 40
        assert math.fsum(rewards) == pytest.approx(math.log(expected / 100_000.0), abs=1e-12)


def test_costs_reduce_value_when_rebalancing_against_holding() -> None:
    seed, days = 5, 30
    switching = [[0.5, 0, 0.5, 0, 0], [0, 0.5, 0, 0.5, 0]] * (days // 2)

    def final(cost: float, hold: bool) -> dict[str, Any]:
        env = make(cost=cost, window=days)
        env.reset(seed=seed)
        r = env.step(env.parse_action(switching[0]))
        for action in switching[1:]:
            r = env.step(env.parse_action(weights_of(r.info) if hold else action))
        return r.info

    free, costly = final(0.0, hold=False), final(0.005, hold=False)
    assert costly["value"] < free["value"]
    assert costly["costs_total"] > 0.005 * 100_000 * (days - 1)  # about one full turnover a day
    held_free, held_costly = final(0.0, hold=True), final(0.005, hold=True)
    # Holding pays the first day's cost only: the same path, scaled once.
    assert held_costly["costs_total"] == pytest.approx(100_000 - 100_000 / 1.005)
    assert held_costly["value"] == pytest.approx(held_free["value"] / 1.005, rel=1e-10)
    # Rebalancing daily pays far more than holding.
    assert costly["costs_total"] > 10 * held_costly["costs_total"]


def test_repeating_the_target_weights_rebalances_the_drift() -> None:
    env = make()
    env.reset(seed=2)
    first = env.step(env.parse_action(EQUAL))
    second = env.step(env.parse_action(EQUAL))
    assert 0 < second.info["cost"] < first.info["cost"] / 20  # only the drift is traded
    assert first.info["turnover"] == pytest.approx(1 / 1.001)


@pytest.mark.parametrize("reward", ["pnl", "log_return", "differential_sharpe"])
def test_rewards_follow_the_value(reward: str) -> None:
    env = make(reward=reward, window=30)
    _, info = env.reset(seed=8)
    values, rewards = [info["value"]], []
    rng = np.random.default_rng(0)
    for _ in range(30):
        r = env.step(env.parse_action(rng.uniform(-1, 1, 5)))
        values.append(r.info["value"])
        rewards.append(r.reward)
    ratios = np.array(values[1:]) / np.array(values[:-1])
    if reward == "pnl":
        assert np.allclose(rewards, np.diff(values), atol=1e-6)
    elif reward == "log_return":
        assert np.allclose(rewards, np.log(ratios), atol=1e-12)
    else:  # Moody & Saffell: D = (B dA - A dB / 2) / (B - A^2)^1.5, A and B moving moments
        mean, second, eta, expected = 0.0, 1e-4, 0.05, []
        for ret in ratios - 1:
            d_mean, d_second = ret - mean, ret * ret - second
            expected.append((second * d_mean - 0.5 * mean * d_second) / (second - mean**2) ** 1.5)
            mean, second = mean + eta * d_mean, second + eta * d_second
        assert np.allclose(rewards, np.clip(expected, -10, 10), atol=1e-9)
        assert max(abs(x) for x in rewards) > 0.01


def test_episode_ends_after_the_window_and_refuses_further_steps() -> None:
    env = make(window=3)
    env.reset(seed=1)
    flags = [
        (r.terminated, r.truncated) for r in (env.step(env.parse_action(EQUAL)) for _ in "abc")
    ]
    assert flags == [(False, False), (False, False), (False, True)]
    with pytest.raises(ResetNeeded):
        env.step(env.parse_action(EQUAL))
    with pytest.raises(ResetNeeded):
        make().step(np.zeros(5, dtype=np.float32))


# -- data ---------------------------------------------------------------------------------------


def test_shipped_sample_is_what_make_data_writes() -> None:
    assert SAMPLE_CSV.read_text() == sample_csv_text()
    market = load_sample()
    assert market.tickers == tuple(TICKERS) and market.days == 756
    assert market.dates[0] == "2021-01-04" and market.close.shape == (756, 5)
    returns = np.diff(np.log(market.close), axis=0)
    corr = np.corrcoef(returns.T)[np.triu_indices(5, 1)]
    assert corr.min() > 0.2 and corr.max() < 0.8  # correlated, not identical
    assert np.all(market.high >= np.maximum(market.open, market.close))
    assert np.all(market.low <= np.minimum(market.open, market.close))


def test_seeds_fix_the_window_and_the_synthetic_market() -> None:
    actions = [np.full(5, 0.2)] * 10
    assert rollout(make(), 3, actions) == rollout(make(), 3, actions)
    assert rollout(make(), 3, actions)[0][0] != rollout(make(), 4, actions)[0][0]
    first, again, other = make(data="synthetic"), make(data="synthetic"), make(data="synthetic")
    first.reset(seed=21)
    again.reset(seed=21)
    other.reset(seed=22)
    assert first.market is not None and again.market is not None and other.market is not None
    assert np.array_equal(first.market.close, again.market.close)
    assert not np.array_equal(first.market.close, other.market.close)
    assert first.market.close.shape == (WARMUP + 60 + 1, 5)
    synthetic = [np.full(5, 0.2)] * 60
    assert rollout(make(data="synthetic"), 21, synthetic) == rollout(
        make(data="synthetic"), 21, synthetic
    )


def test_start_option_picks_the_first_day() -> None:
    env = make(window=10)
    _, info = env.reset(seed=0, options={"start": "2022-01-01"})
    assert info["date"] == "2022-01-03"  # the first trading day on or after it
    _, info = env.reset(seed=0, options={"start": str(WARMUP)})
    assert info["date"] == load_sample().dates[WARMUP]
    for bad in ("2030-01-01", "yesterday", "5", 10_000, 2.5):
        with pytest.raises(UnsupportedOption, match="option 'start' must be"):
            env.reset(seed=0, options={"start": bad})
    # what the server checks before reset: the name and the type (a string, as declared)
    with pytest.raises(UnsupportedOption, match=r"per episode.*Did you mean 'start'"):
        parse_options(env, {"stat": "2022-01-01"})
    with pytest.raises(UnsupportedOption, match="option 'start': Input should be a valid string"):
        parse_options(env, {"start": 70})
    assert parse_options(env, {"start": "2022-01-01"}) == {"start": "2022-01-01"}
    synthetic = make(data="synthetic")
    assert synthetic.Options is None and EnvSpec.of(synthetic).options == {}
    with pytest.raises(UnsupportedOption, match="Per-episode options: none"):
        parse_options(synthetic, {"start": "2021-03-01"})
    with pytest.raises(UnsupportedOption, match="synthetic"):
        synthetic.reset(seed=0, options={"start": "2021-03-01"})


def test_declarations() -> None:
    env = make()
    assert not contract_problems(env)
    spec = EnvSpec.of(env)
    assert spec.title == "Trading (5 assets, sample data)" and spec.has_frame
    assert spec.supports_snapshots and spec.serving.inline and not spec.serving.action_tools
    assert set(spec.options) == {"start"}
    assert "from 2021-02-01 to " in spec.options["start"]["description"]
    info = model_properties(env.Info)
    assert info["return"] == {"type": "number", "description": "value / starting cash - 1."}
    assert info["weights"]["additionalProperties"] == {"type": "number"}
    schema = spec.action_schema
    assert (schema["type"], schema["minItems"], schema["maxItems"]) == ("array", 5, 5)
    assert schema["description"].startswith(
        "Target weights, one per asset in this order: ALPH, BRVO, CHRL, DLTA, ECHO;"
    )


def test_an_unseeded_reset_continues_the_stream() -> None:
    """reset(seed=None) goes on with the env's own generator (Gymnasium's meaning): after
    the same seeded reset, two envs draw the same first days; a refused reset draws none."""
    for data in ("sample", "synthetic"):
        a, b = make(data=data, window=5), make(data=data, window=5)
        a.reset(seed=6)
        b.reset(seed=6)
        if data == "sample":
            with pytest.raises(UnsupportedOption):
                a.reset(options={"start": "yesterday"})
        days = []
        for _ in range(5):
            (_, first), (_, second) = a.reset(), b.reset()
            assert (first["date"], first["prices"]) == (second["date"], second["prices"])
            days.append((first["date"], first["prices"]["ALPH"]))
        assert len(set(days)) > 1, data


def write_csv(path: Path, assets: int = 3, days: int = 90, **renames: str) -> Path:
    frame = generate_prices(np.random.default_rng(5), assets, days).rename(columns=renames)
    frame.to_csv(path, index=False)
    return path


def test_a_csv_of_your_own(tmp_path: Path) -> None:
    path = write_csv(tmp_path / "prices.csv")
    env = make(csv=str(path), window=30)
    assert env.tickers == ("ALPH", "BRVO", "CHRL") and env.action_space.shape == (3,)
    _, info = env.reset(seed=1)
    r = env.step(env.parse_action([0.5, 0.5, 0]))
    assert r.info["value"] != 100_000.0 and "CSV prices.csv" in narration_of(env).instructions()
    # FinRL's column names (tic), any case, only the required columns
    frame = generate_prices(np.random.default_rng(5), 2, 60)[["date", "ticker", "close"]]
    finrl = tmp_path / "finrl.csv"
    frame.rename(columns={"ticker": "tic", "close": "Close", "date": "Date"}).to_csv(
        finrl, index=False
    )
    env = make(csv=str(finrl), window=20, data="csv")
    _, info = env.reset(seed=2)
    assert set(info["prices"]) == {"ALPH", "BRVO"}
    assert env.step(env.parse_action([1, 0])).info["day"] == 1


CSV_HEADER = "date,ticker,open,high,low,close,volume\n"
GOOD_ROW = "2021-01-04,AAA,10,11,9,10.5,1000\n"


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", "it is empty"),
        ("date,ticker,close\n", "it has a header but no rows"),
        ("date,symbol,price\n2021-01-04,AAA,1\n", "missing column(s) ['close']"),
        ("day,tick,close\n2021-01-04,AAA,1\n", "is column 'tick' meant to be 'ticker'?"),
        (CSV_HEADER + "04/01/2021,AAA,10,11,9,10.5,1000\n", "line 2: date '04/01/2021' is not"),
        (CSV_HEADER + GOOD_ROW + "2021-01-05,AAA,10,11,9,-3,1000\n", "line 3: close '-3' is not"),
        (CSV_HEADER + "2021-01-04,AAA,10,11,9,ten,1000\n", "close 'ten' is not a number > 0"),
        (CSV_HEADER + "2021-01-04,AAA,10,11,9,inf,1000\n", "close 'inf' is not a number > 0"),
        (CSV_HEADER + GOOD_ROW + GOOD_ROW, "a second row for ticker 'AAA' on 2021-01-04"),
        (
            CSV_HEADER + GOOD_ROW + "2021-01-05,AAA,10,11,9,10,5\n2021-01-05,BBB,10,11,9,10,5\n",
            "ticker 'BBB' has no row on 1 of the 2 dates (first 2021-01-04)",
        ),
        (CSV_HEADER + "2021-01-04,AAA,10,9,11,10,5\n", "high 9 is below low 11"),
        (CSV_HEADER + "2021-01-04,,10,11,9,10,5\n", "line 2 has an empty ticker"),
        ('date,ticker,close\n"2021-01-04,AAA,1\n', "does not parse as CSV"),
        (CSV_HEADER + GOOD_ROW, "--window 60 needs at least 81 trading days"),
    ],
)
def test_a_malformed_csv_is_refused_clearly(tmp_path: Path, text: str, expected: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(ArgumentError) as caught:
        make(csv=str(path))
    message = str(caught.value)
    assert expected in message, message
    if "--window" not in message:  # a file problem names the file and the format
        assert message.startswith(f"--csv {path}: ")
        assert "Expected a CSV with a header row" in message


def test_bad_data_options_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ArgumentError, match="cannot read it"):
        make(csv=str(tmp_path / "missing.csv"))
    with pytest.raises(ArgumentError, match="it is not a file"):
        make(csv=str(tmp_path))
    with pytest.raises(ArgumentError, match="--data csv needs --csv PATH"):
        make(data="csv")
    with pytest.raises(ArgumentError, match="--csv reads your own data"):
        make(data="synthetic", csv=str(write_csv(tmp_path / "p.csv")))
    with pytest.raises(ArgumentError, match="--assets sets the size of a generated market"):
        make(assets=3)
    with pytest.raises(ArgumentError, match="needs at least 5021 trading days"):
        make(window=5000)


# -- snapshots ----------------------------------------------------------------------------------


@pytest.mark.parametrize("data", ["sample", "synthetic"])
def test_snapshots_restore_the_whole_portfolio_and_pickle(data: str) -> None:
    rng = np.random.default_rng(1)
    actions = [rng.uniform(-1, 1, 5).astype(np.float32) for _ in range(30)]
    env = make(data=data, reward="differential_sharpe", window=30)
    env.reset(seed=9)
    for action in actions[:12]:
        env.step(action)
    snap = pickle.loads(pickle.dumps(env.snapshot()))
    tail = [env.step(a) for a in actions[12:]]
    fork = make(data=data, reward="differential_sharpe", window=30)
    fork.restore(snap)
    replay = [fork.step(a) for a in actions[12:]]
    for a, b in zip(tail, replay, strict=True):
        assert (a.reward, a.terminated, a.truncated, a.info) == (
            b.reward,
            b.terminated,
            b.truncated,
            b.info,
        )
        assert all(np.array_equal(a.observation[k], b.observation[k]) for k in a.observation)
    assert tail[-1].truncated


# -- what a model sees --------------------------------------------------------------------------


def test_instructions_and_observation_text() -> None:
    env = make()
    text = narration_of(env).instructions()
    for words in (
        "ALPH, BRVO, CHRL, DLTA, ECHO",
        "[-1, 1]",
        "sum of their absolute values exceeds 1",
        "0.1000% of the amount traded",
        "SYNTHETIC",
        "log(value after / value before)",
        "portfolio",
    ):
        assert words in text, words
    assert "clipped to 0 (long-only)" in narration_of(make(long_only=True)).instructions()
    obs, _ = env.reset(seed=0)
    first = narration_of(env).observation_text(obs)
    assert first is not None and "value 100,000.00 (+0.00%)" in first
    r = env.step(env.parse_action(EQUAL))
    words = narration_of(env).observation_text(r.observation)
    assert words is not None and len(words) <= 300
    assert all(t in words for t in TICKERS) and "day 1/60" in words and "20%" in words


def test_frame_is_a_chart_of_prices_and_value() -> None:
    env = make(window=20)
    env.reset(seed=3)
    start = env.render()
    for _ in range(10):
        r = env.step(env.parse_action(EQUAL))
    frame = env.render()
    assert start is not None and frame is not None
    assert frame.shape == (chart.HEIGHT, chart.WIDTH, 3) == (400, 600, 3)
    assert frame.dtype == np.uint8 and not np.array_equal(start, frame)
    colours = {tuple(int(v) for v in c) for c in frame.reshape(-1, 3)}
    assert len(colours) > 50  # lines, text and antialiasing, not a flat image
    for i in range(5):  # every asset's line (and bar) is drawn in its colour
        assert chart.colour(i) in colours
    assert chart.PORTFOLIO in colours
    assert r.info["day"] == 10


@pytest.mark.anyio
async def test_over_mcp_the_frame_is_a_png_chart_and_tools_answer() -> None:
    server = build_server("trading", window=10)
    with anyio.fail_after(60):
        async with Client(server) as client:
            names = {t.name for t in await client.list_tools()}
            assert {"reset", "step", "state", "portfolio", "price_history"} <= names
            reset = await client.call_tool("reset", {"seed": 7})
            assert [c.type for c in reset.content] == ["text", "image"]
            step = await client.call_tool("step", {"action": EQUAL})
            image = png_from_b64(step.content[1].data)  # type: ignore[union-attr]
            assert (
                image.shape == (400, 600, 3) and len(np.unique(image.reshape(-1, 3), axis=0)) > 50
            )
            text = step.content[0].text  # type: ignore[union-attr]
            assert "Rebalanced: traded" in text and "Observation: " in text
            info = step.structured_content["info"]  # type: ignore[index]
            held = (await client.call_tool("portfolio", {})).structured_content
            assert held is not None and held["value"] == info["value"]
            assert [h["ticker"] for h in held["holdings"]] == TICKERS
            assert held["holdings"][0]["weight"] == info["weights"]["ALPH"]
            history = (await client.call_tool("price_history", {"days": 5})).structured_content
            assert history is not None and history["dates"][-1] == info["date"]  # no look-ahead
            assert len(history["closes"]["ECHO"]) == 5
            assert history["closes"]["ECHO"][-1] == info["prices"]["ECHO"]
            reward = step.structured_content["reward"]  # type: ignore[index]
    env = make(window=10)
    env.reset(seed=7)
    assert env.step(env.parse_action(EQUAL)).reward == reward


@pytest.mark.anyio
async def test_agent_profile_tools_and_text() -> None:
    server = build_server("trading", settings=ServerSettings(profile="agent"))
    async with Client(server) as client:
        names = sorted(t.name for t in await client.list_tools())
        assert names == ["portfolio", "price_history", "reset", "state", "step"]
        reset = await client.call_tool("reset", {"seed": 0})
        assert [c.type for c in reset.content] == ["text", "image"]
        assert reset.structured_content is None
        step = await client.call_tool("step", {"action": [0.4, 0.3, 0.3, 0, 0]})
        text = step.content[0].text  # type: ignore[union-attr]
        assert "ALPH" in text and "40%" in text
        image = png_from_b64(step.content[1].data)  # type: ignore[union-attr]
        assert image.shape == (400, 600, 3)  # already 400 px high: sent as drawn


# -- bad actions --------------------------------------------------------------------------------

EXPECTED = "expected 5 target weight(s) in [-1, 1], one per asset in order (ALPH, BRVO"


@pytest.mark.parametrize(
    ("action", "what"),
    [
        ([0.2, 0.2], "got shape [2]"),
        ([], "got shape [0]"),
        ([[0.2] * 5], "got shape [1, 5]"),
        ([0.2, 0.2, float("nan"), 0.2, 0.2], "got nan for CHRL (position 2)"),
        ([0.2, 0.2, 0.2, float("inf"), 0.2], "got inf for DLTA (position 3)"),
        ([float("-inf"), 0, 0, 0, 0], "got -inf for ALPH"),
        ([1.5, 0, 0, 0, 0], "got 1.5 for ALPH (position 0), outside [-1, 1]"),
        ([0, 0, 0, 0, -1.01], "got -1.01 for ECHO"),
        ("buy", "got str 'buy'"),
        (True, "got bool True"),
        ({"ALPH": 0.5}, "got dict"),
        ([True, False, 0, 0, 0], "got booleans"),
        (["a", 0, 0, 0, 0], "got ['a', 0, 0, 0, 0]"),
        ([10**400, 0, 0, 0, 0], "got [1000000000"),
        (0.5, "got shape []"),
        (encode_raw(np.zeros(3, dtype=np.float32)), "got shape [3]"),
        ({"data": "!!", "shape": [5], "dtype": "float32"}, "bad raw array"),
    ],
)
def test_bad_actions_are_refused_clearly(action: Any, what: str) -> None:
    env = make()
    env.reset(seed=0)
    with pytest.raises(InvalidAction) as caught:
        env.parse_action(action)
    message = str(caught.value)
    assert message.startswith(f"action: {EXPECTED}") and what in message, message
    assert len(message) < 400
    assert env.parse_action(encode_raw(np.full(5, 0.2, dtype=np.float32))).shape == (5,)


@pytest.mark.anyio
async def test_bad_actions_over_mcp_are_tool_errors() -> None:
    async with Client(build_server("trading", window=5)) as client:
        await client.call_tool("reset", {"seed": 0})
        for action in ([0.1], [float("nan")] * 5, [float("inf")] * 5, "sell", [[1, 2]]):
            bad = await client.call_tool("step", {"action": action}, raise_on_error=False)
            assert bad.is_error
            assert bad.content[0].text.startswith(f"InvalidAction: action: {EXPECTED}")  # type: ignore[union-attr]
        ok = await client.call_tool("step", {"action": EQUAL})
        assert ok.structured_content is not None and ok.structured_content["step"] == 1


@pytest.fixture(scope="module")
def trading_fuzz() -> Iterator[Target]:
    floats = st.floats(-1, 1) | st.floats(allow_nan=True, allow_infinity=True)
    actions = (
        st.lists(st.floats(-1, 1), min_size=5, max_size=5)
        | st.lists(floats, min_size=5, max_size=5)
        | st.lists(floats, max_size=8)
        | st.lists(st.lists(floats, max_size=5), max_size=5)
        | st.sampled_from(["buy", "", [None] * 5, {"ALPH": 1}, [True] * 5, 1e308, -0.0])
        | json_values
    )
    with fuzz_target("trading", actions, EQUAL, ["start"], window=8) as target:
        yield target


@given(data=st.data())
@settings(FUZZ, max_examples=150)
def test_fuzz_trading(trading_fuzz: Target, data: st.DataObject) -> None:
    run_case(trading_fuzz, data)


# -- over real transports (integration) -----------------------------------------------------------


def scripted(step: int) -> list[float]:
    """A fixed, varied policy: the same actions over every transport."""
    return [round(math.sin(step + i) * 0.6, 3) for i in range(5)]


def reference(seed: int, window: int, **options: Any) -> list[tuple[float, bool]]:
    env = make(window=window, **options)
    env.reset(seed=seed)
    return [
        (r.reward, r.truncated)
        for r in (env.step(env.parse_action(scripted(i))) for i in range(window))
    ]


@pytest.mark.integration
def test_full_seeded_episode_through_mcpenvclient_over_stdio() -> None:
    window = 15
    command = stdio_command("trading", "--window", str(window), "--reward", "differential_sharpe")
    with MCPEnvClient(command).sync() as env:
        assert env.action_space.shape == (5,)
        obs, info = env.reset(seed=12)
        assert obs["features"].shape == (5, len(FEATURES)) and info["day"] == 0
        got = []
        for i in range(window):
            _, reward, terminated, truncated, info = env.step(np.array(scripted(i)))
            got.append((reward, truncated))
            assert not terminated
            if i == window - 2:
                held = env.call("portfolio")
        _, final = env.state()  # after the end, state still reads the portfolio
    assert got == reference(12, window, reward="differential_sharpe")
    assert got[-1][1] and info["day"] == window and held["days_left"] == 1
    assert final["days_left"] == 0 and len(final["holdings"]) == 5


@pytest.mark.integration
def test_full_seeded_episode_through_the_mcp_inspector_over_http(
    node_tools: dict[str, str],  # noqa: F811  (the shared fixture)
) -> None:
    window = 3
    with http_server("trading", "--window", str(window), "--data", "synthetic") as url:
        target = http_target(url)
        reset = inspector(node_tools, target, "tools/call", *inspector_call("reset", {"seed": 3}))
        eid = reset["structuredContent"]["episode_id"]
        assert [c["type"] for c in reset["content"]] == ["text", "image"]
        got = []
        for i in range(window):
            args = {"episode_id": eid, "action": scripted(i)}
            step = inspector(node_tools, target, "tools/call", *inspector_call("step", args))
            sc = step["structuredContent"]
            got.append((sc["reward"], sc["truncated"]))
            if i == 0:
                held = inspector(
                    node_tools,
                    target,
                    "tools/call",
                    *inspector_call("portfolio", {"episode_id": eid}),
                )["structuredContent"]
                assert held["days_left"] == window - 1 and held["value"] == sc["info"]["value"]
        assert sc["status"] == "ended"
        state = inspector(
            node_tools, target, "tools/call", *inspector_call("state", {"episode_id": eid})
        )["structuredContent"]
        assert state["info"]["days_left"] == 0 and state["info"]["value"] == sc["info"]["value"]
        bad = inspector(
            node_tools,
            target,
            "tools/call",
            *inspector_call("step", {"episode_id": eid, "action": [0.1]}),
            ok=False,
        )
        assert bad["content"][0]["text"].startswith("ResetNeeded:")
    assert got == reference(3, window, data="synthetic")


@pytest.mark.integration
@pytest.mark.anyio
async def test_harness_config_serves_the_agent_profile(tmp_path: Path) -> None:
    from fastmcp.client.transports import StdioTransport

    config = json.loads((ROOT / "harness_examples" / "trading.mcp.json").read_text())
    server = config["mcpServers"]["trading"]
    assert server["command"] == "/ABSOLUTE/PATH/TO/openenv-mcp/dev"
    assert server["args"][:4] == ["run", "serve", "trading", "--agent"]
    command = stdio_command("trading", *server["args"][3:])  # ./dev run serve, without ./dev
    # --agent: the episodes live in an episode host (a private one, stopped at the end)
    with episode_host_dir() as hosts, anyio.fail_after(120):
        transport = StdioTransport(
            command=command[0],
            args=command[1:],
            env={**os.environ, HOST_DIR_ENV: str(hosts)},
            cwd=str(tmp_path),
        )
        async with Client(transport, timeout=60) as client:
            names = sorted(t.name for t in await client.list_tools())
            assert names == ["portfolio", "price_history", "reset", "state", "step"]
            reset = await client.call_tool("reset", {"seed": 0})
            assert [c.type for c in reset.content] == ["text", "image"]
            assert "Trading (5 assets" in reset.content[0].text  # type: ignore[union-attr]

"""Daily price data for the trading env: a seeded generator, the CSV reader and the indicators.

Everything here is numpy and pandas; nothing is downloaded. A :class:`Market`
holds one panel of daily OHLCV bars (dates x assets) and the indicators the
observation carries, computed once per panel from the closes and volumes.

The generator (:func:`generate_prices`) is a correlated geometric Brownian
motion with regimes: a three-state Markov chain (calm bull, volatile bear,
sideways) sets each day's drift and volatility, and a one-factor model (each
asset's beta to a common market factor, plus its own noise) correlates the
assets, more so in the bear regime. The shipped ``data/sample_prices.csv`` is
its output for a fixed seed (``make_data.py``); ``--data synthetic`` calls it
afresh, from the episode's seed, for every episode. Both are synthetic: no
real security's prices.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from openenv_mcp.errors import ArgumentError

__all__ = [
    "COLUMNS",
    "FEATURES",
    "MAX_ASSETS",
    "SAMPLE_CSV",
    "SAMPLE_DAYS",
    "SAMPLE_SEED",
    "SYNTHETIC_TICKERS",
    "WARMUP",
    "Market",
    "generate_prices",
    "load_csv",
    "load_sample",
    "market_from_frame",
    "prices_frame",
]

#: The shipped sample: 5 assets, 756 trading days (three years of business days).
SAMPLE_CSV = Path(__file__).resolve().parent / "data" / "sample_prices.csv"
SAMPLE_SEED = 20240601
SAMPLE_DAYS = 756
#: Fictional tickers of generated assets, in order (``--data synthetic`` takes the first N).
SYNTHETIC_TICKERS = (
    "ALPH",
    "BRVO",
    "CHRL",
    "DLTA",
    "ECHO",
    "FXTR",
    "GOLF",
    "HTEL",
    "INDG",
    "JULT",
)
#: The first calendar day of generated data (business days from here on; no holidays).
FIRST_DATE = "2021-01-04"

#: Days of history before an episode's first day, so every indicator is defined on it.
WARMUP = 20
#: The indicators of the observation, per asset, in order.
FEATURES = (
    "return_1d",  # close / previous close - 1
    "close_vs_ma5",  # close / 5-day moving average of closes - 1
    "close_vs_ma20",  # close / 20-day moving average of closes - 1
    "rsi14",  # Wilder's 14-day relative strength index, scaled to 0..1
    "volatility20",  # standard deviation of the last 20 daily log returns
    "volume_vs_avg20",  # log(volume / 20-day average volume); 0 without volumes
)
#: Columns of a CSV: required, then optional (any order, any case; ``tic`` or ``symbol``
#: may name the ticker column, as FinRL's data does).
COLUMNS = ("date", "ticker", "close")
OPTIONAL_COLUMNS = ("open", "high", "low", "volume")
_ALIASES = {"tic": "ticker", "symbol": "ticker", "day": "date"}
#: Most assets one panel may hold (the observation, the chart's legend).
MAX_ASSETS = 30
#: Largest CSV read (bytes).
MAX_CSV_BYTES = 64 * 1024 * 1024


@dataclass(frozen=True, eq=False)
class Market:
    """One panel of daily bars, dates x assets, and its indicators.

    Attributes:
        tickers: asset names, in the order of every per-asset array.
        dates: ``YYYY-MM-DD`` strings, ascending.
        open, high, low, close, volume: ``(days, assets)`` float64 arrays
            (``volume`` is NaN where the data has none).
        features: ``(days, assets, len(FEATURES))`` float32 indicators (0 in the
            first ``WARMUP`` days, where they are not all defined).
        source: where the data came from, in words.
    """

    tickers: tuple[str, ...]
    dates: tuple[str, ...]
    open: np.ndarray
    high: np.ndarray
    low: np.ndarray
    close: np.ndarray
    volume: np.ndarray
    features: np.ndarray
    source: str

    @property
    def days(self) -> int:
        """Trading days in the panel."""
        return len(self.dates)


# -- the generator ------------------------------------------------------------------------------

#: Regimes: (name, daily drift of the market factor, its daily volatility, idiosyncratic
#: volatility multiplier), and the daily probability of staying in each.
_REGIMES = (
    ("calm bull", 0.0007, 0.008, 0.8),
    ("volatile bear", -0.0015, 0.022, 1.3),
    ("sideways", 0.0, 0.011, 1.0),
)
_STAY = np.array([0.985, 0.95, 0.975])


def _regime_path(rng: np.random.Generator, days: int) -> np.ndarray:
    """A Markov chain of regime indices, one per day, started in the calm regime."""
    path = np.zeros(days, dtype=np.int64)
    draws = rng.random((days, 2))
    state = 0
    for t in range(days):
        if draws[t, 0] > _STAY[state]:
            others = [s for s in range(len(_REGIMES)) if s != state]
            state = others[int(draws[t, 1] * len(others))]
        path[t] = state
    return path


def generate_prices(
    rng: np.random.Generator, assets: int, days: int, first_date: str = FIRST_DATE
) -> pd.DataFrame:
    """Daily OHLCV bars of ``assets`` correlated assets over ``days`` business days.

    Log returns are ``beta_i * market_t + sigma_i * s_r * eps_ti`` plus a drift,
    where the market factor's mean and volatility and the idiosyncratic scale
    ``s_r`` follow the day's regime ``r``. Opens gap from the previous close,
    highs and lows lie beyond both, volumes grow with the size of the move.
    Prices are rounded to cents and volumes to whole shares.

    Returns:
        A long frame: ``date, ticker, open, high, low, close, volume``, sorted by
        date then ticker (the CSV format :func:`load_csv` reads).
    """
    if not 1 <= assets <= len(SYNTHETIC_TICKERS):
        raise ValueError(f"assets must be 1..{len(SYNTHETIC_TICKERS)}, got {assets}")
    tickers = SYNTHETIC_TICKERS[:assets]
    beta = rng.uniform(0.6, 1.4, assets)
    idio = rng.uniform(0.008, 0.018, assets)
    alpha = rng.normal(0.0002, 0.0003, assets)
    start = np.round(rng.uniform(20.0, 300.0, assets), 2)
    base_volume = rng.uniform(2e5, 5e6, assets)
    regimes = _regime_path(rng, days)
    drift = np.array([r[1] for r in _REGIMES])[regimes]
    market_vol = np.array([r[2] for r in _REGIMES])[regimes]
    idio_scale = np.array([r[3] for r in _REGIMES])[regimes]
    market = drift + market_vol * rng.standard_normal(days)
    noise = rng.standard_normal((days, assets)) * idio[None, :] * idio_scale[:, None]
    sigma2 = (beta[None, :] * market_vol[:, None]) ** 2 + (idio[None, :] * idio_scale[:, None]) ** 2
    log_returns = alpha[None, :] + beta[None, :] * market[:, None] + noise - 0.5 * sigma2
    log_returns[0] = 0.0  # the first day closes at the starting price
    close = start[None, :] * np.exp(np.cumsum(log_returns, axis=0))
    previous = np.vstack([start[None, :], close[:-1]])
    sigma = np.sqrt(sigma2)
    gap = 0.25 * log_returns + 0.25 * sigma * rng.standard_normal((days, assets))
    open_ = previous * np.exp(gap)
    wick = np.abs(rng.standard_normal((2, days, assets))) * 0.5 * sigma[None]
    high = np.maximum(open_, close) * np.exp(wick[0])
    low = np.minimum(open_, close) * np.exp(-wick[1])
    volume = base_volume[None, :] * np.exp(
        0.25 * rng.standard_normal((days, assets)) + 25.0 * np.abs(log_returns)
    )

    def cents(values: np.ndarray) -> np.ndarray:
        return np.maximum(np.round(values, 2), 0.01)

    open_, high, low, close = cents(open_), cents(high), cents(low), cents(close)
    high = np.maximum.reduce([high, open_, close])
    low = np.minimum.reduce([low, open_, close])
    dates = pd.bdate_range(first_date, periods=days).strftime("%Y-%m-%d")
    frame = pd.DataFrame(
        {
            "date": np.repeat(np.asarray(dates), assets),
            "ticker": np.tile(np.asarray(tickers), days),
            "open": open_.reshape(-1),
            "high": high.reshape(-1),
            "low": low.reshape(-1),
            "close": close.reshape(-1),
            "volume": np.round(volume).astype(np.int64).reshape(-1),
        }
    )
    return frame


# -- indicators ---------------------------------------------------------------------------------


def _indicators(close: np.ndarray, volume: np.ndarray) -> np.ndarray:
    """``(days, assets, len(FEATURES))`` float32 indicators from closes and volumes."""
    frame = pd.DataFrame(close)
    ret = frame.pct_change()
    ma5 = frame.rolling(5).mean()
    ma20 = frame.rolling(20).mean()
    change = frame.diff()
    gain = change.clip(lower=0.0).ewm(alpha=1 / 14, adjust=False, min_periods=14).mean()
    loss = (-change.clip(upper=0.0)).ewm(alpha=1 / 14, adjust=False, min_periods=14).mean()
    total = gain + loss
    rsi = (gain / total.where(total > 0)).fillna(0.5)  # no movement at all: neutral
    log_ret = np.log(frame).diff()
    vol20 = log_ret.rolling(20).std(ddof=0)
    volumes = pd.DataFrame(volume)
    avg_volume = volumes.rolling(20, min_periods=1).mean()
    volume_ratio = np.log(volumes / avg_volume.where(avg_volume > 0))
    stack = np.stack(
        [
            ret.to_numpy(),
            (frame / ma5 - 1.0).to_numpy(),
            (frame / ma20 - 1.0).to_numpy(),
            rsi.to_numpy(),
            vol20.to_numpy(),
            volume_ratio.to_numpy(),
        ],
        axis=-1,
    )
    stack[:WARMUP] = 0.0
    clean: np.ndarray = np.nan_to_num(stack, nan=0.0, posinf=0.0, neginf=0.0)
    return clean.astype(np.float32)


def market_from_frame(frame: pd.DataFrame, source: str) -> Market:
    """A :class:`Market` from a validated long frame (``generate_prices`` output or a CSV)."""
    tickers = tuple(dict.fromkeys(frame["ticker"]))
    wide = frame.pivot(index="date", columns="ticker").sort_index()

    def column(name: str) -> np.ndarray:
        if name not in frame.columns:
            return np.full((len(wide.index), len(tickers)), np.nan)
        values: np.ndarray = wide[name][list(tickers)].to_numpy(dtype=np.float64)
        return values

    close = column("close")
    volume = column("volume")
    ohlc = [column(n) for n in ("open", "high", "low")]
    open_, high, low = (np.where(np.isnan(a), close, a) for a in ohlc)
    return Market(
        tickers=tickers,
        dates=tuple(str(d) for d in wide.index),
        open=open_,
        high=high,
        low=low,
        close=close,
        volume=volume,
        features=_indicators(close, volume),
        source=source,
    )


def prices_frame(rng: np.random.Generator, assets: int, days: int) -> Market:
    """A freshly generated market (``--data synthetic``)."""
    return market_from_frame(
        generate_prices(rng, assets, days), "synthetic (generated per episode)"
    )


# -- the CSV reader -----------------------------------------------------------------------------

_FORMAT = (
    "Expected a CSV with a header row and one row per trading day and asset: columns "
    "date (YYYY-MM-DD), ticker (or tic), close (> 0), and optionally open, high, low, "
    "volume; every ticker on every date."
)


def _bad(path: str, problem: str) -> ArgumentError:
    return ArgumentError(f"--csv {path}: {problem}. {_FORMAT}")


def _row(index: int) -> str:
    return f"line {index + 2}"  # the header is line 1


def load_csv(path: str | os.PathLike[str]) -> Market:
    """Read and validate a CSV of daily bars (cached by path, size and modification time).

    Raises:
        ArgumentError: naming the file, what was expected and what came.
    """
    name = str(path)
    try:
        stat = Path(name).stat()
    except OSError as exc:
        raise _bad(name, f"cannot read it ({exc.strerror or exc})") from None
    if not Path(name).is_file():
        raise _bad(name, "it is not a file")
    if stat.st_size > MAX_CSV_BYTES:
        raise _bad(name, f"it has {stat.st_size} bytes; at most {MAX_CSV_BYTES} are read")
    return _load_csv(name, stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _load_csv(path: str, size: int, mtime_ns: int) -> Market:
    try:
        raw = pd.read_csv(path, dtype=str, keep_default_na=False, skipinitialspace=True)
    except pd.errors.EmptyDataError:
        raise _bad(path, "it is empty") from None
    except (pd.errors.ParserError, UnicodeDecodeError, ValueError, OSError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise _bad(path, f"it does not parse as CSV ({first})") from None
    return _validate(raw, path)


def _validate(raw: pd.DataFrame, path: str) -> Market:
    renamed: dict[str, str] = {}
    for col in raw.columns:
        key = str(col).strip().lower()
        renamed[col] = _ALIASES.get(key, key)
    frame = raw.rename(columns=renamed)
    got = [str(c) for c in frame.columns]
    if len(set(got)) != len(got):
        dupes = sorted({c for c in got if got.count(c) > 1})
        raise _bad(path, f"columns {dupes} appear more than once (header {list(raw.columns)})")
    missing = [c for c in COLUMNS if c not in got]
    if missing:
        hints = "".join(
            f"; is column {close[0]!r} meant to be {m!r}?"
            for m in missing
            if (close := difflib.get_close_matches(m, got, n=1, cutoff=0.6))
        )
        raise _bad(path, f"missing column(s) {missing}; got columns {got}{hints}")
    if frame.empty:
        raise _bad(path, "it has a header but no rows")
    keep = [c for c in (*COLUMNS, *OPTIONAL_COLUMNS) if c in got]
    frame = frame[keep].copy()
    frame["ticker"] = frame["ticker"].str.strip()
    blank = frame.index[frame["ticker"] == ""]
    if len(blank):
        raise _bad(path, f"{_row(int(blank[0]))} has an empty ticker")
    dates = pd.to_datetime(frame["date"].str.strip(), format="%Y-%m-%d", errors="coerce")
    bad_dates = frame.index[dates.isna()]
    if len(bad_dates):
        at = int(bad_dates[0])
        raise _bad(
            path,
            f"{_row(at)}: date {frame['date'].iloc[at]!r} is not a YYYY-MM-DD date "
            f"({len(bad_dates)} such row(s))",
        )
    frame["date"] = dates.dt.strftime("%Y-%m-%d")
    for col in ("close", *[c for c in OPTIONAL_COLUMNS if c in frame.columns]):
        values = pd.to_numeric(frame[col].str.strip(), errors="coerce")
        positive = col != "volume"
        bad = values.isna() | ~np.isfinite(values) | (values <= 0 if positive else values < 0)
        if col == "volume":
            bad &= frame[col].str.strip() != ""  # an empty volume is allowed
        rows = frame.index[bad.to_numpy()]
        if len(rows):
            at = int(rows[0])
            rule = "a number > 0" if positive else "a number >= 0 (or empty)"
            raise _bad(
                path,
                f"{_row(at)}: {col} {frame[col].iloc[at]!r} is not {rule} "
                f"({len(rows)} such row(s))",
            )
        frame[col] = values
    duplicated = frame.duplicated(["date", "ticker"])
    if duplicated.any():
        at = int(frame.index[duplicated.to_numpy()][0])
        raise _bad(
            path,
            f"{_row(at)}: a second row for ticker {frame['ticker'].iloc[at]!r} on "
            f"{frame['date'].iloc[at]}",
        )
    tickers = list(dict.fromkeys(frame["ticker"]))
    if len(tickers) > MAX_ASSETS:
        raise _bad(path, f"it has {len(tickers)} tickers; at most {MAX_ASSETS} are supported")
    all_dates = sorted(set(frame["date"]))
    for ticker in tickers:
        have = set(frame.loc[frame["ticker"] == ticker, "date"])
        if len(have) != len(all_dates):
            lacking = [d for d in all_dates if d not in have]
            raise _bad(
                path,
                f"ticker {ticker!r} has no row on {len(lacking)} of the {len(all_dates)} "
                f"dates (first {lacking[0]})",
            )
    highs_ok = all(c in frame.columns for c in ("high", "low"))
    if highs_ok:
        inverted = frame.index[(frame["high"] < frame["low"]).to_numpy()]
        if len(inverted):
            at = int(inverted[0])
            raise _bad(
                path,
                f"{_row(at)}: high {frame['high'].iloc[at]:g} is below low "
                f"{frame['low'].iloc[at]:g}",
            )
    return market_from_frame(frame, f"CSV {Path(path).name}")


def load_sample() -> Market:
    """The shipped sample (``data/sample_prices.csv``, written by ``make_data.py``)."""
    return dataclasses.replace(load_csv(SAMPLE_CSV), source="the shipped synthetic sample")

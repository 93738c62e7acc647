"""Write the trading env's shipped sample data: ``openenv_mcp_envs/trading/data/sample_prices.csv``.

The data is SYNTHETIC: five fictional assets (ALPH, BRVO, CHRL, DLTA, ECHO)
over 756 business days from 2021-01-04 (three years; no holidays), daily OHLCV
from a correlated geometric Brownian motion with regimes (calm bull, volatile
bear, sideways; see :func:`openenv_mcp_envs.trading._data.generate_prices`), seeded with
:data:`openenv_mcp_envs.trading._data.SAMPLE_SEED`. No real security's prices. It was run
once to write the shipped file, and a test checks that it still writes the
same bytes::

    python -m openenv_mcp_envs.trading.make_data            # rewrites the shipped file
    python -m openenv_mcp_envs.trading.make_data out.csv    # or writes elsewhere

Format (what ``--csv`` reads too): a header row, then one row per day and
asset: ``date,ticker,open,high,low,close,volume``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

from openenv_mcp_envs.trading._data import SAMPLE_CSV, SAMPLE_DAYS, SAMPLE_SEED, generate_prices

ASSETS = 5


def sample_csv_text() -> str:
    """The sample file's text, exactly as shipped."""
    frame = generate_prices(np.random.default_rng(SAMPLE_SEED), ASSETS, SAMPLE_DAYS)
    text: str = frame.to_csv(index=False, float_format="%.2f", lineterminator="\n")
    return text


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else SAMPLE_CSV
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(sample_csv_text())
    print(f"wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

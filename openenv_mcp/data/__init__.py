"""Episodes as data: every episode recorded (:mod:`.recording`), read back and replayed;
exported as Minari datasets or JSON Lines (:mod:`.export`); collected at scale with a
policy or an agent harness (:mod:`.collect`)."""

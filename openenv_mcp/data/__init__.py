"""Episodes as data, made and shipped by driving servers and clients: exported as Minari
datasets or JSON Lines (:mod:`.export`), collected at scale with a policy or an agent
harness (:mod:`.collect`). They sit above the client; the recording format they read is
:mod:`openenv_mcp.recording`, below the pipeline (``openenv_mcp.data.recording`` is the
same names)."""

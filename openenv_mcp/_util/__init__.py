"""Three leaves every floor uses: ``lazy`` (a package's lazy exports, PEP 562),
``interpreter`` (how openenv-mcp starts Python processes of its own) and ``version``."""

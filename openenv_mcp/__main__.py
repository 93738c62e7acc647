"""``python -m openenv_mcp``: the same as the ``openenv-mcp`` command."""

from openenv_mcp._launch import main

if __name__ == "__main__":
    main()

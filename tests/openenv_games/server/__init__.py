"""The environments and their apps (see :mod:`tests.openenv_games`)."""

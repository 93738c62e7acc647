"""Other faces over the same episodes: the web page (``_web``, ``_feed``) and OpenEnv's
protocol (``_openenv``, ``_openenv_wire``, ``_openenv_namesake``).
"""

"""OpenEnv's own game environments as test data, laid out as OpenEnv lays out one
environment: its models in ``models.py``, its ``Environment`` classes under ``server/``
(``server/environments.py``) beside the FastAPI apps ``create_app`` makes of them
(``server/app.py``). Vendored from OpenEnv's repository (meta-pytorch/OpenEnv,
``envs/``; BSD-3-Clause, Copyright (c) Meta Platforms, Inc. and affiliates)."""

"""The server's static description as the client names it: :class:`ServerSpec`.

``ServerSpec`` is :class:`openenv_mcp.spec.EnvSpec` itself, under the name the
client has always exported. The spec describes the environment, is made on the
server's side from the environment and is read on the client's from the
server's ``openenv://ENV/spec`` resource (:meth:`~openenv_mcp.spec.EnvSpec.from_json`),
so the type lives low in the package, beside the contract, and the client
imports it; one type under two names, not two types kept in step. The spaces are
rebuilt exactly (:func:`openenv_mcp.spaces.space_from_json`), so ``action_space``
and ``observation_space`` equal the environment's own. The client's older field
names (``env``, ``actions``, ``reset_options``) still read, as properties, and an
older server's resource (which used them as keys) still loads.
"""

from __future__ import annotations

from openenv_mcp.spec import EnvSpec

__all__ = ["ServerSpec"]

#: The client's name for :class:`openenv_mcp.spec.EnvSpec` (the same class).
ServerSpec = EnvSpec

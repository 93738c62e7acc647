"""Episode and snapshot handles are capabilities; what may be shown of them.

A handle (``ep_<128 random bits>``, with ``@shard`` on a sharded server) lets
whoever holds it drive, read or close the episode. Logs, recording file names and
anything another local user may read name an episode by its *public id* instead:
a digest of the handle, stable (the log lines and the recording of one episode
agree) and useless for acting on it (the handle cannot be recovered from it).
"""

from __future__ import annotations

import hashlib

__all__ = ["HANDLE_PATTERN", "public_id"]

#: A handle as the server mints it (see ``server._episodes``), for redacting text.
HANDLE_PATTERN = r"\b(?:ep|snap|tb)_[A-Za-z0-9_-]{22}(?:@[A-Za-z0-9][A-Za-z0-9-]{0,62})?"


def public_id(handle: str) -> str:
    """A name for the episode (or snapshot, or game of seats) ``handle`` that is not a
    capability: ``ep-`` (or ``snap-``, ``tb-``) and 64 bits of its BLAKE2b digest."""
    kind = handle.partition("_")[0] if handle.startswith(("snap_", "tb_")) else "ep"
    return f"{kind}-{hashlib.blake2b(handle.encode(), digest_size=8).hexdigest()}"

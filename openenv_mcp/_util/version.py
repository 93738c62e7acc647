"""The package version, in a leaf of its own so that any module may import it cheaply
(the package's ``__init__`` re-exports it, and imports the client and the server for
its lazy exports, so nothing below them may import the version from there)."""

__version__ = "0.1.0"

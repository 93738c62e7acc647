"""The package version, in a module of its own so that anything may import it cheaply."""

__version__ = "0.1.0"

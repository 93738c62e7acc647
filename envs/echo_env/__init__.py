"""The echo environment: the smallest real environment, for proving the framework."""

from echo_env.env import EchoConfig, EchoEnv

__all__ = ["EchoConfig", "EchoEnv"]

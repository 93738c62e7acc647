"""The echo environment: the smallest real environment, for proving the framework."""

from openenv_mcp_envs.echo.env import EchoConfig, EchoEnv

__all__ = ["EchoConfig", "EchoEnv"]

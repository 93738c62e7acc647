"""The ``openenv-mcp`` command: serve, list, describe, bench, replay, export, collect, eval.

Logs go to stderr; stdout belongs to the stdio transport (``serve``'s default)
and to the answers of ``list``/``describe``/``bench``.
"""

from __future__ import annotations

import contextlib
import inspect
import json
import logging
import os
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal

import typer
from pydantic.fields import FieldInfo
from typer.core import TyperCommand

from openenv_mcp.codecs import BenchFrames
from openenv_mcp.errors import OpenEnvError, ServerDied
from openenv_mcp.options import make_config, parse_cli_options
from openenv_mcp.registry import env_names, get_entry, get_env_class
from openenv_mcp.server._settings import SETTINGS_FLAGS, ServerSettings, flat_fields
from openenv_mcp.server.transports._token import ARGV_WARNING, TOKEN_ENV, read_token_file
from openenv_mcp.transports import SERVED, TRANSPORTS, ServedName, TransportName, host_argv

if TYPE_CHECKING:
    from openenv_mcp.environment import Environment

app = typer.Typer(
    name="openenv-mcp",
    help="Serve RL environments as standard MCP servers.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_EXTRA = {"allow_extra_args": True, "ignore_unknown_options": True}
#: Set once ``serve`` has shut its server down (every episode closed, replies written).
_SERVED = threading.Event()


class _ProgressBar:
    """A progress bar on stderr (stdout is the command's answer), made at the first
    report of progress: ``progress(done, total)``."""

    def __init__(self, unit: str) -> None:
        self.unit = unit
        self.bar: Any = None

    def __call__(self, done: int, total: int) -> None:
        if self.bar is None:
            from tqdm import tqdm

            self.bar = tqdm(total=total, initial=done, unit=self.unit, file=sys.stderr)
        else:
            self.bar.update(done - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _fail(message: str, code: int = 2) -> typer.Exit:
    message = message.rstrip()
    if not message.endswith((".", "?", "!")):
        message += "."  # a whole sentence, however the error was worded
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def parse_env_options(env_cls: type[Environment[Any]], args: list[str]) -> dict[str, Any]:
    """Turn ``--game breakout --no-full-action-space`` into Config keyword arguments.

    Values stay strings; the environment's ``Config`` validates and converts them.

    Raises:
        ArgumentError: for an unknown option (with "did you mean") or a missing value.
    """
    (options,) = parse_cli_options([env_cls.Config], args, where=env_cls.name)
    return options


def _load(env: str) -> type[Environment[Any]]:
    try:
        return get_env_class(env)
    except OpenEnvError as exc:
        raise _fail(str(exc)) from None


_STDIO, _HTTP, _RAY = (TRANSPORTS[t].panel for t in SERVED)
_AGENT = "The agent line"
#: The transport flags: their values build the chosen transport's object.
_TRANSPORT_PARAMS = (
    "host",
    "port",
    "allowed_host",
    "auth_token",
    "web",
    "openenv",
    "web_port",
    "episode_host",
    "episode_host_socket",
    "replicas",
    "ray_address",
    "replica_cpus",
)


class _ServeCommand(TyperCommand):
    """``serve``'s help shows, beside its own options, the server settings in their
    groups' panels and, for ``serve ENV --help``, the environment's options: all of
    them are parsed from the extra arguments (in any order), so typer does not list them
    by itself."""

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        ctx.meta["serve_args"] = list(args)  # before --help ends the parse
        return super().parse_args(ctx, args)

    def format_help(self, ctx: Any, formatter: Any) -> None:
        own = self.params
        env = next((a for a in ctx.meta.get("serve_args", []) if not a.startswith("-")), None)
        self.params = [*own, *_env_params(env), *_settings_params()]
        try:
            super().format_help(ctx, formatter)
        finally:
            self.params = own


def _as_params(fields: dict[str, tuple[FieldInfo, str]], simple: bool) -> list[Any]:
    """Click options for model fields (flat name -> field and panel), made by typer from
    a signature, so they render as typer renders its own (for help only)."""

    def flags(**_: Any) -> None: ...

    params = []
    for name, (field, panel) in fields.items():
        default = field.get_default(call_default_factory=True)
        annotation: Any = field.annotation
        if simple and annotation not in (bool, bool | None, int, float, str):
            annotation, default = str | None, None if default is None else str(default)
        option = typer.Option(
            help=field.description,
            rich_help_panel=panel,
            show_default=default is not None and default != [],
        )
        params.append(
            inspect.Parameter(
                name,
                inspect.Parameter.KEYWORD_ONLY,
                default=default,
                annotation=Annotated[annotation, option],  # type: ignore[valid-type]
            )
        )
    flags.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    helper = typer.Typer(add_completion=False)
    helper.command()(flags)
    return list(typer.main.get_command(helper).params)


def _settings_params() -> list[Any]:
    return _as_params(flat_fields(), simple=False)


def _env_params(env: str | None) -> list[Any]:
    """The options of ``env`` (``serve atari --help``), in a panel of their own."""
    if env is None:
        return []
    try:
        env_cls = get_env_class(env)
    except OpenEnvError:
        return []
    panel = f"{env_cls.name} options (openenv-mcp describe {env} tells more)"
    fields = {name: (field, panel) for name, field in env_cls.Config.model_fields.items()}
    return _as_params(fields, simple=True)


@app.command(context_settings=_EXTRA, cls=_ServeCommand)
def serve(
    ctx: typer.Context,
    env: Annotated[
        str,
        typer.Argument(help="Environment name (see `openenv-mcp list`), or module:Class."),
    ],
    transport: Annotated[
        ServedName | None,
        typer.Option(
            show_default=False,
            help="How clients reach the server: "
            + "; ".join(f"{t}, {TRANSPORTS[t].summary}" for t in SERVED)
            + ". Default: stdio.",
        ),
    ] = None,
    stdio: Annotated[bool, typer.Option("--stdio", hidden=True)] = False,
    http: Annotated[bool, typer.Option("--http", hidden=True)] = False,
    ray: Annotated[bool, typer.Option("--ray", hidden=True)] = False,
    agent: Annotated[
        bool,
        typer.Option(
            "--agent",
            rich_help_panel=_AGENT,
            help="For a model in a harness: --profile agent and, over stdio, --episode-host.",
        ),
    ] = False,
    log_level: Annotated[
        str | None,
        typer.Option(
            show_default=False,
            help="Log level; logs go to stderr. Default: WARNING over stdio (a harness may "
            "show any stderr line as an error), INFO otherwise.",
        ),
    ] = None,
    web_port: Annotated[
        int | None,
        typer.Option(
            min=0,
            max=65535,
            rich_help_panel=_STDIO,
            show_default=False,
            help="Also serve the web page on this loopback port (0: any free port) to watch "
            "the agent play; the address is logged on stderr.",
        ),
    ] = None,
    episode_host: Annotated[
        bool,
        typer.Option(
            "--episode-host",
            rich_help_panel=_STDIO,
            help="Keep episodes in this user's episode host (started on demand, private, "
            "stopped when idle), so they outlive this process: for agent frameworks that "
            "start a server per tool call.",
        ),
    ] = False,
    episode_host_socket: Annotated[Path | None, typer.Option(hidden=True)] = None,
    host: Annotated[
        str,
        typer.Option(envvar="OPENENV_MCP_HOST", rich_help_panel=_HTTP, help="Bind address."),
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option(envvar="OPENENV_MCP_PORT", rich_help_panel=_HTTP, help="Port.")
    ] = 8765,
    allowed_host: Annotated[
        list[str] | None,
        typer.Option(
            envvar="OPENENV_MCP_ALLOWED_HOSTS",
            rich_help_panel=_HTTP,
            show_default=False,
            help="Another name clients may reach the server by (its Host header), e.g. a "
            "Kubernetes Service's; repeatable. Loopback names are always allowed.",
        ),
    ] = None,
    auth_token: Annotated[
        str | None,
        typer.Option(
            envvar=TOKEN_ENV,
            rich_help_panel=_HTTP,
            show_default=False,
            help="Require 'Authorization: Bearer TOKEN' (mandatory off loopback). Prefer the "
            "environment variable or --auth-token-file: every local user can read a command "
            "line.",
        ),
    ] = None,
    auth_token_file: Annotated[
        Path | None,
        typer.Option(
            rich_help_panel=_HTTP,
            show_default=False,
            help="Read the bearer token from this file's first line (keep it chmod 600).",
        ),
    ] = None,
    web: Annotated[
        bool,
        typer.Option(
            "--web",
            rich_help_panel=_HTTP,
            help="Also serve the web page at /web/: play, watch, inspect, replay.",
        ),
    ] = False,
    openenv: Annotated[
        bool,
        typer.Option(
            "--openenv",
            rich_help_panel=_HTTP,
            help="Also speak OpenEnv's protocol under /openenv, over the same episodes.",
        ),
    ] = False,
    replicas: Annotated[
        int, typer.Option(min=1, rich_help_panel=_RAY, help="How many server replicas.")
    ] = 2,
    ray_address: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=_RAY,
            show_default=False,
            help="Join this Ray cluster (ray://head:10001, auto) instead of starting a local "
            "one; it must run with RAY_SERVE_SESSION_ID_HEADER_KEY=mcp-param-route.",
        ),
    ] = None,
    replica_cpus: Annotated[
        float,
        typer.Option(min=0.0, rich_help_panel=_RAY, help="Logical CPUs reserved per replica."),
    ] = 1.0,
) -> None:
    """Serve ENV over MCP. Environment options follow, e.g. `serve atari --game breakout`
    (`openenv-mcp describe ENV` lists them), and so may the server settings below."""
    from openenv_mcp.serving import (
        SERVING,
        Served,
        ServeFailed,
        choose_transport,
        transport_for,
    )

    try:
        name = choose_transport(transport, [t for t in SERVED if ctx.params[t]])
        given = {_flag(ctx, p): ctx.params[p] for p in _TRANSPORT_PARAMS if _typed(ctx, p)}
        level = (log_level or SERVING[name].log_level).upper()
        logging.basicConfig(
            stream=sys.stderr, level=level, format="%(asctime)s %(name)s: %(message)s"
        )
        values = {
            **ctx.params,
            "auth_token": _auth_token(ctx, auth_token, auth_token_file),
            # --agent over stdio: the episode host too (unless this is that host)
            "episode_host": (episode_host or agent) and episode_host_socket is None,
        }
        chosen = transport_for(name, given, values=values)
        env_cls = _load(env)
        options, settings_options = parse_cli_options(
            [env_cls.Config, SETTINGS_FLAGS], list(ctx.args), where=env
        )
        if agent:
            _agent_profile(settings_options)
        flat = make_config(SETTINGS_FLAGS, settings_options, "server settings")
        settings = ServerSettings(**flat.model_dump(exclude_unset=True))
        served = Served(env, env_cls, options, make_config(env_cls.Config, options, env), settings)
        args = ["--agent", *ctx.args] if agent else list(ctx.args)
        if chosen.serve(served, host_argv(["serve", env, *args])):
            _SERVED.set()
    except OpenEnvError as exc:
        raise _fail(str(exc), code=exc.exit_status if isinstance(exc, ServeFailed) else 2) from None


def _typed(ctx: typer.Context, param: str) -> bool:
    """Whether ``param`` was given on the command line (not its default, nor from the
    environment: a variable set for another transport is no mistake)."""
    source = ctx.get_parameter_source(param)
    return source is not None and source.name == "COMMANDLINE"


def _flag(ctx: typer.Context, param: str) -> str:
    """The flag a parameter is spelled with (``web_port`` -> ``--web-port``)."""
    return next(p.opts[0] for p in ctx.command.params if p.name == param)


def _agent_profile(settings_options: dict[str, Any]) -> None:
    """``--agent`` sets the agent profile; any other ``--profile`` beside it is a conflict."""
    given = settings_options.setdefault("profile", "agent")
    if given != "agent":
        raise _fail(f"--agent means --profile agent, but --profile {given} was given too")


def _auth_token(ctx: typer.Context, given: str | None, file: Path | None) -> str | None:
    """The bearer token from the environment, a file or (warned about) the command line.

    The environment variable is removed once read: processes the server starts
    (worker processes, the code an environment runs) have no use for it.
    """
    source = ctx.get_parameter_source("auth_token")
    from_env = source is not None and source.name == "ENVIRONMENT"
    log = logging.getLogger("openenv_mcp")
    if file is not None:
        if given is not None:
            where = TOKEN_ENV if from_env else "--auth-token"
            raise _fail(f"two bearer tokens: --auth-token-file and {where}; give one")
        try:
            given, warning = read_token_file(file)
        except OpenEnvError as exc:
            raise _fail(str(exc)) from None
        if warning is not None:
            log.warning("%s", warning)
    elif given is not None and not from_env:
        log.warning("%s", ARGV_WARNING)
    if from_env:
        os.environ.pop(TOKEN_ENV, None)
    return given


@app.command(context_settings=_EXTRA)
def check(
    ctx: typer.Context,
    env: Annotated[str, typer.Argument(help="Environment name (an entry point), or module:Class.")],
    stdio: Annotated[
        bool, typer.Option(help="Also serve it over stdio and play an episode through it.")
    ] = True,
) -> None:
    """Check ENV before shipping it: it loads, its manifest holds, it keeps the contract
    (spaces, seeds, snapshots, worker processes, MCP), its rewards stay in range, every
    tool schema is portable, and it serves over stdio. Exits 1 if anything fails.
    Environment options follow, as for serve."""
    from openenv_mcp.authoring.check import run_checks

    logging.basicConfig(stream=sys.stderr, level="WARNING")
    lines = run_checks(env, list(ctx.args), stdio=stdio)
    failed = [line for line in lines if not line.ok]
    for line in lines:
        mark = "ok    " if line.ok else "FAILED"
        typer.echo(f"{mark} {line.name}" + (f": {line.detail}" if line.detail else ""))
    typer.echo(f"check {env}: {len(lines) - len(failed)} passed, {len(failed)} failed")
    if failed:
        raise typer.Exit(1)


@app.command()
def init(
    name: Annotated[str, typer.Argument(help="The environment's name: a lower-case identifier.")],
    directory: Annotated[
        Path | None, typer.Option("--dir", help="Where to write the package (default: ./NAME).")
    ] = None,
    kind: Annotated[
        str,
        typer.Option(
            help="What the example env is: "
            "discrete (named actions), text (text in and out), continuous (Box), "
            "frames (an RGB image observation)."
        ),
    ] = "discrete",
) -> None:
    """Write a new environment package NAME: a pyproject registering it, an env class
    with a worked example of each part of the contract, a README, tests and a Dockerfile.
    Then: pip install -e NAME, openenv-mcp check NAME, openenv-mcp serve NAME --stdio."""
    from openenv_mcp.authoring.scaffold import init_package

    try:
        written = init_package(name, directory, kind)  # type: ignore[arg-type]
    except OpenEnvError as exc:
        raise _fail(str(exc)) from None
    root = written[0].parent
    for path in written:
        typer.echo(f"wrote {path}")
    typer.echo(
        f"\nnext:\n  pip install -e {root}\n  openenv-mcp check {name}\n"
        f"  openenv-mcp serve {name} --stdio"
    )


@app.command(context_settings=_EXTRA)
def dockerfile(
    ctx: typer.Context,
    env: Annotated[str, typer.Argument(help="Environment name, or module:Class.")],
    install: Annotated[
        str | None,
        typer.Option(
            help="Install the package in this directory of the image (the build context, "
            "copied in: /app) instead of the released one from the package index."
        ),
    ] = None,
) -> None:
    """Print a Dockerfile serving ENV over HTTP, generated from its manifest (non-root,
    a bearer token required, a health check). Environment options follow, as for serve."""
    from openenv_mcp.authoring.manifest import build_manifest
    from openenv_mcp.authoring.scaffold import dockerfile as render
    from openenv_mcp.options import make_config

    env_cls = _load(env)
    try:
        config = make_config(
            env_cls.Config, parse_env_options(env_cls, list(ctx.args)), env_cls.name
        )
        typer.echo(render(build_manifest(env_cls, config), install=install), nl=False)
    except OpenEnvError as exc:
        raise _fail(str(exc)) from None


@app.command("list")
def list_envs() -> None:
    """List the registered environments."""
    for name in env_names():
        try:
            description = get_entry(name).load().description
        except OpenEnvError as exc:
            description = f"(unavailable: {exc})"
        typer.echo(f"{name:<12} {description}")


@app.command(context_settings=_EXTRA)
def describe(
    ctx: typer.Context,
    env: Annotated[str, typer.Argument(help="Environment name, or module:Class.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
    manifest: Annotated[
        bool,
        typer.Option(
            "--manifest",
            help="Print only its manifest (openenv-mcp.manifest/1, JSON): what a registry or "
            "a deployer needs.",
        ),
    ] = False,
) -> None:
    """Describe ENV: its options, actions, observation and MCP tools."""
    from openenv_mcp.authoring.manifest import build_manifest
    from openenv_mcp.server import build_server, get_app

    env_cls = _load(env)
    try:
        server = build_server(env_cls, **parse_env_options(env_cls, list(ctx.args)))
    except OpenEnvError as exc:
        raise _fail(str(exc)) from None
    env_app = get_app(server)
    declared = json.loads(build_manifest(env_cls, env_app.config).model_dump_json())
    if manifest:
        typer.echo(json.dumps(declared, indent=2))
        return
    tools = env_app.tools
    info: dict[str, Any] = {
        "env": env_cls.name,
        "description": env_cls.description,
        "options": {
            name: {
                "default": field.default,
                "description": field.description or "",
            }
            for name, field in env_cls.Config.model_fields.items()
        },
        "spec": env_app.spec_json(),
        "metadata": env_app.prototype.metadata(),
        "settings": {
            name: {
                "default": field.get_default(call_default_factory=True),
                "description": field.description or "",
            }
            for name, (field, _) in flat_fields().items()
        },
        "tools": [
            {"name": t.name, "description": t.description, "input_schema": t.parameters}
            for t in tools
        ],
        "manifest": declared,
    }
    if as_json:
        typer.echo(json.dumps(info, indent=2, default=str))
        return
    typer.echo(f"{env_cls.name}: {env_cls.description}\n\nOptions (openenv-mcp serve {env} ...):")
    for name, opt in info["options"].items():
        typer.echo(f"  --{name.replace('_', '-'):<28} {opt['description']} [{opt['default']}]")
    spec = env_app.spec_json()
    proto = env_app.prototype
    if spec["action_set"]:
        typer.echo("\nActions:")
        for action in spec["action_set"]:
            typer.echo(f"  {action['id']:>3} {action['name']:<16} {action['meaning']}")
    else:
        typer.echo(f"\nActions: {proto.action_space}")
    typer.echo(
        f"\nObservation: {proto.observation_space}"
        f"{' (frames as PNG images)' if spec['has_frame'] else ''}"
    )
    games = info["metadata"].get("games")
    if games:
        typer.echo(f"\nGames ({len(games)}, choose with --game): {', '.join(games)}")
    typer.echo("\nTools:")
    for tool in tools:
        params = ", ".join(tool.parameters.get("properties", {}))
        typer.echo(f"  {tool.name}({params})\n      {tool.description}")


@app.command(context_settings=_EXTRA)
def bench(
    ctx: typer.Context,
    env: Annotated[
        str | None,
        typer.Argument(help="Environment name (see `openenv-mcp list`); none with --vs openenv."),
    ] = None,
    transport: Annotated[
        TransportName,
        typer.Option(
            help="Where the MCP side's server runs: "
            + "; ".join(f"{t.name}, {t.summary}" for t in TRANSPORTS.values())
            + " (--replicas of them)."
        ),
    ] = "stdio",
    replicas: Annotated[
        int, typer.Option(min=1, help="With --transport ray: how many server replicas.")
    ] = 1,
    frames: Annotated[
        BenchFrames,
        typer.Option(
            help="Observations over MCP: png (decoded to arrays), zstd-compressed arrays, "
            "plain raw arrays, or none sent."
        ),
    ] = "zstd",
    batch: Annotated[
        int, typer.Option(help="Episodes stepped together (one step_batch call per step).")
    ] = 1,
    concurrent: Annotated[
        bool,
        typer.Option(
            help="With --batch N: N concurrent step calls per step (all in flight at once) "
            "instead of one step_batch call."
        ),
    ] = False,
    workers: Annotated[
        int, typer.Option(help="The server's worker processes (serve --workers).")
    ] = 0,
    steps: Annotated[int, typer.Option(help="Environment steps per side per repeat.")] = 500,
    repeats: Annotated[int, typer.Option(help="Timed repeats per side (medians).")] = 5,
    warmup: Annotated[int, typer.Option(help="Untimed calls per side first.")] = 20,
    seed: Annotated[int, typer.Option(help="Seeds the episodes and the random actions.")] = 0,
    live_episodes: Annotated[
        int,
        typer.Option(
            help="Instead: open N episodes on one server, report its memory, step each once."
        ),
    ] = 0,
    startup: Annotated[
        bool,
        typer.Option(
            "--startup",
            help="Instead: time imports, a stdio server's start and a worker's (medians of "
            "--repeats fresh starts).",
        ),
    ] = False,
    record: Annotated[
        str | None,
        typer.Option(help="The MCP side's server records every episode here (serve --record)."),
    ] = None,
    vs: Annotated[
        Literal["gymnasium-async", "gymnasium-sync", "envpool", "sb3-ppo", "openenv"] | None,
        typer.Option(
            help="Instead: against what a trainer would run without MCP: MCPVectorEnv "
            "(--batch N) vs gymnasium.make_vec async/sync or EnvPool, or SB3 PPO (--steps "
            "of training, --batch envs) through MCPGymEnv vs gymnasium.make. Or openenv "
            "(no ENV): the OpenEnv bridge both ways against OpenEnv's own client and servers "
            "(echo, Atari; the [openenv] extra)."
        ),
    ] = None,
    servers: Annotated[
        int,
        typer.Option(
            min=1, help="With --vs: the MCP side's episodes spread over this many servers."
        ),
    ] = 1,
    seats: Annotated[
        bool,
        typer.Option(
            "--seats",
            help="Instead: ENV's game with every player a seat (serve --seats all), every "
            "seat driven through PettingZoo's AEC loop over MCP (as_pettingzoo) against the "
            "env's game in this process through the same loop: moves/s and their ratio "
            "(--steps moves a repeat; stdio or memory).",
        ),
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Steps/s of ENV in-process and over MCP in the same run, and their ratio.

    Environment options follow, e.g. `bench atari --game breakout`. Progress goes to stderr.
    `bench --vs openenv` compares with OpenEnv instead: MCP over the bridge against
    OpenEnv's own client on the same OpenEnv servers (echo, Atari), and our Atari over
    --openenv against an Atari server on OpenEnv's stack (the openenv extra).
    """
    from openenv_mcp.bench import (
        BenchConfig,
        BenchResult,
        LiveResult,
        StartupResult,
        run_bench,
        run_live,
        run_startup,
    )
    from openenv_mcp.bench._seats import SeatsResult, run_seats_bench
    from openenv_mcp.bench._versus import VersusResult, run_versus

    # `bench openenv` alone: the old spelling of `bench --vs openenv`, still run as it was.
    if vs == "openenv" or (env == "openenv" and vs is None and not ctx.args):
        from openenv_mcp.bench._openenv import run_openenv_bench

        if vs is None:
            typer.echo("note: `bench openenv` is now `bench --vs openenv`", err=True)
        elif env not in (None, "openenv") or ctx.args:
            raise _fail(
                "--vs openenv runs its own workloads (OpenEnv's echo and Atari) and takes no "
                f"ENV or options: drop {' '.join([env or '', *ctx.args]).strip()!r}"
            )
        try:
            compared = run_openenv_bench(
                steps, repeats, warmup, lambda message: typer.echo(message, err=True)
            )
        except OpenEnvError as exc:
            raise _fail(str(exc), code=1 if isinstance(exc, ServerDied) else 2) from None
        typer.echo(json.dumps(compared.as_dict()) if as_json else compared.table())
        return
    if env is None:
        raise _fail("bench needs ENV (see `openenv-mcp list`), or --vs openenv")
    _load(env)
    config = BenchConfig(
        env=env,
        env_args=tuple(ctx.args),
        transport=transport,
        frames=frames,
        batch=batch,
        concurrent=concurrent,
        workers=workers,
        steps=steps,
        repeats=repeats,
        warmup=warmup,
        seed=seed,
        record=record,
        replicas=replicas,
        servers=servers,
    )

    def progress(message: str) -> None:
        typer.echo(message, err=True)

    try:
        result: BenchResult | LiveResult | StartupResult | VersusResult | SeatsResult
        if seats:
            result = run_seats_bench(config, progress)
        elif vs is not None:
            result = run_versus(config, vs, progress)
        elif startup:
            result = run_startup(config, progress)
        elif live_episodes:
            result = run_live(config, live_episodes, progress)
        else:
            result = run_bench(config, progress)
    except OpenEnvError as exc:
        raise _fail(str(exc), code=1 if isinstance(exc, ServerDied) else 2) from None
    typer.echo(json.dumps(result.as_dict()) if as_json else result.table())


_ALLOW_MODULE_HELP = (
    "A module (and its submodules) the recordings may name and have imported from "
    "anywhere, the current directory included: only for recordings you trust. Repeatable."
)


@app.command()
def replay(
    files: Annotated[list[str], typer.Argument(help="Recorded episodes (.jsonl), or directories.")],
    allow_module: Annotated[
        list[str] | None, typer.Option("--allow-module", help=_ALLOW_MODULE_HELP)
    ] = None,
) -> None:
    """Re-run recorded episodes from their seeds and actions; check that every reward,
    observation, terminated and truncated matches exactly (exit 1 where one differs).

    A game of seats (serve --seats) replays from its table's file (tb-*.jsonl): every
    seat's moves, rewards and observations, checked by move and seat; a seat's own file
    alone does not replay (it says which table's file does).

    The environment and rewards a recording names are imported only from installed
    packages, never from the current directory or the recording's folder (see
    --allow-module)."""
    from pathlib import Path

    from openenv_mcp.recording import (
        ReplayReport,
        TableReplayReport,
        is_table_recording,
        read_recording,
        replay_table,
    )
    from openenv_mcp.recording import replay as replay_one

    paths = [
        p
        for f in files
        for p in (sorted(Path(f).rglob("*.jsonl")) if Path(f).is_dir() else [Path(f)])
        if p.name != "collect.jsonl"
    ]
    if not paths:
        raise _fail(f"no recording found in {' '.join(files)}")
    given = set(paths)
    failed = 0
    for path in paths:
        try:
            report: ReplayReport | TableReplayReport
            if is_table_recording(path):
                report = replay_table(path, allow_modules=allow_module or ())
            else:
                start = read_recording(path, observations=False).start
                table = path.parent / str(start.get("table_recording", ""))
                if start.get("seat") is not None and table in given:
                    typer.echo(f"{path}: seat {start['seat']}, replayed with {table.name}")
                    continue
                report = replay_one(path, allow_modules=allow_module or ())
        except (OpenEnvError, OSError) as exc:
            typer.echo(f"{path}: cannot replay: {exc}", err=True)
            failed += 1
            continue
        typer.echo(report.text())
        failed += not report.ok
    if failed:
        raise typer.Exit(1)


@app.command()
def export(
    directory: Annotated[str, typer.Argument(help="A directory of recordings (serve --record).")],
    format: Annotated[
        Literal["minari", "jsonl"],
        typer.Option("--format", help="minari: a Minari dataset; jsonl: one episode per line."),
    ],
    name: Annotated[
        str,
        typer.Argument(
            help="minari: the dataset id (namespace/name-v0); jsonl: the file to write."
        ),
    ],
    finished_only: Annotated[
        bool,
        typer.Option(
            "--finished-only",
            help="Leave out episodes that did not finish (reset, closed or abandoned "
            "mid-way); by default they are exported truncated at their last step.",
        ),
    ] = False,
    allow_module: Annotated[
        list[str] | None, typer.Option("--allow-module", help=_ALLOW_MODULE_HELP)
    ] = None,
) -> None:
    """Export the episodes recorded in DIRECTORY: a Minari dataset that
    minari.load_dataset(NAME) opens (and whose recover_environment() serves the env
    again), or JSON Lines of tool-call messages with rewards.

    A Minari dataset names the recorded environment and rewards: they must be installed
    ones, never modules of the current directory or DIRECTORY (see --allow-module)."""
    from openenv_mcp.data.export import export_jsonl, export_minari

    try:
        if format == "minari":
            report = export_minari(
                directory,
                name,
                progress=lambda m: typer.echo(m, err=True),
                finished_only=finished_only,
                allow_modules=allow_module or (),
            )
        else:
            report = export_jsonl(directory, name, finished_only=finished_only)
    except OpenEnvError as exc:
        raise _fail(str(exc)) from None
    typer.echo(report.text())


@app.command(context_settings=_EXTRA)
def collect(
    ctx: typer.Context,
    env: Annotated[str, typer.Argument(help="Environment name, or module:Class.")],
    out: Annotated[str, typer.Option("--out", help="Directory for recordings and the index.")],
    episodes: Annotated[int, typer.Option(help="Episodes in all (resumes: done ones skip).")] = 10,
    concurrency: Annotated[int, typer.Option(help="Episodes in flight at once.")] = 1,
    policy: Annotated[
        str, typer.Option(help="random, or package.module:fn(observation, info) -> action.")
    ] = "random",
    agent: Annotated[
        str | None,
        typer.Option(
            help="Instead of --policy: a harness command run once per episode, with "
            "{mcp_config} where the path of an MCP config naming a fresh recorded server goes."
        ),
    ] = None,
    seed: Annotated[int, typer.Option(help="Episode i is seeded seed + i.")] = 0,
    max_steps: Annotated[
        int, typer.Option(help="Close a policy episode after this many steps (0: never).")
    ] = 0,
    agent_timeout: Annotated[float, typer.Option(help="Seconds one agent command may run.")] = 600,
    as_json: Annotated[bool, typer.Option("--json", help="Print one JSON object.")] = False,
) -> None:
    """Roll out episodes of ENV with a policy or an agent harness, every one recorded.

    Environment options and server settings follow (`collect atari --out runs/b
    --game breakout --reward m:r`); a progress bar goes to stderr, a summary to stdout.
    """
    from openenv_mcp.data.collect import CollectConfig, parse_env_args, run_collect

    _load(env)
    progress = _ProgressBar("episode")
    try:
        config = CollectConfig(
            env=env,
            out=out,
            episodes=episodes,
            concurrency=concurrency,
            env_args=parse_env_args(list(ctx.args)),
            policy=policy,
            agent=agent,
            seed=seed,
            max_steps=max_steps,
            agent_timeout=agent_timeout,
        )
        result = run_collect(config, progress)
    except OpenEnvError as exc:
        raise _fail(str(exc), code=1 if isinstance(exc, ServerDied) else 2) from None
    finally:
        progress.close()
    typer.echo(json.dumps(result.as_dict()) if as_json else result.table())


_EVAL_POLICY, _EVAL_TASKS, _EVAL_OUT = "Policy", "Tasks and runs", "Output"


@app.command("eval", context_settings=_EXTRA)
def eval_command(
    ctx: typer.Context,
    env: Annotated[
        str | None,
        typer.Argument(
            help="Environment name, or module:Class (with --compare alone: the new report)."
        ),
    ] = None,
    policy: Annotated[
        str,
        typer.Option(
            rich_help_panel=_EVAL_POLICY,
            help="random; FILE.py:NAME or module:NAME, a function (observation, info) -> "
            "action; or an agent harness command with {mcp_config} (as collect --agent).",
        ),
    ] = "random",
    openai_url: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=_EVAL_POLICY,
            help="Play with a model behind an OpenAI-compatible endpoint (its base URL, "
            "e.g. http://127.0.0.1:8000/v1), the server's tools as its functions.",
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(rich_help_panel=_EVAL_POLICY, help="The model the endpoint serves."),
    ] = None,
    api_key_env: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=_EVAL_POLICY,
            help="The variable holding the endpoint's API key (sent only when named).",
        ),
    ] = None,
    split: Annotated[str, typer.Option(rich_help_panel=_EVAL_TASKS, help="The split.")] = "test",
    samples: Annotated[int, typer.Option(rich_help_panel=_EVAL_TASKS, help="Runs per task.")] = 1,
    k: Annotated[
        str, typer.Option("--k", rich_help_panel=_EVAL_TASKS, help="pass@k for each k: 1,4,8.")
    ] = "1",
    concurrency: Annotated[
        int, typer.Option(rich_help_panel=_EVAL_TASKS, help="Runs in flight at once.")
    ] = 4,
    max_steps: Annotated[
        int,
        typer.Option(
            rich_help_panel=_EVAL_TASKS, help="A run past this many steps errs (0: no cap)."
        ),
    ] = 0,
    limit: Annotated[
        int | None, typer.Option(rich_help_panel=_EVAL_TASKS, help="Only the first N tasks.")
    ] = None,
    seed: Annotated[
        int, typer.Option(rich_help_panel=_EVAL_TASKS, help="Seeds the policy's randomness.")
    ] = 0,
    server: Annotated[
        str | None,
        typer.Option(
            rich_help_panel=_EVAL_TASKS,
            help="Evaluate a running server (its URL) instead of starting one.",
        ),
    ] = None,
    output: Annotated[
        Path | None,
        typer.Option(
            rich_help_panel=_EVAL_OUT,
            help="The report (default eval-ENV-SPLIT.json); FILE.runs.jsonl and the Inspect "
            "log FILE.eval go beside it.",
        ),
    ] = None,
    resume: Annotated[
        bool,
        typer.Option(rich_help_panel=_EVAL_OUT, help="Continue an interrupted eval's runs."),
    ] = False,
    compare_to: Annotated[
        Path | None,
        typer.Option(
            "--compare",
            rich_help_panel=_EVAL_OUT,
            help="An older report: print the tasks fixed and regressed and each score's change.",
        ),
    ] = None,
    as_json: Annotated[
        bool, typer.Option("--json", rich_help_panel=_EVAL_OUT, help="Print the report's JSON.")
    ] = False,
) -> None:
    """Evaluate a policy on ENV's tasks: pass@k, success rate, per task and difficulty.

    Environment options follow ENV (`eval gymnasium --id CartPole-v1 --samples 4 --k 1,4`).
    Writes an RFC 013-shaped JSON report and an Inspect AI log beside it; a progress bar
    goes to stderr, the scores to stdout. `eval --compare OLD.json NEW.json` compares two
    reports without running anything.
    """
    from openenv_mcp.evals import compare, evaluate_sync

    if env is not None and env.endswith(".json"):
        if compare_to is None or ctx.args:
            raise _fail(f"{env} is a report: compare two with eval --compare OLD.json {env}")
        try:
            typer.echo(compare(compare_to, env))
        except OpenEnvError as exc:
            raise _fail(str(exc)) from None
        return
    if env is None:
        raise _fail("eval needs ENV (an environment), or --compare OLD.json NEW.json")
    from openenv_mcp.evals._files import EvalFiles
    from openenv_mcp.evals._run import serve_command

    _load(env)
    files = EvalFiles.named(output, env, split)
    if server is not None and ctx.args:
        raise _fail(f"--server evaluates a running server as it is: leave out {' '.join(ctx.args)}")
    progress = _ProgressBar("run")
    try:
        files.check(resume)
        target = server if server is not None else serve_command(env, list(ctx.args))
        report = evaluate_sync(
            target,
            env=env,
            split=split,
            samples=samples,
            k=k,
            policy=policy,
            concurrency=concurrency,
            max_steps=max_steps,
            limit=limit,
            seed=seed,
            progress=progress,
            runs_file=files.runs,
            resume=resume,
            env_args=list(ctx.args),
            # What an agent policy takes (no local env behind --server).
            policy_options={
                "openai_url": openai_url,
                "model": model,
                "api_key_env": api_key_env,
                "env": None if server is not None else env,
                "env_args": tuple(ctx.args),
                "out": files.agents,
            },
        )
    except OpenEnvError as exc:
        raise _fail(str(exc), code=1 if isinstance(exc, ServerDied) else 2) from None
    finally:
        progress.close()
    try:
        missing = files.write(report)
    except OSError as exc:
        raise _fail(f"cannot write the report to {files.report}: {exc}", code=1) from None
    if missing is not None:
        typer.echo(f"note: no Inspect log: {missing}", err=True)
    typer.echo(json.dumps(report.to_json(), indent=2) if as_json else report.table())
    logged = "" if missing is not None else f"; Inspect log: {files.inspect_log}"
    typer.echo(f"report: {files.report}; runs: {files.runs}{logged}", err=True)
    if compare_to is not None:
        try:
            typer.echo(compare(compare_to, report.to_json()))
        except OpenEnvError as exc:
            raise _fail(str(exc)) from None


def main() -> None:
    """Console entry point.

    After ``serve`` has closed every episode and written every reply, the process
    ends at once: finalizing the interpreter (tearing down FastMCP, pydantic, numpy
    and the emulator's modules) takes a quarter of a second that a harness
    stopping its server would wait for, and there is nothing left for it to do.
    """
    try:
        app()
    except SystemExit as exc:
        if not _SERVED.is_set():
            raise
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
        logging.shutdown()
        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)


if __name__ == "__main__":
    main()

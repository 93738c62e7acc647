"""The program the sandbox runs first (``python -s -B -c BOOT CONFIG MODE ...``).

It imports nothing from its working directory (the agent's files) before it has set the
resource limits on itself (so they bind everything it starts), then either runs
the agent's source (mode ``run``) or imports ``solution.py`` and calls its entry point on
each test's inputs (mode ``test``), writing one JSON line per test to the report pipe. The
expected values never enter the sandbox: the server compares, so a solution that forges
report lines gains nothing it could not get by answering correctly.
"""

from __future__ import annotations

BOOT = r"""
import sys

# -c put the working directory (the agent's files) first on sys.path: nothing there may be
# imported before the limits are set (-P would keep it off, but the interpreter may predate
# Python 3.11); the agent's code gets it back below, once they are
if sys.path[:1] == [""]:
    del sys.path[0]
import json, os, resource


def _own_tasks():
    # Processes and threads already running as this user (RLIMIT_NPROC counts them all):
    # the budget is on top of them.
    uid, count = os.getuid(), 0
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/" + entry + "/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            pass
    return count


def _limit():
    cfg = json.loads(sys.argv[1])
    cpu = cfg["cpu"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    resource.setrlimit(resource.RLIMIT_AS, (cfg["memory"], cfg["memory"]))
    resource.setrlimit(resource.RLIMIT_FSIZE, (cfg["fsize"], cfg["fsize"]))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    nproc = cfg["nproc"] + _own_tasks()
    resource.setrlimit(resource.RLIMIT_NPROC, (nproc, nproc))


def _print_error(exc):
    import traceback
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename in ("<string>",) or (
        tb is not None and tb.tb_frame.f_code.co_filename.startswith("<frozen importlib")
    ):
        tb = tb.tb_next  # this bootstrap's own frames, and importlib's
    traceback.print_exception(type(exc), exc, tb)


def _run(source):
    import linecache
    linecache.cache["<code>"] = (len(source), None, source.splitlines(True), "<code>")
    sys.argv = ["<code>"]
    scope = {"__name__": "__main__", "__builtins__": __builtins__, "__file__": "<code>"}
    try:
        exec(compile(source, "<code>", "exec"), scope)
    except SystemExit:
        raise
    except BaseException as exc:
        _print_error(exc)
        sys.exit(1)


def _plain(value):
    kind = type(value)
    if value is None or kind in (bool, int, str):
        return value
    if kind is float:
        if value != value or value in (float("inf"), float("-inf")):
            raise ValueError("returned " + repr(value) + ", which JSON cannot hold")
        return value
    if kind in (list, tuple):
        return [_plain(v) for v in value]
    if kind is dict:
        out = {}
        for key, v in value.items():
            if type(key) is not str:
                raise TypeError("returned a dict with a " + type(key).__name__ + " key")
            out[key] = _plain(v)
        return out
    raise TypeError("returned a " + kind.__name__ + ", not a JSON value")


def _test(fd, inputs, entry):
    report = os.fdopen(fd, "w", buffering=1)

    def emit(record):
        report.write(json.dumps(record) + "\n")
        report.flush()

    sys.argv = ["solution.py"]
    if not os.path.isfile("solution.py"):
        emit({"setup": "solution.py does not exist: write it first"})
        sys.exit(1)
    import importlib.util
    try:
        spec = importlib.util.spec_from_file_location("solution", "solution.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules["solution"] = module
        spec.loader.exec_module(module)
    except BaseException as exc:
        _print_error(exc)
        why = type(exc).__name__ + ": " + str(exc)[:300]
        emit({"setup": "importing solution.py raised " + why})
        sys.exit(1)
    function = getattr(module, entry, None)
    if not callable(function):
        emit({"setup": "solution.py defines no function " + entry})
        sys.exit(1)
    for i, (args, kwargs) in enumerate(json.loads(inputs)):
        try:
            value = _plain(function(*args, **kwargs))
            text = json.dumps(value)
            if len(text) > 20000:
                raise ValueError("returned a value of " + str(len(text)) + " characters of JSON")
            emit({"i": i, "value": value})
        except BaseException as exc:
            message = str(exc)
            name = type(exc).__name__
            emit({"i": i, "error": (name + (": " + message if message else ""))[:300]})


_limit()
sys.path.insert(0, os.getcwd())
if sys.argv[2] == "run":
    _run(sys.argv[3])
else:
    _test(int(sys.argv[3]), sys.argv[4], sys.argv[5])
"""

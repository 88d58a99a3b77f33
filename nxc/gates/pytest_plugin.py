"""pytest plugin: `.nx` modules are test files, their gates are test items.

    pytest nx_src/                    # every gate, and every library module must compile
    pytest nx_src/ -k attention -n auto --junitxml=gates.xml

Registered through the `pytest11` entry point (`pip install -e .`); without
installing, load it with `-p nxc.gates.pytest_plugin`. Each `.nx` file becomes an
`NxFile` holding one `NxItem` per backend: `main` for a gate, `compile` for a
library module (`main[c]`, `main[py]` with `--nx-backend both`). An item runs
through the same `execute.run_unit` as `nxc test`, so the verdicts match: the
gate runs in its own process with a timeout, and a failure is shown as the
`.nx` source around the `return` that fired and the values of its guard's
operands, never as a Python traceback. Collection only reads the text (no
parse), which keeps `-n auto` (pytest-xdist) cheap: items spread across
workers like any other test.
"""
from __future__ import annotations

import math
import os
import re
import warnings

import pytest

from nxc.diagnostics import display_path
from nxc.gates import collect, execute, partition, report
from nxc.gates.protocol import MAX_TIMEOUT

# The options of this session, kept where pytest keeps plugin state.
OPTIONS_KEY = pytest.StashKey[execute.Options]()


def pytest_addoption(parser):
    group = parser.getgroup("nxc", "nxc: .nx gates as tests")
    group.addoption("--nx-backend", default=None, choices=["c", "py", "both"],
                    help="backend to run .nx gates on: c (default), py, or both (one item each)")
    group.addoption("--nx-timeout", type=float, default=None, metavar="SECONDS",
                    help="stop a gate after SECONDS and fail it as TIMEOUT (default 60)")
    group.addoption("--nx-no-cache", action="store_true", default=False,
                    help="rebuild every module even if a cached build exists")
    group.addoption("--nx-opt", default=None, choices=["0", "2", "native"], help="C optimisation level (default 2)")
    group.addoption("--nx-include", action="append", default=[], metavar="DIR",
                    help="also look for imported .nx modules in DIR")
    group.addoption("--nx-unchecked", action="store_true", default=False,
                    help="C without memory checks and .nx stack (a crash is then located by a checked re-run)")
    group.addoption("--nx-soft-f32", action="store_true", default=False,
                    help="float32 primitives in .nx code (nx_src/nx_f32_soft.nx) instead of the runtime's")
    group.addoption("--nx-partition", default=None, metavar="slice:K/N|hash:K/N",
                    help="run only share K of N of the .nx modules (CI sharding, as nxc test --partition)")
    # The remote cache (nxc/remote/, docs/runner.md): the options of nxc test, with --nx- in front.
    group.addoption("--nx-remote-cache", default=None, metavar="URL",
                    help="share builds through the cache at URL (http://, https://, redis://; $NXC_REMOTE_CACHE)")
    group.addoption("--nx-remote-cache-key-file", default=None, metavar="FILE",
                    help="the shared key of the remote cache ($NXC_REMOTE_CACHE_KEY_FILE, $NXC_REMOTE_CACHE_KEY)")
    group.addoption("--nx-remote-cache-readonly", action="store_true", default=False,
                    help="read the remote cache, never write to it")
    group.addoption("--nx-remote-cache-timeout", type=float, default=None, metavar="SECONDS",
                    help="bound of each request to the remote cache (default 5)")
    parser.addini("nx_collect", "collect .nx files: auto (default: unless pytest took its paths from "
                  "testpaths), always, or never", default="auto")
    parser.addini("nx_backend", "default for --nx-backend", default="c")
    parser.addini("nx_timeout", "default for --nx-timeout (seconds)", default="60")


def _options(config) -> execute.Options:
    backend = config.getoption("nx_backend") or config.getini("nx_backend") or "c"
    timeout = config.getoption("nx_timeout")
    if timeout is None:
        timeout = float(config.getini("nx_timeout") or 60)
    if backend not in ("c", "py", "both"):
        raise pytest.UsageError(f"nx_backend must be c, py or both, not '{backend}'")
    if not (math.isfinite(timeout) and 0 < timeout <= MAX_TIMEOUT):
        raise pytest.UsageError(f"--nx-timeout must be a positive, finite number of seconds, at most "
                                f"{MAX_TIMEOUT:,}, not {timeout}")
    return execute.Options(backends=("c", "py") if backend == "both" else (backend,), timeout=timeout,
                          opt=config.getoption("nx_opt") or "2", use_cache=not config.getoption("nx_no_cache"),
                          include=list(config.getoption("nx_include") or []), timeout_flag="--nx-timeout",
                          soft_f32=bool(config.getoption("nx_soft_f32")),
                          checked=not config.getoption("nx_unchecked"))


def pytest_configure(config):
    config.stash[OPTIONS_KEY] = options = _options(config)
    if config.getoption("nx_remote_cache") or os.environ.get("NXC_REMOTE_CACHE"):
        from nxc.remote.setup import SetupError, configure
        try:
            configure(config.getoption("nx_remote_cache"), config.getoption("nx_remote_cache_key_file"),
                      bool(config.getoption("nx_remote_cache_readonly")), config.getoption("nx_remote_cache_timeout"))
        except SetupError as exc:
            raise pytest.UsageError(str(exc)) from None
    if "py" in options.backends and not execute.py_backend_available():
        raise pytest.UsageError("--nx-backend py needs the Python backend (nxc.backend.py.backend), "
                                "which this installation does not have")


def pytest_collection_modifyitems(config, items):
    """--nx-partition: keep this share's .nx modules (other tests are left alone)."""
    spec = config.getoption("nx_partition")
    if not spec:
        return
    try:
        part = partition.parse(spec)
    except collect.UsageError as exc:
        raise pytest.UsageError(str(exc)) from None
    nx = [it for it in items if isinstance(it, NxItem)]
    keys = [collect.Item(it.nodeid, str(it.path), display_path(str(it.path)), it.backend, it.kind) for it in nx]
    mine = {k.id for k in partition.select(keys, part)}
    deselected = [it for it in nx if it.nodeid not in mine]
    if deselected:
        config.hook.pytest_deselected(items=deselected)
        items[:] = [it for it in items if not (isinstance(it, NxItem) and it.nodeid not in mine)]


def pytest_collect_file(file_path, parent):
    if file_path.suffix == ".nx" and _collects_nx(parent.config):
        return NxFile.from_parent(parent, path=file_path)
    return None


def _collects_nx(config) -> bool:
    """`pytest nx_src/` collects gates; a bare `pytest` in a project whose
    `testpaths` hold Python tests does not pick up the .nx fixtures lying
    there (tests/nx/*.nx in nxc itself), which the suite already runs its own
    way. `nx_collect = always` (or never) in the ini file overrides."""
    mode = str(config.getini("nx_collect") or "auto").strip().lower()
    if mode in ("always", "true", "yes", "1"):
        return True
    if mode in ("never", "false", "no", "0"):
        return False
    source = getattr(config, "args_source", None)
    testpaths = getattr(getattr(pytest.Config, "ArgsSource", None), "TESTPATHS", object())
    return source != testpaths


class NxFile(pytest.File):
    def collect(self):
        options = self.config.stash[OPTIONS_KEY]
        kind, main_line = collect.scan_kind(str(self.path))
        name = "main" if kind == "gate" else "compile"
        for backend in options.backends:
            item_name = f"{name}[{backend}]" if len(options.backends) > 1 else name
            item = NxItem.from_parent(self, name=item_name, backend=backend, kind=kind, main_line=main_line)
            item.extra_keyword_matches.update({kind, backend})
            yield item


def _junit_family(config) -> str:
    try:
        return config.getini("junit_family") or "xunit2"
    except ValueError:          # -p no:junitxml: the ini key is not there
        return "xunit2"


class NxWarning(UserWarning):
    """A warning of the .nx front end (unused variable, unreachable code...):
    shown in pytest's warnings summary; `-W error::nxc.gates.pytest_plugin.NxWarning`
    (or `-W error`) makes the item fail."""


_WHERE = re.compile(r"^(.*?):(\d+):\d+: warning: ")


class NxGateFailure(Exception):
    """Raised by NxItem.runtest; carries the runner's Result to repr_failure."""

    def __init__(self, result: execute.Result):
        super().__init__(result.message)
        self.result = result


class NxItem(pytest.Item):
    def __init__(self, *, backend: str, kind: str, main_line: int = 0, **kwargs):
        super().__init__(**kwargs)
        self.backend = backend
        self.kind = kind
        self.main_line = main_line
        self.result: execute.Result | None = None

    def runtest(self):
        path = str(self.path)
        display = display_path(path)
        item = collect.Item(self.nodeid, path, display, self.backend, self.kind, self.main_line)
        unit = collect.Unit(path, display, [item])
        self.result = result = execute.run_unit(unit, self.config.stash[OPTIONS_KEY])[0]
        # Testcase-level <properties> are outside junit-10.xsd, the schema of
        # pytest's default xunit2 family: the value and the guard's operands are
        # in the failure's message and text there. xunit1 gets them as properties.
        if _junit_family(self.config) == "xunit1":
            # str(): pytest-xdist ships properties through execnet, which takes plain types only
            self.user_properties.append(("nx_status", str(result.status)))
            if result.value is not None:
                self.user_properties.append(("nx_value", result.value))
            if result.location:
                self.user_properties.append(("nx_location", result.location))
            for text, value in result.captured:
                self.user_properties.append((f"nx_captured {text}", value))
        if result.output:
            self.add_report_section("call", "gate output", result.output)
        try:
            for text in result.warnings:
                m = _WHERE.match(text)
                warnings.warn_explicit(text, NxWarning, filename=m.group(1) if m else path,
                                       lineno=int(m.group(2)) if m else 0)
        except NxWarning:       # -W error: a failing gate still reports its own failure
            if not result.passed:
                raise NxGateFailure(result) from None
            raise
        if not result.passed:
            raise NxGateFailure(result)
        if report.is_stub(result):      # compiles, but stands for a module not there: not a pass
            pytest.skip(f"STUB: {report.STUB_NOTE}")

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, NxGateFailure):
            r = excinfo.value.result
            return r.report or f"{r.status}: {r.message}"
        if isinstance(excinfo.value, NxWarning):       # -W error: the warning is the failure
            return f"{excinfo.value} (a warning, made an error by -W)"
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self):
        # pytest's line numbers are 0-based; point at `func main` for a gate.
        line = self.main_line - 1 if self.main_line else 0
        what = "gate" if self.kind == "gate" else "library module (must compile)"
        return self.path, line, f"{self.path.name}: {what} [{self.backend}]"

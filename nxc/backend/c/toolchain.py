"""C backend, toolchain: GCC's compile and link without the driver.

`gcc -c x.c -o x.o` is three processes (the driver, cc1, as) and a link
through gcc three too (the driver, collect2, ld): the driver and collect2 only
work out the command lines of the others, the same ones every time for a
given compiler and flags. So nxc asks the driver once (`gcc -### ...`, which
prints the commands without running them) for a compile and for a link of
placeholder files, keeps the answer in the cache folder (sealed, keyed by
the compiler's identity, the flags, the environment the driver reads and
the host's CPU), and from then on runs cc1 and as, or ld, itself: a compile
is two processes, a link one (docs/build.md, "No driver").

A probed plan is used only when, at probe time, a small file compiled and
linked both ways gives byte-identical objects and libraries (tests compare
real modules' objects and gates' libraries too). Anything unexpected (not
GCC, a wrapper such as ccache, a driver that runs other programs, an output
that differs, `NXC_DRIVER=1`) leaves the driver in charge: `plan_compile`
and `plan_link` then return None.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
import tempfile
from functools import lru_cache

from nxc.backend.c import build as c_build
from nxc.backend.c.build import host_cpu
from nxc.cache import cache_dir, parts_digest, prune_least_recent, read_sealed_json, write_sealed_json

# Placeholder paths of the probe: the driver does not look at its inputs for
# `-###`, and every path it derives from them is recognised by these.
_DIR = "/nxc-probe-dir"
SRC = _DIR + "/src.c"
OUT = _DIR + "/out.o"
OBJ = _DIR + "/obj.o"
LIB = _DIR + "/lib.so"
# Bump when what a plan holds or how it is used changes.
PLAN_VERSION = "2"
# Plans kept (a few per build configuration, each under 4 KB; the
# precompiled header's folder, in the flags, changes with nxc's code).
MAX_PLANS = 64
# The environment variables the GCC driver reads to find its programs.
_DRIVER_ENV = ("PATH", "GCC_EXEC_PREFIX", "COMPILER_PATH", "LIBRARY_PATH", "GCC_ROOT", "LD_RUN_PATH",
               "CPATH", "C_INCLUDE_PATH", "SOURCE_DATE_EPOCH")
# The object the probe compiles and links: a little of everything an object
# of nxc holds (a function, data, a string, a hidden symbol).
_PROBE_C = """\
static const char nxc_probe_name[] = "probe";
int nxc_probe_table[4] = {1, 2, 3, 4};
__attribute__((visibility("default"))) int nxc_probe(int x) {
    return x * 3 + nxc_probe_table[x & 3] + nxc_probe_name[0];
}
"""
# Executables a plain GCC driver is called (cc is usually a link to one).
_GCC_NAME = re.compile(r"^(?:[\w.-]+-)?gcc(?:-\d+(?:\.\d+)*)?$")

_plans: dict[str, object] = {}          # plan key -> plan (None: the driver), this process


def disabled() -> bool:
    return os.environ.get("NXC_DRIVER", "") not in ("", "0")


_digest = parts_digest


@lru_cache(maxsize=None)
def _is_plain_gcc(cc: tuple[str, ...]) -> bool:
    """cc is GCC's driver itself, with no wrapper in front (ccache, distcc, a
    script): only then is running its programs the same as running it."""
    exe = shutil.which(cc[0])
    if exe is None:
        return False
    return bool(_GCC_NAME.match(os.path.basename(os.path.realpath(exe))))


def _plan_key(kind: str, identity: str, template: list[str]) -> str:
    """The compiler, the flags, what the driver reads from the environment and
    the host's CPU (the driver turns -march=native into the host's own -m
    flags: a cache folder shared between machines must not hand them on)."""
    env = [f"{name}={os.environ.get(name, '')}" for name in _DRIVER_ENV]
    return kind + "-" + _digest(PLAN_VERSION, kind, identity, host_cpu(), *env, "\0".join(template))[:24]


def _plans_dir() -> str:
    return os.path.join(cache_dir(), "c", "toolchain")


def _stable(steps) -> bool:
    """The programs of a plan, and the libraries and start files a link plan
    names by path, are still where they were (a compiler upgrade changes the
    identity, hence the key; this catches a removed program or library)."""
    return all(os.path.isfile(step[0]) and all(os.path.isfile(arg) for arg in step[1:] if _a_file_named(arg))
               for step in steps)


def _a_file_named(arg: str) -> bool:
    return os.path.isabs(arg) and not arg.startswith(_DIR) and arg.endswith((".so", ".a", ".o"))


def _plan(kind: str, cc: list[str], identity: str, template: list[str], probe):
    if disabled() or not _is_plain_gcc(tuple(cc)):
        return None
    key = _plan_key(kind, identity, template)
    if key in _plans:
        return _plans[key]
    path = os.path.join(_plans_dir(), key + ".json")
    stored = read_sealed_json(path, "toolchain/" + key, touch=True)
    if isinstance(stored, dict) and "steps" in stored:
        steps = stored["steps"]
        plan = None if steps is None else [list(s) for s in steps]
        if plan is None or _stable(plan):
            _plans[key] = plan
            return plan
    try:
        plan = probe()
    except (OSError, subprocess.SubprocessError, ValueError):
        # could not ask (out of processes, a timeout under load): the driver
        # for this process, and the question again in the next one
        _plans[key] = None
        return None
    if write_sealed_json(path, "toolchain/" + key, {"steps": plan, "template": template}):
        prune_least_recent(_plans_dir(), MAX_PLANS,     # the plans only (not the ident-/gold- memos)
                           lambda name: name.startswith(("cc-", "ld-")) and name.endswith(".json"))
    _plans[key] = plan
    return plan


def _driver_commands(cmd: list[str]) -> list[list[str]]:
    """The commands `cmd` would run (`-###`), or [] when it does not say."""
    proc = subprocess.run([*cmd, "-###"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        return []
    # The commands are the lines starting with a space; a `|` ends a piped one.
    return [shlex.split(line) for line in proc.stderr.splitlines() if line.startswith(" ")]


def _program(name: str) -> str | None:
    """The absolute path of a program the driver named (it names `as`, found
    on PATH, by its bare name)."""
    if os.path.isabs(name):
        return name if os.path.isfile(name) else None
    return shutil.which(name)


# ---- compile: cc1 writes assembly, as assembles it ----
def plan_compile(cc: list[str], identity: str, args: list[str]) -> list[list[str]] | None:
    """The cc1 and as command templates of `cc *args -c SRC -o OUT`, or None
    (run the driver). Templates hold SRC, OUT and the assembly file's
    `{asm}`; `compile_commands` fills them in."""
    template = [*args, "-c", SRC, "-o", OUT]
    return _plan("cc", cc, identity, template, lambda: _probe_compile(cc, args, template))


def _probe_compile(cc: list[str], args: list[str], template: list[str]):
    steps = _driver_commands([*cc, *template])
    if len(steps) != 2 or os.path.basename(steps[0][0]) != "cc1" or os.path.basename(steps[1][0]) != "as":
        return None
    cc1, as_ = steps
    # cc1 ... -o TMP.s, then as ... -o OUT TMP.s
    if cc1[-2:-1] != ["-o"] or not cc1[-1].endswith(".s") or as_[-1] != cc1[-1] or as_[-3:-1] != ["-o", OUT]:
        return None
    asm = cc1[-1]
    cc1 = [*cc1[:-1], "{asm}"]
    as_ = [*as_[:-1], "{asm}"]
    for step in (cc1, as_):
        exe = _program(step[0])
        if exe is None:
            return None
        step[0] = exe
    # -dumpdir and -dumpbase name the outputs of -save-temps and dumps: derived from OUT.
    for i, arg in enumerate(cc1[:-1]):
        if arg == asm:
            return None                 # the temporary file elsewhere: not a shape we know
        if i and cc1[i - 1] == "-dumpdir":
            if arg != _DIR + "/":
                return None
            cc1[i] = "{outdir}/"
        elif i and cc1[i - 1] == "-dumpbase":
            if arg != "out.c":
                return None
            cc1[i] = "{stem}.c"
        elif _DIR in arg and arg not in (SRC, OUT):
            return None
    plan = [cc1, as_]
    return plan if _same_object(cc, args, plan) else None


def assembly_of(output: str) -> str:
    """The assembly file cc1 writes and as reads, for object `output`: beside it."""
    return os.path.splitext(output)[0] + ".s"


def compile_commands(plan: list[list[str]], source: str, output: str) -> list[list[str]]:
    """The plan's commands for `source` -> `output` (the assembly beside the output)."""
    stem = os.path.splitext(os.path.basename(output))[0]
    values = {SRC: source, OUT: output, "{asm}": assembly_of(output),
              "{outdir}/": os.path.dirname(output) + "/", "{stem}.c": stem + ".c"}
    return [[values.get(arg, arg) for arg in step] for step in plan]


def _same_object(cc: list[str], args: list[str], plan) -> bool:
    """The plan makes the very bytes the driver makes, on the probe file."""
    with tempfile.TemporaryDirectory(prefix="nxc-probe-") as tmp:
        source = os.path.join(tmp, "probe.c")
        with open(source, "w", encoding="utf-8") as f:
            f.write(_PROBE_C)
        by_driver = os.path.join(tmp, "d", "probe.o")
        direct = os.path.join(tmp, "p", "probe.o")
        os.mkdir(os.path.dirname(by_driver))
        os.mkdir(os.path.dirname(direct))
        if subprocess.run([*cc, *args, "-c", source, "-o", by_driver], capture_output=True).returncode != 0:
            return False
        for step in compile_commands(plan, source, direct):
            if subprocess.run(step, capture_output=True).returncode != 0:
                return False
        return _same_bytes(by_driver, direct)


# ---- link: ld itself, without the driver and collect2 ----
def plan_link(cc: list[str], identity: str, before: list[str], after: list[str]) -> list[str] | None:
    """The ld command template of `cc *before OBJECTS -o OUT *after`, or None
    (run the driver). The template holds OBJ where the objects go and LIB."""
    template = [*before, OBJ, "-o", LIB, *after]
    plan = _plan("ld", cc, identity, template, lambda: _probe_link(cc, before, after, template))
    return None if plan is None else plan[0]


def _probe_link(cc: list[str], before: list[str], after: list[str], template: list[str]):
    steps = _driver_commands([*cc, *template])
    if len(steps) != 1 or os.path.basename(steps[0][0]) != "collect2":
        return None
    args = steps[0][1:]
    if args.count(OBJ) != 1 or args.count(LIB) != 1:
        return None
    # collect2 takes -fuse-ld= for itself (which ld it runs) and hands the LTO
    # plugin to ld; nxc never compiles with -flto, so the plugin has nothing
    # to do (the probe's byte comparison below says so for this toolchain).
    ld_name = "ld"
    kept = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == "-plugin":
            skip = True
        elif arg.startswith("-plugin-opt="):
            continue
        elif arg.startswith("-fuse-ld="):
            ld_name = "ld." + arg[len("-fuse-ld="):]
        elif _DIR in arg and arg not in (OBJ, LIB):
            return None
        else:
            kept.append(arg)
    # collect2 looks for the linker where the driver looks for its programs.
    proc = subprocess.run([*cc, f"-print-prog-name={ld_name}"], capture_output=True, text=True, timeout=60)
    exe = _program(proc.stdout.strip()) if proc.returncode == 0 else None
    if exe is None:
        return None
    # Each search folder once: ld reads every -L folder whole before it looks
    # for a library, and GCC's list names /usr/lib/x86_64-linux-gnu three
    # times and /usr/lib four (through .. and the /lib link). A later copy of
    # a folder can never supply what the first did not, so this changes no
    # search (gold: 13 ms to 11.6 ms for a gate of 90 objects).
    plan = [[exe, *_search_folders_once(kept)]]
    return plan if _same_library(cc, before, after, plan[0]) else None


def _search_folders_once(args: list[str]) -> list[str]:
    """`args` without each -L folder that an earlier -L names already (the same
    folder once links are followed)."""
    seen = set()
    out = []
    for arg in args:
        if arg.startswith("-L/"):
            real = os.path.realpath(arg[2:])
            if real in seen:
                continue
            seen.add(real)
        out.append(arg)
    return out


def link_command(plan: list[str], objects: list[str], output: str) -> list[str]:
    cmd = []
    for arg in plan:
        if arg == OBJ:
            cmd.extend(objects)
        else:
            cmd.append(output if arg == LIB else arg)
    return cmd


def _same_library(cc: list[str], before: list[str], after: list[str], plan: list[str]) -> bool:
    with tempfile.TemporaryDirectory(prefix="nxc-probe-") as tmp:
        source = os.path.join(tmp, "probe.c")
        with open(source, "w", encoding="utf-8") as f:
            f.write(_PROBE_C)
        obj = os.path.join(tmp, "probe.o")
        if subprocess.run([*cc, "-fPIC", "-O2", "-c", source, "-o", obj], capture_output=True).returncode != 0:
            return False
        by_driver = os.path.join(tmp, "driver.so")
        direct = os.path.join(tmp, "direct.so")
        if subprocess.run([*cc, *before, obj, "-o", by_driver, *after], capture_output=True).returncode != 0:
            return False
        if subprocess.run(link_command(plan, [obj], direct), capture_output=True).returncode != 0:
            return False
        return _same_bytes(by_driver, direct)


def _same_bytes(a: str, b: str) -> bool:
    try:
        with open(a, "rb") as fa, open(b, "rb") as fb:
            return fa.read() == fb.read()
    except OSError:
        return False


@lru_cache(maxsize=1)
def link_flags() -> tuple[str, ...]:
    """`-fuse-ld=gold` when the compiler can link with gold: a gate links 20-60
    objects, which gold does in about two thirds of the CPU time of ld.bfd
    (docs/build.md). Asked once per compiler and gold binary, remembered in
    the cache folder (a process start of its own would cost what it saves),
    sealed, and read back only as one of the two answers: a damaged memo must
    not put other flags on the linker's command line."""
    gold = shutil.which("ld.gold")
    if gold is None or os.environ.get("NXC_NO_GOLD", "") not in ("", "0"):
        return ()
    cc = tuple(c_build.compiler())
    try:
        st = os.stat(gold)
    except OSError:
        return ()
    memo = os.path.join(cache_dir(), "c", "toolchain", "gold-" + parts_digest(
        c_build.compiler_identity(cc), gold, str(st.st_size), str(st.st_mtime_ns))[:16] + ".json")
    found = read_sealed_json(memo, os.path.basename(memo))
    if found in ([], ["-fuse-ld=gold"]):
        return tuple(found)
    try:
        proc = subprocess.run([*cc, "-fuse-ld=gold", "-Wl,--version"], capture_output=True, text=True, timeout=60)
        found = ("-fuse-ld=gold",) if proc.returncode == 0 and "gold" in proc.stdout.lower() else ()
    except (OSError, subprocess.SubprocessError):
        return ()
    write_sealed_json(memo, os.path.basename(memo), list(found))
    return found

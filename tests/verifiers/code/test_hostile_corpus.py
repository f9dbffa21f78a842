"""A hostile corpus: programs that try to escape, cheat or do harm. Each must be contained.

Every program runs twice: through the full stack, and with the RestrictedPython layer switched
off (``restricted=False``), which proves the OS layers and the out-of-process judge hold on their
own. After each run the host is checked: no canary file anywhere the program aimed at, no
process left under a sandbox uid, the sacrificial process alive, no connection on the host's
listening socket, the secret file unread and unchanged.

The placeholders (CANARY_TMP, VICTIM, PORT, ...) are filled in per run; the expected value of
every test is a fresh random SECRET, so only a program that could read it would pass.
"""

from __future__ import annotations

import os
import secrets
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.code import CodeVerifier, Limits, SandboxPool
from rlvr_gym.verifiers.code.rootfs import runtime_paths
from tests.support.code import fenced, sandbox_processes

REPO = Path(__file__).resolve().parents[3]
SECRET = secrets.token_hex(16)
SECRET_ENV = "RLVR_GYM_TEST_SECRET"
RUN_LOCK_CANARY = f"/run/lock/rlvr-canary-{SECRET[:8]}"
TMP_CANARY = f"/tmp/rlvr-canary-{SECRET[:8]}.txt"  # /tmp is world-writable: only the private tmpfs guards it

LOOP = "while True:\n    pass"
F = "\ndef f():\n    return 0\n"

CORPUS: dict[str, str] = {
    # --- time and resources -------------------------------------------------------------------
    "infinite-loop": LOOP,
    "infinite-loop-in-call": "def f():\n    while True:\n        pass",
    "sleep-forever": "import time\ntime.sleep(600)",
    "fork-bomb": "import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n        pass",
    "fork-and-detach": "import os\nif os.fork() == 0:\n    os.setsid()\n    while True:\n        pass" + F,
    "double-fork-daemon": "import os, time\nif os.fork() == 0:\n    if os.fork() == 0:\n        os.setsid()\n        time.sleep(600)\n    os._exit(0)"
    + F,
    "memory-bomb": "x = [0] * (10 ** 10)",
    "memory-grow": "chunks = []\nwhile True:\n    chunks.append(bytearray(50 * 1024 * 1024))",
    "huge-output": "print('x' * (10 ** 8))" + F,
    "huge-output-in-call": "def f():\n    while True:\n        print('spam' * 1000)",
    "threads-spin": "import threading\nfor i in range(64):\n    threading.Thread(target=lambda: [0 for _ in iter(int, 1)]).start()",
    "fd-exhaustion": "import os\nfds = [os.open('/dev/null', 0) for _ in range(100000)]",
    "big-file": "open('big', 'wb').write(b'x' * (100 * 1024 * 1024))" + F,
    "huge-return": "def f():\n    return 'x' * (64 * 1024 * 1024)",
    "deep-return": "def f():\n    x = []\n    for i in range(100000):\n        x = [x]\n    return x",
    "deep-recursion-segfault": "import sys\nsys.setrecursionlimit(10 ** 6)\ndef g(n):\n    return g(n + 1)\ng(0)",
    # --- compiler ------------------------------------------------------------------------------
    "deep-nesting-parens": "x = " + "(" * 100_000 + ")" * 100_000,
    "deep-nesting-unary": "x = " + "-" * 100_000 + "1",
    "deep-nesting-sums": "x = 1" + " + 1" * 100_000,
    "deep-nesting-lists": "x = " + "[" * 5000 + "]" * 5000,
    # --- files, environment, secrets ---------------------------------------------------------
    "write-host-tmp": "open('CANARY_TMP', 'w').write('pwned')" + F,
    "write-outside-tmp": "open('CANARY_DIR', 'w').write('pwned')" + F,
    "write-run-lock": f"open('{RUN_LOCK_CANARY}', 'w').write('pwned')" + F,
    "os-system": f"import os\nos.system('touch CANARY_DIR CANARY_TMP {RUN_LOCK_CANARY}')" + F,
    "subprocess": "import subprocess\nsubprocess.run(['touch', 'CANARY_DIR'])" + F,
    "read-secret-file": "def f():\n    return open('SECRET_FILE').read()",
    "overwrite-secret-file": "open('SECRET_FILE', 'w').write('gone')" + F,
    "environment-secret": f"import os\ndef f():\n    return os.environ.get('{SECRET_ENV}', '')",
    "proc-environ-secret": (
        "import os\ndef f():\n    for pid in os.listdir('/proc'):\n        try:\n"
        "            data = open('/proc/%s/environ' % pid).read()\n        except Exception:\n            continue\n"
        f"        if '{SECRET_ENV}=' in data:\n            return data.split('{SECRET_ENV}=')[1].split(chr(0))[0]\n    return ''"
    ),
    "worker-memory": "import os\ndef f():\n    return open('/proc/%d/mem' % os.getppid(), 'rb').read(16).decode()",
    # --- processes and signals ---------------------------------------------------------------
    "kill-victim": "import os\nos.kill(VICTIM, 9)" + F,
    "kill-everything": "import os\nos.kill(-1, 9)" + F,
    "kill-parent": "import os\nos.kill(os.getppid(), 9)" + F,
    "signal-tampering": (
        "import signal\nfor s in (signal.SIGTERM, signal.SIGXCPU, signal.SIGINT, signal.SIGALRM, signal.SIGHUP):\n"
        "    signal.signal(s, signal.SIG_IGN)\n" + LOOP
    ),
    # --- forging the verdict -----------------------------------------------------------------
    "exit-0-before-tests": "import os\nos._exit(0)",
    "exit-0-in-call": "def f():\n    import os\n    os._exit(0)",
    "system-exit": "raise SystemExit(0)",
    "always-equal": "class Liar:\n    def __eq__(self, other):\n        return True\ndef f():\n    return Liar()",
    "patch-assert": "import builtins\nbuiltins.AssertionError = type('Nope', (BaseException,), {})\ndef f():\n    return 0",
    "rewrite-harness": (
        "import verifiers.code.runner as r, verifiers.code.harness as h\n"
        "r._answer = lambda *a, **k: {'ok': True, 'value': True}\nh.same_value = lambda *a: True\ndef f():\n    return 0"
    ),
    "forge-frames-on-every-fd": (
        "import os, json, struct\nbody = json.dumps({'status': 'ran', 'passed': 1, 'total': 1, 'ok': True, 'value': 'x'}).encode()\n"
        "for fd in range(256):\n    try:\n        os.write(fd, struct.pack('>I', len(body)) + body)\n    except OSError:\n        pass"
        + F
    ),
    "raise-keyboard-interrupt": "def f():\n    raise KeyboardInterrupt",
    # --- RestrictedPython escapes ------------------------------------------------------------
    "format-string-escape": "def f():\n    return '{0.__class__.__mro__}'.format(1)",
    "format-map-escape": "def f():\n    return '{x.__init__.__globals__}'.format_map({'x': f})",
    "subclasses-escape": "def f():\n    return str(().__class__.__base__.__subclasses__())",
    "generator-frame-escape": "def f():\n    g = (x for x in [1])\n    return str(g.gi_frame.f_back.f_globals)",
    "getattr-escape": "def f():\n    return str(getattr(getattr((), '__class__'), '__base__'))",
    "eval-escape": "def f():\n    return eval(\"__import__('os').popen('cat SECRET_FILE').read()\")",
    "builtins-dict": "def f():\n    return __builtins__['open']('SECRET_FILE').read()",
    "sys-modules": "import sys\ndef f():\n    return sys.modules['os'].popen('cat SECRET_FILE').read()",
    "operator-attrgetter-escape": "import operator\ndef f():\n    return str(operator.attrgetter('__class__.__base__')(()))",
    "typing-annotation-eval-escape": (
        'import typing\ndef g(x: "().__class__.__base__.__subclasses__()"):\n    pass\n'
        "def f():\n    return str(typing.get_type_hints(g))"
    ),
    "singledispatch-annotation-escape": (
        "from functools import singledispatch\n@singledispatch\ndef h(x):\n    pass\n"
        "@h.register\ndef _(x: \"open('SECRET_FILE').read()\"):\n    pass\ndef f():\n    return 0"
    ),
    # --- native code and network -------------------------------------------------------------
    "ctypes-kill-and-setuid": "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.setuid(0)\nlibc.kill(VICTIM, 9)"
    + F,
    "ctypes-segfault": "import ctypes\nctypes.string_at(0)",
    "ctypes-connect": (
        "import ctypes, struct\nlibc = ctypes.CDLL(None)\nfd = libc.socket(2, 1, 0)\n"
        "addr = struct.pack('<HH4s8x', 2, ((PORT & 255) << 8) | (PORT >> 8), bytes([127, 0, 0, 1]))\n"
        "def f():\n    return libc.connect(fd, addr, 16)"
    ),
    "ctypes-leave-netns": (
        "import ctypes\nlibc = ctypes.CDLL(None)\nlibc.unshare(0x10000000)\nfd = libc.open(b'/proc/1/ns/net', 0)\n"
        "libc.setns(fd, 0x40000000)\nimport socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=1)"
        + F
    ),
    "socket-connect": "import socket\nsocket.create_connection(('127.0.0.1', PORT), timeout=1)" + F,
}


@pytest.fixture(scope="module")
def pool():
    os.environ[SECRET_ENV] = SECRET  # set in the host; workers must not inherit it
    try:
        with SandboxPool(2) as p:
            yield p
    finally:
        os.environ.pop(SECRET_ENV, None)


@pytest.fixture(scope="module")
def host():
    """Canary locations, a secret file, a sacrificial process and a listening socket."""
    outside = REPO / ".pytest_cache"
    outside.mkdir(exist_ok=True)
    canary_dir = Path(tempfile.mkdtemp(prefix="rlvr-canary-", dir=outside))
    canary_dir.chmod(0o755)  # readable, not writable, for other users: the uid wall must hold
    secret_file = canary_dir / "secret.txt"
    secret_file.write_text(SECRET)
    secret_file.chmod(0o600)
    victim = subprocess.Popen(["sleep", "600"], env={SECRET_ENV: SECRET})
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.setblocking(False)
    placeholders = {
        "CANARY_TMP": TMP_CANARY,
        "CANARY_DIR": str(canary_dir / "canary.txt"),
        "SECRET_FILE": str(secret_file),
        "VICTIM": str(victim.pid),
        "PORT": str(listener.getsockname()[1]),
    }
    yield Host(placeholders, victim, listener)
    victim.kill()
    victim.wait()
    listener.close()
    for stray in (TMP_CANARY, RUN_LOCK_CANARY):
        Path(stray).unlink(missing_ok=True)
    for path in canary_dir.iterdir():
        path.unlink()
    canary_dir.rmdir()


@dataclass
class Host:
    placeholders: dict[str, str]
    victim: subprocess.Popen
    listener: socket.socket

    def fill(self, program: str) -> str:
        for key, value in self.placeholders.items():
            program = program.replace(key, value)
        return program

    def assert_unharmed(self) -> None:
        for key in ("CANARY_TMP", "CANARY_DIR"):
            assert not Path(self.placeholders[key]).exists(), f"{key} was written"
        assert not Path(RUN_LOCK_CANARY).exists(), "/run/lock canary was written"
        assert Path(self.placeholders["SECRET_FILE"]).read_text() == SECRET, "the secret file was changed"
        assert sorted(p.name for p in Path(self.placeholders["CANARY_DIR"]).parent.iterdir()) == [
            "secret.txt"
        ]
        assert self.victim.poll() is None, "the sacrificial process was killed"
        assert not sandbox_processes(), "a sandboxed process outlived its verdict"
        with pytest.raises(BlockingIOError):
            self.listener.accept()  # nobody connected to the host's socket


@pytest.mark.parametrize("restricted", [True, False], ids=["full-stack", "os-layers-only"])
@pytest.mark.parametrize("name", sorted(CORPUS))
def test_hostile_program_is_contained(name, restricted, pool, host):
    verifier = CodeVerifier(limits=Limits(wall_s=1.0, cpu_s=1), pool=pool, restricted=restricted)
    program = host.fill(CORPUS[name])
    for task in (
        {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": SECRET}]}},
        {"tests": {"kind": "assert", "cases": [f"assert f() == {SECRET!r}"]}},
    ):
        verdict = verifier(fenced(program), task)
        assert not verdict.passed and verdict.score == 0.0, verdict
        assert verdict.reason is not Reason.ERROR, verdict  # containment is the model's failure, not our bug
        if restricted and name not in ("infinite-loop", "infinite-loop-in-call", "huge-output-in-call"):
            # the first filter already refuses most of the corpus; the rest fails at run time
            assert verdict.reason in (Reason.UNSAFE, Reason.WRONG_ANSWER, Reason.TIMEOUT, Reason.BAD_FORMAT)
        host.assert_unharmed()


def test_the_corpus_is_big_enough():
    assert len(CORPUS) >= 30


def test_timeouts_and_bombs_are_reported_as_such(pool, host):
    verifier = CodeVerifier(limits=Limits(wall_s=1.0, cpu_s=1), pool=pool, restricted=False)
    task = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": SECRET}]}}
    assert verifier(fenced(CORPUS["infinite-loop"]), task).reason is Reason.TIMEOUT
    assert verifier(fenced(host.fill(CORPUS["fork-bomb"])), task).reason is Reason.TIMEOUT
    assert verifier(fenced(CORPUS["deep-nesting-unary"]), task).reason in (Reason.UNSAFE, Reason.BAD_FORMAT)
    host.assert_unharmed()


def test_a_filled_tmp_does_not_leak_into_the_next_submission(pool):
    verifier = CodeVerifier(limits=Limits(wall_s=2.0, cpu_s=2), pool=SandboxPool(1), restricted=False)
    task = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": 0}]}}
    fill_tmp = (
        "import os\ni = 0\ntry:\n    while True:\n        open('/tmp/f%d' % i, 'wb').write(b'x' * (4 << 20))\n        i += 1\nexcept OSError:\n    pass"
        + F
    )
    assert verifier(fenced(fill_tmp), task).passed
    # what the next submission can see of it: its working dir, and /tmp where it may list it
    # (without namespaces Landlock hides the host's /tmp, and the fill above was refused)
    # A runtime that lives under /tmp (a venv in a mktemp checkout) is bound read-only into the
    # private /tmp; the folders that lead to it are not a leak.
    runtime = {path.split("/")[2] for path in runtime_paths() if path.startswith("/tmp/")}
    look = (
        "import os\ndef f():\n    names = set(os.listdir('.'))\n    try:\n"
        "        names |= set(os.listdir('/tmp'))\n    except PermissionError:\n        pass\n"
        "    try:\n        open('/dev/shm/probe', 'w').close()\n        shm = 1\n    except OSError:\n"
        f"        shm = 0\n    return len(names - {{os.path.basename(os.getcwd())}} - {runtime!r}) + shm"
    )  # /dev/shm: absent from the minimal root, not writable under Landlock
    assert verifier(fenced(look), task).passed  # the previous run's files are gone
    verifier.pool.close()
    assert sys.platform.startswith("linux")

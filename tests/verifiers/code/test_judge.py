"""The judge's walls, piece by piece: the decoder's caps, the judge's read order, the workspace.

The three-mode probes (``tests/support/sandbox_probes.py``) show each breach closed end to end; these
name the part that closes it, so a regression points at its cause.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from rlvr_gym.verifiers import Reason
from rlvr_gym.verifiers.code import CodeVerifier, Limits, SandboxPool, same_value
from rlvr_gym.verifiers.code.codec import MAX_ELEMENTS, Budget, CodecError, FrameReader, dumps, loads
from rlvr_gym.verifiers.code.harness import covers_every_call, plan_ahead
from rlvr_gym.verifiers.code.workspace import Workspace, empty_tree
from tests.support.code import fenced
from tests.support.timing import bound


def _read(payload: bytes) -> object:
    """``payload`` (JSON) through the judge's reader, with a fresh budget, written by a child."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(read)
            view = memoryview(len(payload).to_bytes(4, "big") + payload)
            while view:
                view = view[os.write(write, view) :]
        finally:
            os._exit(0)
    os.close(write)
    try:
        return FrameReader(read, values=True, budget=Budget()).read()
    finally:
        os.close(read)
        os.waitpid(pid, 0)


def test_values_are_counted_before_they_are_decoded():
    payload = b'{"ok":true,"value":[' + b"[]," * 2_700_000 + b"[]]}"  # ~8 MB: ~200 MB as lists
    start = time.monotonic()
    with pytest.raises(CodecError, match="values"):
        _read(payload)
    assert time.monotonic() - start < bound(2.0)
    strings = json.dumps({"ok": True, "value": ["a,b,c,[{" * 1000] * 100}).encode()  # not values
    assert _read(strings)["value"][0].startswith("a,b,c")
    budget = Budget()
    budget.charge(b"[" + b"0," * (MAX_ELEMENTS // 2) + b"0]")
    with pytest.raises(CodecError):  # the budget is the submission's, across its answers
        budget.charge(b"[" + b"0," * (MAX_ELEMENTS // 2) + b"0]")


def test_sets_and_dicts_with_shared_hashes_are_refused_quickly():
    colliding = [i * (2**61 - 1) for i in range(1, 80_001)]  # every one hashes to 0
    payloads = [
        json.dumps({"ok": True, "value": tagged}).encode()
        for tagged in ({"s": colliding}, {"f": colliding}, {"d": [[k, 0] for k in colliding]})
    ]
    start = time.monotonic()  # the judge's reading only, not the test's own encoding
    for payload in payloads:
        with pytest.raises(CodecError, match="share hashes"):
            _read(payload)
    assert time.monotonic() - start < bound(5.0)  # building one such set took minutes
    honest = {"s": [-1, -2, *range(1000)]}  # a few shared hashes (-1 and -2) are fine
    assert _read(json.dumps({"ok": True, "value": honest}).encode())["value"] == {-1, -2, *range(1000)}


def test_a_decoder_failure_is_a_codec_error():
    for value in ({"c": [10**400, 0]}, {"s": [[1]]}, {"d": [[1]]}, {"b": "!!"}, {"x": "1e999"}):
        with pytest.raises(CodecError):
            loads(dumps({"ok": True, "value": value}))
    deep: object = 0
    for _ in range(200):  # json decodes this; the judge's own recursion must not meet it
        deep = [deep]
    with pytest.raises(CodecError, match="nested"):
        _read(json.dumps({"ok": True, "value": deep}).encode())


def test_a_frame_is_one_utf8_json_value_and_nothing_else():
    assert _read(b'{"ok":true}') == {"ok": True}
    for payload in (b' {"ok":true}', b'{"ok":true} ', b'{"ok":true}{}', '{"ok":true}'.encode("utf-16")):
        with pytest.raises(CodecError):  # json.loads took each of these
            _read(payload)
        with pytest.raises(CodecError):
            loads(len(payload).to_bytes(4, "big") + payload)


def test_a_tasks_test_code_is_parsed_once_for_its_plan_and_its_code(monkeypatch):
    import ast

    from rlvr_gym.verifiers.code import worker
    from rlvr_gym.verifiers.code.harness import _compile_trusted

    parses: list[str] = []
    parse = ast.parse
    monkeypatch.setattr(ast, "parse", lambda source, *a, **k: parses.append(source) or parse(source, *a, **k))
    case = f"# {time.monotonic_ns()}\ndef check(c):\n    assert c(1) == 2\n    assert c(x=[3]) == 4\n\ncheck(f)\n"
    task = {"kind": "assert", "entry_point": "f", "cases": [case, case]}
    frames, _ = worker.planned(task)
    assert len(frames) == 4 and covers_every_call(task, len(frames))
    assert _compile_trusted(case, "<test 1>", soft=True)[1] == {"f"}  # the second, on a softened tree
    assert parses.count(case) == 1  # (was 3: the plan, the coverage check and the code each parsed it)


def test_the_worker_warms_the_sandbox_code_and_leaves_nothing_behind():
    import dis
    import sys

    from rlvr_gym.verifiers.code import policy, runner, worker

    stdio, prepared, fds = (
        (sys.stdin, sys.stdout, sys.stderr),
        dict(policy._PREPARED),
        set(os.listdir("/proc/self/fd")),
    )
    worker.warm_sandbox_paths()
    assert (sys.stdin, sys.stdout, sys.stderr) == stdio
    assert dict(policy._PREPARED) == prepared
    assert set(os.listdir("/proc/self/fd")) == fds
    code = runner.serve.__code__  # specialised in place: what every submission process inherits
    assert [i.opname for i in dis.get_instructions(code, adaptive=True)] != [
        i.opname for i in dis.get_instructions(code)
    ]


def test_comparisons_never_raise_on_a_submissions_value():
    assert same_value(10**4000, 0.5) is False  # float(10**4000) overflows
    assert same_value([10**4000], [0.5]) is False
    assert same_value(1.0000000001, 1) is True


def test_every_planned_answer_is_read_before_judging_and_plans_that_cover_everything_close_first():
    task = {
        "kind": "assert",
        "entry_point": "f",
        "cases": ["def check(c):\n    assert c(1) == 2\n\ncheck(f)\n"],
    }
    assert covers_every_call(task, len(plan_ahead(task)))
    loop = {**task, "cases": ["for x in range(3):\n    assert f(x) == x"]}
    assert not covers_every_call(loop, len(plan_ahead(loop)))
    helper = {**task, "cases": ["assert g(1) == f(1)"]}  # names another function of the submission's
    assert not covers_every_call(helper, len(plan_ahead(helper)))
    calls = {"kind": "calls", "fn": "f", "cases": [{"args": [1], "expected": 2}]}
    assert covers_every_call(calls, 1) and not covers_every_call(calls, 0)
    tree = {**task, "cases": ["assert f(1) == 2"], "setup": "root = Node(1)"}  # the setup calls it too
    assert len(plan_ahead(tree)) == 1 and not covers_every_call(tree, 1)
    assert covers_every_call({**tree, "setup": "import math\nroot = math.pi"}, 1)


def test_a_computed_request_matches_its_planned_frame_however_the_set_was_built():
    from rlvr_gym.verifiers.code.harness import call_request

    task = {"kind": "assert", "entry_point": "f", "cases": ["assert f({12, 13, 14, 15, 16}) == 1"]}
    built = eval("{12, 13, 14, 15, 16}")  # as test code builds it: iterates from 16 (MBPP 341)
    assert dumps(plan_ahead(task)[0]) == dumps(call_request("f", (built,), {}))


def test_builtin_types_cross_by_name_and_kept_values_only_as_the_judges_own_handles():
    from rlvr_gym.verifiers.code.codec import encode_value
    from rlvr_gym.verifiers.code.remote import Remote

    assert loads(dumps(encode_value([int, str, tuple]))) == [int, str, tuple]  # MBPP 533
    for bad in ({"y": "eval"}, {"y": ["int"]}, {"r": [0, "Pair"]}):  # no handles without a session
        with pytest.raises(CodecError):
            loads(dumps({"ok": True, "value": bad}))
    with pytest.raises(CodecError):
        encode_value(type("Pair", (), {}))  # a class of the submission's stays where it was made

    class Asker:
        asked: list = []

        def get_attribute(self, number, name):
            self.asked.append((number, name))
            return 5

        def truth(self, number):
            self.asked.append((number, "bool"))
            return False

    asker = Asker()
    a, b = Remote(asker, 0, "Pair\n" + "x" * 100), Remote(asker, 0, "Pair")
    assert a == a and a != b and a != 5 and b not in {5, 0} and len({a, b}) == 2  # identity only
    assert asker.asked == []  # equality and hashing asked the sandbox nothing
    assert repr(b) == "<Pair in the sandbox>" and "\n" not in repr(a) and len(repr(a)) < 80
    assert a.a == 5 and not b and asker.asked == [(0, "a"), (0, "bool")]
    for name in ("__dict__", "_private", "__class_getitem__"):
        with pytest.raises(AttributeError):
            getattr(a, name)
    assert len(asker.asked) == 2
    with pytest.raises(CodecError):
        Remote(Asker(), 0, "Pair").encoded_for(asker)  # another sandbox's handle


@pytest.mark.slow
def test_removal_is_iterative_and_linear(tmp_path):
    os.chdir(tmp_path)
    for _ in range(3000):  # deeper than PATH_MAX and the recursion limit
        os.mkdir("d")
        os.chdir("d")
        open("f", "w").close()  # noqa: SIM115
    os.chdir(tmp_path)
    os.symlink("/", tmp_path / "link")  # never followed
    assert empty_tree(str(tmp_path))
    assert not os.listdir(tmp_path) and os.path.exists("/bin")


def test_the_working_dir_is_replaced_not_wiped(tmp_path):
    private = tmp_path / "private"
    private.mkdir()
    space = Workspace(str(private))
    os.setxattr(space.workdir, "user.mark", b"x")
    os.utime(space.workdir, (1234567, 1234567))
    os.chmod(space.workdir, 0o500)
    space.reset()
    second = os.stat(space.workdir)
    assert second.st_mode & 0o777 == 0o700  # (the disk may give the new one the old inode number)
    assert int(second.st_mtime) != 1234567 and not os.listxattr(space.workdir)
    os.mkdir(os.path.join(space.workdir, "left"))
    space.reset()  # a dirty one goes to a locked trash, removed in slices
    assert os.listdir(space.workdir) == []
    for _ in range(3):
        space.reset()
    assert sorted(os.listdir(private)) == ["work"]


@pytest.mark.slow
def test_details_show_expected_values_only_when_the_env_opts_in_and_the_judge_is_capped():
    task = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": "secret-value"}]}}
    asserts = {"tests": {"kind": "assert", "cases": ["assert f() == 'secret-value', 'wanted secret-value'"]}}
    with SandboxPool(1) as pool:
        judge = pool._workers[0] or pool._worker(0)
        with open(f"/proc/{judge.pid}/limits") as handle:  # the judge itself is under a memory cap
            soft = next(line.split()[3] for line in handle if line.startswith("Max address space"))
        assert soft != "unlimited" and int(soft) < 64 << 30, soft
        for reveal in (False, True):
            verifier = CodeVerifier(limits=Limits(wall_s=3.0, cpu_s=2), pool=pool, reveal_tests=reveal)
            for spec in (task, asserts):
                verdict = verifier(fenced("def f():\n    return 'nope'"), spec)
                assert verdict.reason is Reason.WRONG_ANSWER
                shown = json.dumps(dict(verdict.details))
                assert ("secret-value" in shown) is reveal, shown
                assert "nope" in shown or spec is asserts


def test_a_code_env_opts_in_to_revealing_tests():
    from rlvr_gym import envs

    assert envs.make("humaneval").verifier.reveal_tests is False
    assert envs.make("humaneval", reveal_tests=True).verifier.reveal_tests is True


def test_a_busy_loop_that_reaches_its_cpu_limit_is_a_timeout_not_a_crash():
    """RLIMIT_CPU ends the loop (SIGXCPU) before the wall clock does: the judge sees the channel
    close while loading, and the sandbox's wait status says why — a timeout, not wrong_answer."""
    from rlvr_gym.verifiers import CodeVerifier, Limits, Reason

    verifier = CodeVerifier(limits=Limits(wall_s=4.0, cpu_s=1), restricted=False)
    tests = {"tests": {"kind": "calls", "fn": "f", "cases": [{"args": [], "expected": 1}]}}
    try:
        verdict = verifier("```python\nwhile True:\n    pass\n```", tests)
    finally:
        verifier.close()
    assert verdict.reason is Reason.TIMEOUT, verdict


def test_a_call_the_tests_never_needed_that_reaches_its_cpu_limit_stays_a_wrong_answer():
    """The CPU-limit twin of the wall-clock rule: the planned call with a=5 spins until RLIMIT_CPU
    ends the sandbox (CPU 1 s, wall 4 s), but the tests fail before they need its answer — the
    verdict is the wrong answer they decided on, not a timeout."""
    from rlvr_gym.verifiers import CodeVerifier, Limits, Reason

    verifier = CodeVerifier(limits=Limits(wall_s=4.0, cpu_s=1), restricted=False)
    check = "def check(candidate):\n    assert candidate(1, 2) == 4\n    assert candidate(5, 0) == 6\n"
    tests = {"tests": {"kind": "assert", "entry_point": "f", "cases": [check + "\ncheck(f)\n"]}}
    hangs_later = "```python\ndef f(a=0, b=0):\n    while a == 5:\n        pass\n    return 0\n```"
    try:
        verdict = verifier(hangs_later, tests)
    finally:
        verifier.close()
    assert verdict.reason is Reason.WRONG_ANSWER, verdict
    assert verdict.details["failures"], verdict

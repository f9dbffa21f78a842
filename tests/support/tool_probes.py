"""Hostile ``run_python`` programs against a real pool (escapes, side channels, floods), reported as JSON.

Run in-process as the test user, or as ``python -m tests.support.tool_probes [--no-namespaces]`` as an
ordinary user (tests/envs/test_tool_hardening.py), so the three wall modes see the same probes.
"""

from __future__ import annotations

import json
import sys

from rlvr_gym import envs
from rlvr_gym.envs.tool_exploits import CAP_BYPASS
from rlvr_gym.verifiers import SandboxPool
from rlvr_gym.verifiers.code.tool import PythonTool


def _episode(env, code: str, answer: str) -> dict[str, object]:
    env.reset(options={"index": 0, "split": "test"})
    env.step(env.tool_call("run_python", code=code))
    _, reward, terminated, _, info = env.step(f"<answer>{answer}</answer>")
    return {"reward": reward, "reason": info["verdict"].reason.value, "terminated": terminated}


def run_all(namespaces: bool | None = None) -> dict[str, object]:
    """What a cap bypass does to the tool, the worker and the episode's verdict."""
    with SandboxPool(1, namespaces=namespaces) as pool:
        tool = PythonTool(pool=pool)
        bypass = tool.run(CAP_BYPASS)
        after = tool.run("print(6 * 7)")
        env = envs.make("gsm8k-python", pool=pool)
        gold = env.tasks("test")[0]["answer"]
        return {
            "bypass status": bypass.status,
            "bypass output chars": len(bypass.output),
            "next call": after.output,
            "wrong answer after the bypass": _episode(env, CAP_BYPASS, f"{gold}1"),
            "right answer after the bypass": _episode(env, CAP_BYPASS, gold),
            "isolation": pool.isolation,
        }


if __name__ == "__main__":
    json.dump(run_all(False if "--no-namespaces" in sys.argv[1:] else None), sys.stdout)

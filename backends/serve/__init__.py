"""Serve any registered env across a process boundary, over OpenEnv's protocol.

``rlvr-gym serve gsm8k arith gsm8k-python`` (``pip install 'rlvr-gym[openenv]'``) hosts each env
on OpenEnv's own server (``openenv.core.env_server.create_app``), so OpenEnv's client plays it
unmodified::

    from openenv.core import GenericEnvClient

    with GenericEnvClient(base_url="http://127.0.0.1:8000/gsm8k").sync() as env:
        first = env.reset(split="test", index=3)          # or seed=...
        result = env.step({"completion": "... #### 42"})  # or {"message": {...}} for tool envs
        result.observation["score"], result.observation["reason"], result.reward

and ``POST /gsm8k/score`` scores a whole batch (:mod:`.batch`). Single-step envs are scored
through the :class:`~rlvr_gym.backends.scoring.Scorer` (``local`` or ``ray``), many sessions per
``verify_batch``. Nothing here imports OpenEnv until a server is built.
"""

from rlvr_gym.backends.serve.app import ServeOptions, create_server
from rlvr_gym.backends.serve.run import check_bind, is_loopback, running, serve

__all__ = ["ServeOptions", "check_bind", "create_server", "is_loopback", "running", "serve"]

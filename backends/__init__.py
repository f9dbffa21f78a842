"""Training backends: thin adapters that hand any env to an existing GRPO engine.

Each backend module exposes ``available() -> (ok, reason)`` and ``train(env, config)``. The
TRL, DeepSpeed ZeRO-2 and FSDP + vLLM backends are added by their own changes; until then this
package holds no backend and ``rlvr-gym train`` is not offered.
"""

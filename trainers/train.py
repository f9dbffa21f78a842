"""``train(env, config, backend)``: the backend-neutral entry point of a GRPO run."""

from __future__ import annotations

import json
import logging
import os
import time
from pathlib import Path
from typing import Any

from rlvr_gym import backends, envs
from rlvr_gym.backends.config import RunConfig
from rlvr_gym.backends.console import announce, quiet_libraries
from rlvr_gym.backends.run_layout import AUDIT_FILE, CONFIG_FILE, TINY_MODEL_DIR, WARM_START_DIR
from rlvr_gym.backends.scoring import make_scorer, scored_by
from rlvr_gym.envs import Env
from rlvr_gym.envs.audit import AuditFailedError, fast_audit
from rlvr_gym.envs.config import settings_of
from rlvr_gym.envs.registration import accepted_kwargs
from rlvr_gym.error import InvalidArgumentError, NotAvailableError
from rlvr_gym.trainers import run_dir
from rlvr_gym.trainers.model_ref import check_model_reference

logger = logging.getLogger("rlvr_gym.trainers")


def resolve_env(env: Env | str | None, config: RunConfig) -> tuple[Env, RunConfig]:
    """The env to train and ``config`` naming it: the env is named once.

    ``env`` (an object or a registered id) or ``config.env_id`` names it; when both do, they
    must name the same env — a silent winner would train one env while the config (and the
    run's ``config.json``) says another. ``config.env_kwargs`` build an env named by id; an env
    object is already built, so kwargs beside it are refused rather than ignored.
    """
    if env is None:
        if config.env_id is None:
            raise InvalidArgumentError("no env named: pass train(env, config) or set RunConfig(env_id=...)")
        env = config.env_id
    if isinstance(env, str):
        if config.env_id is not None and not _same_env(config.env_id, env):
            raise InvalidArgumentError(
                f"train() was given env {env!r} but config.env_id is {config.env_id!r}: name the env in one "
                "place (drop the argument, or config.replace(env_id=...))"
            )
        return envs.make(env, **config.env_kwargs), config.for_env(env)
    if config.env_id is not None and not _same_env(config.env_id, env.id):
        raise InvalidArgumentError(
            f"train() was given an env object of {env.id!r} but config.env_id is {config.env_id!r}: "
            "name the env in one place"
        )
    if config.env_kwargs:
        raise InvalidArgumentError(
            "config.env_kwargs build an env named by id; this env object is already built "
            f"(pass its id instead, or drop env_kwargs={config.env_kwargs!r})"
        )
    return env, config.for_env(env.id)


def _same_env(a: str, b: str) -> bool:
    """Whether two ids name one registered env (``gsm8k`` and ``gsm8k-v0``), or are equal."""
    if a == b:
        return True
    try:
        return envs.spec(a).id == envs.spec(b).id
    except envs.RegistryError:
        return False


def recorded_config(env: Env, config: RunConfig, *, given_object: bool) -> RunConfig:
    """``config`` naming the env really trained, for the run's ``config.json``.

    A registered env carries its spec (id and kwargs); an env built by hand has no id, and is
    recorded by its class (``module:QualName``) rather than by ``config.env_id``'s default.
    """
    spec = getattr(env, "spec", None)
    if spec is None:
        cls = type(env)
        return config.replace(env_id=f"{cls.__module__}:{cls.__qualname__}", env_kwargs={})
    typed = settings_of(env)  # as make typed them, written by type (a path as text, a tuple as a list)
    if not given_object:  # the knobs given (--env-arg hardened=false is False)
        return config.replace(env_id=spec.id, env_kwargs={k: typed[k] for k in config.env_kwargs if k in typed})
    return config.replace(env_id=spec.id, env_kwargs=typed)


def prepare_model(env: Env, config: RunConfig, *, resume: bool) -> Path | str:
    """The model GRPO starts from: ``config.model`` or the tiny offline one, warm-started if asked.

    The tiny model is rebuilt unless resuming (it only fixes the starting architecture). A warm
    start that finished with the same settings (its ``warm_start.json``) is reused, resuming or
    not: a run killed after its warm start, or refused after it, does not redo minutes of work.
    """
    output_dir = Path(config.output_dir)
    model: Path | str
    if config.model is not None:
        model = config.model
    else:
        from rlvr_gym.trainers.tiny_model import build_tiny_model

        model = output_dir / TINY_MODEL_DIR
        if not (resume and (model / "config.json").is_file()):
            announce(f"building the tiny offline model (tokenizer trained on {env.id}'s text) in {model}")
            build_tiny_model(model, env, seed=config.seed, tools=isinstance(env, envs.MultiTurnEnv))
    if config.warm_start_steps:
        from rlvr_gym.trainers.warm_start import finished_warm_start, warm_start

        warm = output_dir / WARM_START_DIR
        marker = {
            "base": None if config.model is None else str(config.model),
            "env_id": env.id,
            "env_kwargs": settings_of(env),
            "steps": config.warm_start_steps,
            "learning_rate": config.warm_start_learning_rate,
            "tool_fraction": config.warm_start_tool_fraction,
            "seed": config.seed,
        }
        if finished_warm_start(warm, marker):
            announce(f"reusing the finished warm start in {warm} (same settings)")
        else:
            what = "answers"
            if isinstance(env, envs.MultiTurnEnv):
                share = config.warm_start_tool_fraction
                what = "episodes (tool calls, then the answer)" + (
                    f", {share:.0%} of them (the rest answer directly)" if share < 1 else ""
                )
            announce(
                f"supervised warm start: {config.warm_start_steps} steps on {env.id}'s reference {what}, "
                "so the tiny model can write a tagged answer before GRPO (a stated shortcut; the time "
                "it takes here is announced after its first steps)"
            )
            started = time.perf_counter()
            warm_start(
                model,
                env,
                warm,
                steps=config.warm_start_steps,
                learning_rate=config.warm_start_learning_rate,
                seed=config.seed,
                tool_fraction=config.warm_start_tool_fraction,
                done_marker=marker,
            )
            announce(f"warm start done in {time.perf_counter() - started:.0f} s; GRPO starts")
        model = warm
    return model


def run_audit(env: Env, config: RunConfig, score: Any) -> None:
    """The fast audit before training: saved to ``OUTPUT_DIR/audit.json``; raises
    :class:`AuditFailedError` on a hole, naming the ways on that keep the audit where there are some."""
    report = fast_audit(env, seed=config.seed, score=score, skip=config.audit_skip)
    report.save(Path(config.output_dir) / AUDIT_FILE)
    logger.info(
        "reward-hack audit of %s: %s in %.1f s", report.env, "ok" if report.ok else "FAIL", report.seconds
    )
    for line in report.warnings():
        announce(f"audit warning: {line}")
    if not report.ok:
        raise AuditFailedError(report, fixes=audit_fixes(env, report))


def audit_fixes(env: Env, report: Any) -> list[str]:
    """Ways on from a refused audit that keep it: a stricter setting of the env where it has one
    (``hardened``), else leaving out only the failing families."""
    fixes = []
    if "hardened" in (accepted_kwargs(type(env)) or ()) and not getattr(env, "hardened", True):
        fixes.append(
            "--env-arg hardened=true (env_kwargs={'hardened': True}) scores one answer, no partial credit"
        )
    failing = [r.family for r in report.families.values() if r.blocks]
    fixes.append(
        " ".join(f"--audit-skip {family}" for family in failing)
        + " leaves out only "
        + ("that family" if len(failing) == 1 else "those families")
    )
    return fixes


def train(
    env: Env | str | None = None,
    config: RunConfig | None = None,
    backend: str = "auto",
    *,
    resume: bool = False,
    overwrite: bool = False,
    backend_options: dict[str, Any] | None = None,
    audit: bool = True,
):
    """Train ``env`` (an env object or a registered id) with GRPO on ``backend``.

    The env is named once: by ``env``, or by ``config.env_id`` (``train(config=RunConfig(env_id=
    "arith"))``); naming two different envs is an error, never a silent choice.
    ``backend_options`` are the fields of the backend's ``Options`` (e.g. ``launch=LaunchSpec(...)``
    for ``deepspeed-zero2``, ``mode="colocate"`` for ``fsdp-vllm``), given as a dict or the
    ``Options`` object; an option the backend does not take is refused.
    Returns the backend's ``RunResult`` (output folder, saved model, metrics rows, plot path).

    ``config.scoring`` picks where verdicts are computed (``local`` or ``ray``, see
    :mod:`rlvr_gym.backends.scoring`); the audit and the training rewards both use it.

    First, unless ``audit=False`` (or ``config.audit`` is off), a fast reward-hack audit
    (``envs.audit.fast_audit``, a few seconds, without ``config.audit_skip``'s families) runs on the
    env; its report lands in ``OUTPUT_DIR/audit.json`` and :class:`~rlvr_gym.envs.audit.AuditFailedError`
    (naming the exploit and the ways on) stops the run when an exploit gets through, before any
    model is loaded. Strictness alone (equivalent renderings rejected) is a warning. The choice is
    recorded in ``config.json``, written first.

    ``config.output_dir`` is checked before anything loads (:mod:`rlvr_gym.trainers.run_dir`): a
    folder holding a finished, stopped or foreign run is refused unless ``resume`` (continue from
    its last checkpoint) or ``overwrite`` (remove what that run wrote first: evals, the report and a
    user's own files stay).
    """
    config = config or RunConfig()
    if not audit:
        config = config.replace(audit=False)
    given_object = isinstance(env, Env)
    env, config = resolve_env(
        env, config
    )  # an unknown env id fails here, before --overwrite removes anything
    announce(f"env {env.id} with settings {json.dumps(settings_of(env), sort_keys=True)}")
    if config.model is not None:
        check_model_reference(config.model)
    name = backends.auto(config.model, config=config) if backend == "auto" else backend
    module = backends.get(name)
    options = backends.options_for(name, backend_options)
    # The scorer is made next: an unreachable Ray cluster, or a node with weaker sandbox walls,
    # is refused here in one line, before the run folder is touched and before any model loads.
    scorer = make_scorer(env, config.scoring, ray_address=config.ray_address)
    try:
        folder = run_dir.prepare(
            config.output_dir, resume=resume, overwrite=overwrite, max_steps=config.max_steps
        )
        if folder.checkpoint is not None:
            announce(f"resuming from {folder.checkpoint.name} in {folder.path}")
        output_dir = Path(config.output_dir)
        output_dir.mkdir(parents=True, exist_ok=True)
        # config.json first: it records the audit choice, and a refused start leaves a run folder
        config = recorded_config(env, config, given_object=given_object)
        config.save(output_dir / CONFIG_FILE)
        if config.audit:
            run_audit(env, config, scored_by(scorer))
        elif folder.checkpoint is None:  # an audit.json from an earlier start is not this run's
            (output_dir / AUDIT_FILE).unlink(missing_ok=True)
    finally:
        scorer.close()
    ok, why = module.available(**options)
    if not ok:
        raise NotAvailableError(f"backend {name!r} cannot run here: {why}")
    backends.check_extras(config)  # a missing tracker or Liger: one line before any model work
    if not config.verbose:
        quiet_libraries()
    model = prepare_model(env, config, resume=resume)
    # --resume of a run killed after its warm start but before its first checkpoint: GRPO starts
    # again from the reused warm start (run_dir.prepare said so), not from a checkpoint
    result = module.train(env, config, model=model, resume=folder.checkpoint is not None, **options)
    rank0 = os.environ.get("RANK", "0") == "0"  # one writer where ranks share the folder
    if rank0 and config.model is None and result.model_dir is not None and Path(result.model_dir).is_dir():
        from rlvr_gym.trainers.tiny_model import make_servable

        make_servable(result.model_dir)  # the trained tiny model serves faithfully (docs/runs.md)
    return result

"""Every error rlvr-gym raises on purpose, in one module, as ``gymnasium.error`` is Gymnasium's.

Every one derives from :class:`Error`, so a caller (and the CLI) can catch "rlvr-gym refused
this" in one clause and still see a real bug's traceback; each also derives from the matching
builtin, so ``except ValueError`` keeps working. Naming rule: ``<What went wrong>Error`` (PEP 8).
The modules that raise them import them from here (``rlvr_gym.envs.data.BadDataRowError`` is this
module's class). The tree (builtin bases in brackets)::

    Error
        AuditFailedError (RuntimeError)
        ChannelClosedError (EOFError)
        ChannelTimeoutError (TimeoutError)
        CliError
        EnvCheckError (AssertionError)
        EnvStateError (RuntimeError)
        InvalidArgumentError (ValueError)
            BadDataRowError
            CodecError
            ExpressionError
            InvalidTestsError
            KnobTypeError (TypeError)
            ParseError
                TooLargeError
            RunFolderInUseError
        InvalidTypeError (TypeError)
        MissingPathError (FileNotFoundError)
        NotAvailableError (RuntimeError)
            ClusterUnreachableError
            DataUnavailableError
            NoBackendFitsError
            WallsMissingError
        OutOfRangeError (IndexError)
        RegistryError
            DuplicateEnvError (ValueError)
            EnvArgumentError (TypeError)
            InvalidEnvIdError (ValueError)
            UnknownEnvError (LookupError)
        RunFailedError (RuntimeError)
            SpawnerGoneError
            VLLMServerError
        ServerBusyError (RuntimeError)
        VerifierCheckError (AssertionError)
        WorkspaceStuckError (OSError)

Not in the tree on purpose: exceptions raised *inside* the code sandbox to model code
(``ImportError`` for a blocked import, ``AttributeError`` for a private attribute, the output
cap's ``OutputLimitExceeded``), which are
Python's own semantics for the submission; the judge's private control flow
(``verifiers/code/harness.py``'s ``SandboxGone`` and ``JudgeTimeout``, never seen by a caller); and
``NotImplementedError`` from abstract methods.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


class Error(Exception):
    """Base of every error rlvr-gym raises on purpose."""


class InvalidArgumentError(Error, ValueError):
    """A value that cannot be used: out of range, malformed, inconsistent with another."""


class InvalidTypeError(Error, TypeError):
    """An argument of the wrong type."""


class OutOfRangeError(Error, IndexError):
    """An index past the end of a sequence (a task index, a split)."""


class NotAvailableError(Error, RuntimeError):
    """Something this machine cannot do: a missing package, no GPU, a closed resource."""


class RunFailedError(Error, RuntimeError):
    """A run, worker or launched process failed; the message says which and how."""


class MissingPathError(Error, FileNotFoundError):
    """A file or folder the caller named does not exist."""


# --- envs.registration ---


class RegistryError(Error):
    """Base class of registry errors; the message says what to do."""


class UnknownEnvError(RegistryError, LookupError):
    """No env has this id."""


class DuplicateEnvError(RegistryError, ValueError):
    """An env with this id is already registered."""


class InvalidEnvIdError(RegistryError, ValueError):
    """The id does not follow ``[namespace/]name[-vN]``."""


class EnvArgumentError(RegistryError, TypeError):
    """A keyword argument the env does not take."""


# --- envs.knobs ---


class KnobTypeError(InvalidArgumentError, TypeError):
    """A knob's value does not convert to the type its annotation names."""


# --- envs.data ---


class DataUnavailableError(NotAvailableError):
    """The rows could not be loaded; the message says which sources were tried and how to fix it."""


class BadDataRowError(InvalidArgumentError):
    """A row of a data file cannot be a task: ``file:line: what is wrong`` in one line."""


# --- envs.checker ---


class EnvCheckError(Error, AssertionError):
    """An env broke a rule of the env contract, ``check_env``'s (the message names the rule)."""

    def __init__(self, check: str, message: str) -> None:
        super().__init__(f"[{check}] {message}")
        self.check = check


# --- envs.env ---


class EnvStateError(Error, RuntimeError):
    """``step`` called at the wrong time (before ``reset``, or twice in one episode)."""


# --- envs.audit ---


class AuditFailedError(Error, RuntimeError):
    """An env's verifiers let an exploit through (or rejected the gold): the message names it,
    and ``fixes`` (ways on that keep what they can of the audit) when the caller knows them."""

    def __init__(self, report: Any, fixes: Sequence[str] = ()) -> None:  # an envs.audit.AuditReport
        self.report = report
        ways = [*fixes, "--no-audit / audit=False trains with no audit at all"]
        super().__init__(
            f"reward-hack audit of {report.env} failed: "
            + "; ".join(report.failures())
            + " (fix the verifier, or: "
            + "; ".join(ways)
            + ")"
        )


# --- verifiers.math.parse ---


class ParseError(InvalidArgumentError):
    """The text is not in the math grammar we accept."""


class TooLargeError(ParseError):
    """The text denotes a number too large to build (a power tower, a huge factorial)."""


# --- verifiers.code.codec ---


class CodecError(InvalidArgumentError):
    """A value that cannot cross the boundary, or a frame that breaks the protocol."""


class ChannelClosedError(Error, EOFError):
    """The other end closed the pipe (the sandbox exited or was killed)."""


class ChannelTimeoutError(Error, TimeoutError):
    """No complete frame arrived before the deadline."""


# --- verifiers.code.harness ---


class InvalidTestsError(InvalidArgumentError):
    """``task["tests"]`` is malformed: a task bug, reported as a verifier ``error``."""


# --- verifiers.code.spawner ---


class SpawnerGoneError(RunFailedError):
    """The fork server died: the worker cannot run submissions any more and must be replaced."""


# --- verifiers.code.workspace ---


class WorkspaceStuckError(Error, OSError):
    """The working dir could not be removed: the worker must not run another submission."""


# --- verifiers.expression ---


class ExpressionError(InvalidArgumentError):
    """The text is not an arithmetic expression this parser accepts (the message says why)."""


# --- verifiers.testing ---


class VerifierCheckError(Error, AssertionError):
    """A verifier broke one of the properties ``check_verifier`` asserts (the message names it)."""


# --- backends.planning.choice ---


class NoBackendFitsError(NotAvailableError):
    """No backend fits the model on this hardware."""


# --- backends.serve.batching ---


class ServerBusyError(Error, RuntimeError):
    """More items are waiting to be scored than the server holds; retry later."""


# --- backends.engine.vllm_server ---


class VLLMServerError(RunFailedError):
    """The server did not come up, or died."""


# --- backends.scoring.ray ---


class ClusterUnreachableError(NotAvailableError):
    """The Ray cluster named by the address cannot be reached (or has no CPUs for scoring)."""


class WallsMissingError(NotAvailableError):
    """A node's code sandbox lacks a layer this host's has: scoring there would be weaker."""


# --- trainers.cli ---


class CliError(Error):
    """A user error: printed as one line, exit code 2."""


# --- trainers.run_dir ---


class RunFolderInUseError(InvalidArgumentError):
    """``train`` was pointed at a folder holding a finished, stopped or foreign run."""


__all__ = [
    "AuditFailedError",
    "BadDataRowError",
    "ChannelClosedError",
    "ChannelTimeoutError",
    "CliError",
    "ClusterUnreachableError",
    "CodecError",
    "DataUnavailableError",
    "DuplicateEnvError",
    "EnvArgumentError",
    "EnvCheckError",
    "EnvStateError",
    "Error",
    "ExpressionError",
    "InvalidArgumentError",
    "InvalidEnvIdError",
    "InvalidTestsError",
    "InvalidTypeError",
    "KnobTypeError",
    "MissingPathError",
    "NoBackendFitsError",
    "NotAvailableError",
    "OutOfRangeError",
    "ParseError",
    "RegistryError",
    "RunFailedError",
    "RunFolderInUseError",
    "ServerBusyError",
    "SpawnerGoneError",
    "TooLargeError",
    "UnknownEnvError",
    "VLLMServerError",
    "VerifierCheckError",
    "WallsMissingError",
    "WorkspaceStuckError",
]

"""The one exception base of rlvr-gym, as ``gymnasium.error.Error`` is Gymnasium's.

Every error this project raises on purpose derives from :class:`Error`, so a caller (and the
CLI) can catch "rlvr-gym refused this" in one clause and still see a real bug's traceback.
The subclasses also derive from the matching builtin, so ``except ValueError`` keeps working.

Not covered on purpose: exceptions raised *inside* the code sandbox to model code
(``ImportError`` for a blocked import, ``AttributeError`` for a private attribute), which are
Python's own semantics for the submission, and ``NotImplementedError`` from abstract methods.
"""

from __future__ import annotations


class Error(Exception):
    """Base of every error rlvr-gym raises on purpose."""


class InvalidArgument(Error, ValueError):
    """A value that cannot be used: out of range, malformed, inconsistent with another."""


class InvalidType(Error, TypeError):
    """An argument of the wrong type."""


class OutOfRange(Error, IndexError):
    """An index past the end of a sequence (a task index, a split)."""


class NotAvailable(Error, RuntimeError):
    """Something this machine cannot do: a missing package, no GPU, a closed resource."""


class RunFailed(Error, RuntimeError):
    """A run, worker or launched process failed; the message says which and how."""


class MissingPath(Error, FileNotFoundError):
    """A file or folder the caller named does not exist."""


__all__ = [
    "Error",
    "InvalidArgument",
    "InvalidType",
    "MissingPath",
    "NotAvailable",
    "OutOfRange",
    "RunFailed",
]

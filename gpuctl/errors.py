"""Errors that end a command, each mapped to the contract's exit code by the CLI's
one error boundary (gpuctl/cli/app.py)."""

from __future__ import annotations


class GpuctlError(Exception):
    exit_code = 1

    def __init__(self, message: str, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.hint = hint

    def line(self) -> str:
        return f"{self.message}; {self.hint}" if self.hint else self.message


class UsageError(GpuctlError):
    exit_code = 2


class TargetNotFound(GpuctlError):
    """The pod, workload, node or runbook does not exist (exit 3)."""

    exit_code = 3


class SourceError(GpuctlError):
    """The cluster, snapshot or NVML could not be read (exit 4)."""

    exit_code = 4

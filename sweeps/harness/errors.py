"""Bad input, said once: ``UsageError`` (one clear line, exit code 2, nothing written), the
one-line argument parser, the telling line of a traceback. Standard library only."""

from __future__ import annotations

import argparse
import re


class UsageError(Exception):
    """Bad input: one clear line, exit code 2, nothing written."""


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and exit code 2 (argparse prints the usage
    too by default)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message} (see --help)\n")

    @classmethod
    def of_command(cls, prog: str, doc: str | None) -> OneLineErrorParser:
        """A command's parser: ``doc`` (its module docstring, with its "How to run") shown as
        written, and no abbreviated flags (a typo is refused)."""
        return cls(
            prog=prog,
            description=doc,
            formatter_class=argparse.RawDescriptionHelpFormatter,
            allow_abbrev=False,
        )


_EXCEPTION_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Interrupt|Exit)\b.*: \S")


def error_line(text: str) -> str:
    """The telling line of a traceback: the last ``SomeError: message`` line (RLlib re-raises
    env errors as a bare ``RuntimeError`` from the original), else the last line."""
    lines = [line.strip() for line in str(text).splitlines() if line.strip()]
    with_message = [line for line in lines if _EXCEPTION_LINE.match(line)]
    if with_message:
        return with_message[-1]
    return lines[-1] if lines else "(no error text)"

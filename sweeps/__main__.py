"""``python -m sweeps``: the sweeps there are and the commands beside them, one line each.

Read from the files' source (their module docstring, and a ``SWEEP = ...`` assignment for a
sweep), so listing imports no RLlib and runs nothing.
"""

from __future__ import annotations

import ast
import sys
from collections.abc import Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parent


def sweeps() -> dict[str, str]:
    """``{sweep name: first line of its docstring}`` for every ``sweeps/<name>.py`` that defines
    ``SWEEP``, sorted by name."""
    found = {}
    for path in sorted(HERE.glob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        defines = any(
            isinstance(node, ast.Assign)
            and any(getattr(t, "id", None) == "SWEEP" for t in node.targets)
            for node in tree.body
        )
        if defines:
            found[path.stem] = (ast.get_docstring(tree) or "").split("\n")[0]
    return found


# The commands a user types besides the sweeps (python -m sweeps.<name>).
COMMANDS = ("benchmark", "env_family", "throughput", "profiling", "evaluate")


def commands() -> dict[str, str]:
    """``{command: first line of its docstring}`` for COMMANDS."""
    return {
        name: (ast.get_docstring(ast.parse((HERE / f"{name}.py").read_text("utf-8"))) or "")
        .strip()
        .split("\n")[0]
        for name in COMMANDS
    }


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] not in ("-h", "--help"):
        print(f"python -m sweeps: unexpected argument {argv[0]!r} (it takes none)", file=sys.stderr)
        return 2
    found = sweeps()
    width = max(map(len, found))
    print("Sweeps (python sweeps/<name>.py --help for each one's flags and how to run it):")
    for name, line in found.items():
        print(f"  {name.ljust(width)}  {line}")
    print("Try one without running it: python sweeps/apex_cabs.py --dry-run")
    print(
        "Your own env (a Gymnasium id or package.module:Name): python sweeps/appo_gym.py --env "
        "Acrobot-v1; the four compared: python -m sweeps.benchmark --env Acrobot-v1"
    )
    found = commands()
    width = max(map(len, found))
    print("Commands (python -m sweeps.<name> --help):")
    for name, line in found.items():
        print(f"  {name.ljust(width)}  {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

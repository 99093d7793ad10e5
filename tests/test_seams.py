"""RLlib behind one door: private Ray/RLlib names are used only in ``sweeps/seams/``.

A private name is one with a leading underscore that Ray's installed source defines (a function,
a method, a class, an attribute it assigns) and the project's own code does not: read through an
attribute (``obj._x``, ``getattr(obj, "_x")``), imported (``from ray.x import _y``, a module path
with a private part), passed as a keyword (``f(_x=...)``), set on an object other than ``self``
(a patch: ``runner._x = ...``), or a method of a class with a Ray base
that overrides a private method of that base. RLModule's ``_forward*`` methods are RLlib's
documented way to write a module, not a private use. Outside the seams, each of these is a test
failure naming the file, line and name; inside, each seam's public function or class says in its
docstring what it waits for (the public alternative).

What the scan can't see: a private name of Ray's that the project also assigns on ``self``
counts as the project's own (``self._x = ...`` in a class with a Ray base sets Ray's ``_x``
with no warning), and attribute names built at run time."""

from __future__ import annotations

import ast
import functools
import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SEAMS = ROOT / "sweeps" / "seams"
CODE = [ROOT / d for d in ("sweeps", "envs", "analysis", "benchmarks")]
# RLlib's documented extension points of an RLModule (its "how to write a module" guide): the
# methods a module is meant to override, underscore and all.
DOCUMENTED = {"_forward", "_forward_train", "_forward_exploration", "_forward_inference"}


def _private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def _on_self(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id in {"self", "cls"}


def _defined(files: list[Path]) -> set[str]:
    """The private names ``files`` define: functions, classes, assigned names and attributes."""
    out: set[str] = set()
    for path in files:
        try:
            tree = ast.parse(path.read_text())
        except (SyntaxError, UnicodeDecodeError):
            continue
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = node.name
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                if not _on_self(node):
                    continue
                name = node.attr
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                name = node.id
            elif isinstance(node, ast.arg):
                name = node.arg
            else:
                continue
            if _private(name):
                out.add(name)
    return out


def _project_files() -> list[Path]:
    return sorted(p for d in CODE for p in d.rglob("*.py"))


# A private-looking word in source text: what a file must contain to define or use that name.
_WORD = re.compile(r"\b_[A-Za-z0-9]\w*")


def _words(path: Path) -> set[str]:
    try:
        return set(_WORD.findall(path.read_text()))
    except UnicodeDecodeError:
        return set()


@functools.cache
def _names() -> tuple[frozenset[str], frozenset[str]]:
    """(Ray's private names, the project's own private names but the seams').

    Of Ray's, only those the project's files mention and do not define themselves: the scan asks
    about no other. A file of Ray's that defines one of them names it in its text, so only those
    files are parsed (about a quarter of Ray's source), and the answer is the full scan's."""
    import ray

    ours = _defined([p for p in _project_files() if SEAMS not in p.parents])
    asked = {w for p in _project_files() for w in _words(p) if _private(w) and w not in ours}
    files = [p for p in Path(ray.__file__).parent.rglob("*.py") if asked & _words(p)]
    return frozenset(_defined(files) & asked), frozenset(ours)


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(ROOT).with_suffix("").parts)


def _overrides(path: Path, tree: ast.Module) -> list[tuple[int, str]]:
    """Methods of the module's classes that override a private method of a Ray base class."""
    classes = [n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)]
    candidates = [
        (c, f)
        for c in classes
        for f in c.body
        if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef))
        and _private(f.name)
        and f.name not in DOCUMENTED
    ]
    if not candidates:
        return []
    module = importlib.import_module(_module_name(path))
    found = []
    for cls_node, fn in candidates:
        cls = getattr(module, cls_node.name, None)
        if not inspect.isclass(cls):
            continue
        for base in cls.__mro__[1:]:
            if (base.__module__ or "").startswith("ray.") and fn.name in vars(base):
                found.append((fn.lineno, f"def {fn.name} (overrides {base.__qualname__})"))
                break
    return found


def private_uses(path: Path) -> list[tuple[int, str]]:
    """Every use of a private Ray/RLlib name in ``path``: (line, what)."""
    theirs, ours = _names()
    tree = ast.parse(path.read_text())
    uses: list[tuple[int, str]] = []

    def theirs_only(name: str) -> bool:
        return _private(name) and name in theirs and name not in ours and name not in DOCUMENTED

    # A keyword reaches Ray only in a file that calls Ray (pandas' ``assign(_x=...)`` doesn't).
    calls_ray = any(
        isinstance(n, ast.ImportFrom)
        and (n.module or "").startswith("ray")
        or isinstance(n, ast.Import)
        and any(a.name.startswith("ray") for a in n.names)
        for n in ast.walk(tree)
    )

    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and theirs_only(node.attr):
            uses.append((node.lineno, node.attr))
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Store)
            and _private(node.attr)
            and not _on_self(node)
        ):
            uses.append((node.lineno, f"sets {node.attr} on another object"))
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("ray"):
            parts = (node.module or "").split(".")
            if any(_private(p) for p in parts):
                uses.append((node.lineno, f"import from {node.module}"))
            uses += [(node.lineno, a.name) for a in node.names if _private(a.name)]
        elif isinstance(node, ast.keyword) and calls_ray and node.arg and theirs_only(node.arg):
            uses.append((node.lineno, f"{node.arg}="))
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in {"getattr", "setattr", "hasattr", "delattr"}
            and len(node.args) >= 2
            and isinstance(node.args[1], ast.Constant)
            and isinstance(node.args[1].value, str)
            and theirs_only(node.args[1].value)
        ):
            uses.append((node.lineno, f'{node.func.id}("{node.args[1].value}")'))
    return sorted(set(uses + _overrides(path, tree)))


def test_private_ray_names_live_only_in_the_seams():
    outside = {
        str(p.relative_to(ROOT)): uses
        for p in _project_files()
        if SEAMS not in p.parents and (uses := private_uses(p))
    }
    lines = [f"{f}:{line}: {what}" for f, uses in sorted(outside.items()) for line, what in uses]
    assert not lines, "private Ray/RLlib names outside sweeps/seams/:\n" + "\n".join(lines)


def test_the_seams_use_private_names():
    """The scan sees what it should: the seams hold private uses (a scan that found none
    anywhere would pass the first test for the wrong reason)."""
    found = {p.name for p in SEAMS.glob("*.py") if private_uses(p)}
    assert {"replay", "tune", "learner"} <= {Path(n).stem for n in found}


@pytest.mark.parametrize("path", sorted(SEAMS.glob("*.py")), ids=lambda p: p.stem)
def test_each_seam_says_what_it_waits_for(path):
    """Every public function and class of a seam names the public alternative it waits for."""
    tree = ast.parse(path.read_text())
    silent = [
        node.name
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
        and not node.name.startswith("_")
        and "waits for" not in (ast.get_docstring(node) or "").lower()
    ]
    assert not silent, f"{path.name}: no 'Waits for' in the docstring of {silent}"


def test_the_optuna_searcher_saves_a_script_s_space_restored_by_value(tmp_path, monkeypatch):
    """A resumed sweep's searcher can hold a copy of the script's ``sample_params`` (cloudpickle
    restores ``__main__`` functions by value); saving it by name failed. It saves the script's
    own function."""
    import pickle
    import sys
    import types

    from sweeps.seams.tune import OptunaSearcher

    def sample_params(trial):
        return {"lr": trial.suggest_float("lr", 1e-4, 1e-2, log=True)}

    main = sys.modules["__main__"]
    live = types.FunctionType(sample_params.__code__, sample_params.__globals__, "sample_params")
    live.__module__, live.__qualname__ = "__main__", "sample_params"
    copy = types.FunctionType(sample_params.__code__, sample_params.__globals__, "sample_params")
    copy.__module__, copy.__qualname__ = "__main__", "sample_params"
    monkeypatch.setattr(main, "sample_params", live, raising=False)
    searcher = OptunaSearcher(space=copy, metric="x", mode="max")
    with pytest.raises(pickle.PicklingError):  # what Tune's own save did with it
        pickle.dumps(copy)
    searcher.save(str(tmp_path / "searcher.pkl"))
    restored = OptunaSearcher(space=copy, metric="x", mode="max")
    restored.restore(str(tmp_path / "searcher.pkl"))
    assert restored._space is live

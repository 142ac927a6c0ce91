"""The host agent's layout: a folder per part, and imports that go one way between the parts.

The root (settings, paths, errors, log, redact, the generated tables, the file helpers) is what every
part shares and imports no part; notify/ builds on the root; monitor/ and install/ may use notify/
(the monitors post through the spool, the installer asks the formats); ban/ uses the root alone; the
fleet's step is carried inline in the SSM document, so it imports nothing of hostguard.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "scripts" / "hostguard"
ALLOWED = {
    "": {""},
    "notify": {"", "notify"},
    "monitor": {"", "notify", "monitor"},
    "install": {"", "notify", "install"},
    "ban": {"", "ban"},
    "fleet": set(),
}


def _part(module: tuple[str, ...], package: Path = PACKAGE) -> str:
    """The part of hostguard.<module...>: its folder, or "" for a module at the root."""
    return module[0] if module and (package / module[0]).is_dir() else ""


def _imports(path: Path, package: Path = PACKAGE) -> set[tuple[str, ...]]:
    """Every hostguard module PATH imports (function-level ones too), as its path below hostguard."""
    here = path.relative_to(package).with_suffix("").parts[:-1]
    found: set[tuple[str, ...]] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else here
            elif node.module and node.module.split(".")[0] == "hostguard":
                base = ()
            else:
                continue
            dotted = (node.module or "").split(".") if node.module else []
            target = (*base, *(dotted[1:] if not node.level else dotted))
            for alias in node.names:
                module = (*target, alias.name)
                is_module = (
                    package.joinpath(*module).is_dir() or package.joinpath(*module[:-1], f"{alias.name}.py").exists()
                )
                found.add(module if is_module else target)
        elif isinstance(node, ast.Import):
            found |= {tuple(a.name.split(".")[1:]) for a in node.names if a.name.split(".")[0] == "hostguard"}
    return found


def test_every_module_is_at_the_root_or_in_a_part_folder() -> None:
    folders = {p.name for p in PACKAGE.iterdir() if p.is_dir() and p.name != "__pycache__"}
    assert folders == set(ALLOWED) - {""}
    assert all(len(p.relative_to(PACKAGE).parts) <= 2 for p in PACKAGE.rglob("*.py"))


def _against_the_rule(package: Path) -> list[str]:
    wrong = []
    for path in sorted(package.rglob("*.py")):
        source = _part(path.relative_to(package).parts[:-1], package)
        for target in _imports(path, package):
            if _part(target, package) not in ALLOWED[source]:
                wrong.append(f"{path.relative_to(package)} imports hostguard.{'.'.join(target)}")
    return wrong


def test_imports_go_one_way_between_the_parts() -> None:
    assert _against_the_rule(PACKAGE) == []
    assert ("notify", "delivery") in _imports(PACKAGE / "notify" / "cli.py")


def test_the_check_sees_an_import_against_the_rule(tmp_path: Path) -> None:
    (tmp_path / "notify").mkdir()
    (tmp_path / "monitor").mkdir()
    (tmp_path / "notify" / "spool.py").write_text("from .. import log\n")
    (tmp_path / "monitor" / "runtime.py").write_text("")
    (tmp_path / "log.py").write_text("def f() -> None:\n    from .notify import spool\n")
    (tmp_path / "paths.py").write_text("from hostguard.monitor.runtime import call\n")
    (tmp_path / "notify" / "cli.py").write_text("from ..monitor import runtime\nfrom . import spool\n")
    assert _against_the_rule(tmp_path) == [
        "log.py imports hostguard.notify.spool",
        "notify/cli.py imports hostguard.monitor.runtime",
        "paths.py imports hostguard.monitor.runtime",
    ]

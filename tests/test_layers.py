"""The layers point one way (CONTRIBUTING.md, "Layout"; docs/CONTRACTS.md): rules engine <- encoding <- env and
batched engine <- baselines <- training and evaluation <- command line and play (the browser game). Read from the
source, lazy imports inside functions included (``if TYPE_CHECKING:`` blocks are type hints only).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

from training._aliases import ALIASES

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("cockroach_env", "baselines", "training", "play")
COMMAND_LINES = {
    "training.cli",
    "training.cli.__main__",
    "training.cli.train",
    "training.cli.eval",
    "training.cli.exploit",
    "training.cli.mixture",
    "training.cli.checkpoint",
    "play.cli",
}
TRAINING_ROLES = ("training.core", "training.evaluation", "training.algorithms", "training.cli")
"""The training package's folders, lowest first: each imports only the ones before it (and itself)."""


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(tree: ast.AST, type_hints: bool = False) -> set[str]:
    found: set[str] = set()

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test) and not type_hints:
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)  # a submodule, where it is one
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return {ALIASES.get(name, name) for name in found if name.split(".")[0] in PACKAGES}


def _graph(type_hints: bool = False) -> dict[str, set[str]]:
    """``{module: project modules it imports}``; a package's own ``__init__`` (run first anyway) is no edge.
    ``type_hints``: with the imports of ``if TYPE_CHECKING:`` blocks.
    """
    paths = [p for package in PACKAGES for p in (ROOT / package).rglob("*.py")]
    graph = {_module_name(p): _imports(ast.parse(p.read_text(encoding="utf-8")), type_hints) for p in paths}
    return {m: {d for d in deps if d in graph and not (m == d or m.startswith(d + "."))} for m, deps in graph.items()}


def _check_acyclic(graph: dict[str, set[str]]) -> None:
    state: dict[str, int] = {}

    def walk(module: str, path: list[str]) -> None:
        state[module] = 1
        for dep in sorted(graph.get(module, ())):
            if state.get(dep) == 1:
                cycle = " -> ".join(path[path.index(dep) :] + [dep]) if dep in path else f"{module} -> {dep}"
                raise AssertionError(f"import cycle: {cycle}")
            if dep in graph and dep not in state:
                walk(dep, path + [dep])
        state[module] = 2

    for module in sorted(graph):
        if module not in state:
            walk(module, [module])


def test_no_import_cycles():
    _check_acyclic(_graph())


def test_no_import_cycles_in_training_even_through_type_hints():
    graph = _graph(type_hints=True)
    _check_acyclic({m: deps for m, deps in graph.items() if m.startswith("training")})


def test_lower_layers_never_import_higher_ones():
    rank = {package: i for i, package in enumerate(PACKAGES)}
    for module, deps in _graph().items():
        for dep in deps:
            assert rank[dep.split(".")[0]] <= rank[module.split(".")[0]], f"{module} imports {dep}, a higher layer"
            if dep in COMMAND_LINES:
                assert module in COMMAND_LINES, f"{module} imports the command line {dep}"


def _role(module: str) -> str | None:
    return next((role for role in TRAINING_ROLES if module == role or module.startswith(role + ".")), None)


def test_core_imports_no_algorithm_evaluation_or_command_line():
    for module, deps in _graph().items():
        if _role(module) == "training.core":
            higher = sorted(d for d in deps if _role(d) not in (None, "training.core"))
            assert not higher, f"{module} (core) imports {higher}"


def test_evaluation_imports_no_algorithm_and_algorithms_no_command_line():
    """``training`` reads core <- evaluation <- algorithms <- cli: the algorithms evaluate their agents with
    ``training.evaluation``, and nothing in ``evaluation`` imports an algorithm (even lazily).
    """
    below = {"training.evaluation": ("training.algorithms", "training.cli"), "training.algorithms": ("training.cli",)}
    for module, deps in _graph().items():
        for role, forbidden in below.items():
            if _role(module) == role:
                higher = sorted(d for d in deps if _role(d) in forbidden)
                assert not higher, f"{module} ({role.split('.')[1]}) imports {higher}"


def test_old_module_paths_name_modules_that_exist():
    graph = _graph()
    for old, new in ALIASES.items():
        assert new in graph, f"{old} is an alias of {new}, which is no module"
        assert not (ROOT / (old.replace(".", "/") + ".py")).exists(), f"{old} is both a file and an alias"


def _old_path_imports(tree: ast.AST) -> list[str]:
    """The imports of ``tree`` that name an old module path (``import training.ppo``, ``from training.arena import
    x``, ``from training import ppo``), or load one by name (``importlib.import_module("training.ppo")``).
    """
    found = []
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        elif isinstance(node, ast.Call) and ast.unparse(node.func).endswith("import_module") and node.args:
            names = [node.args[0].value] if isinstance(node.args[0], ast.Constant) else []
        found += [name for name in names if name in ALIASES]
    return found


def _python_blocks(markdown: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```", markdown, flags=re.M | re.S)


def test_project_code_tests_benchmarks_and_doc_snippets_import_no_old_module_path():
    """Readers, IDEs and mypy see the real modules: only the aliases' own tests import an old path."""
    sources = {
        path: path.read_text(encoding="utf-8")
        for folder in (*PACKAGES, "benchmarks", "tests")
        for path in (ROOT / folder).rglob("*.py")
        if path.name not in ("test_aliases.py", "_aliases.py")
    }
    for path in [*(ROOT / "docs").rglob("*.md"), *ROOT.glob("*.md")]:
        for k, block in enumerate(_python_blocks(path.read_text(encoding="utf-8"))):
            sources[path.with_name(f"{path.name}[python block {k + 1}]")] = block
    old = {str(path.relative_to(ROOT)): _old_path_imports(ast.parse(text)) for path, text in sources.items()}
    assert len(old) > 150 and any("[python block" in name for name in old)
    through_old_paths = {name: paths for name, paths in old.items() if paths}
    assert not through_old_paths, f"imports through old module paths: {through_old_paths}"


def test_the_old_path_check_sees_every_form_of_import():
    code = (
        "import training.ppo\nfrom training.arena import play_match\nfrom training import psro\n"
        "import importlib\nimportlib.import_module('training.exact')\nimport training.core.checkpoint\n"
    )
    assert _old_path_imports(ast.parse(code)) == ["training.ppo", "training.arena", "training.psro", "training.exact"]
    assert _python_blocks("text\n```python\nimport training.ppo\n```\n```bash\nls\n```\n") == ["import training.ppo\n"]


def _private_uses(tree: ast.AST, graph: dict[str, set[str]]) -> list[str]:
    """``from M import _name`` and ``alias._name`` (``alias`` a project module) of another module's private names."""
    modules: dict[str, str] = {}  # local name -> project module
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            module = ALIASES.get(node.module, node.module)
            if module.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                submodule = ALIASES.get(f"{module}.{alias.name}", f"{module}.{alias.name}")
                if submodule in graph:
                    modules[alias.asname or alias.name] = submodule
                elif alias.name.startswith("_"):
                    found.append(f"from {node.module} import {alias.name}")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES and alias.asname:
                    modules[alias.asname] = ALIASES.get(alias.name, alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            target = ast.unparse(node.value)
            module = modules.get(target) or ALIASES.get(target, target)
            if module in graph:
                found.append(f"{target}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    """Shared machinery is public (docs/CONTRACTS.md): what two modules use has a name without a leading underscore."""
    graph = _graph()
    for package in ("baselines", "training", "play"):
        for path in (ROOT / package).rglob("*.py"):
            uses = _private_uses(ast.parse(path.read_text(encoding="utf-8")), graph)
            assert not uses, f"{_module_name(path)} uses private names of other modules: {uses}"

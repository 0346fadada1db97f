"""The map of the package in the docs matches the package, and its imports point one way.

``docs/internals.md`` lists every module with the first paragraph of its
docstring, and the README's "Architecture" table names every top-level module
and package.  Regenerate the internals table with::

    python -m tests.test_architecture

and paste it over the one under "## Every module".

The layers are data: the table under "## Layers" in ``docs/internals.md`` says
which modules form each layer (by file or folder) and which layers each may
import.  ``check_imports`` (``tests/import_rules.py``, where the rules are
written) reads every file's syntax tree and reports each import that points
elsewhere, each private module or name reached from outside its owner, and each
I/O import in a layer without I/O.  ``ALLOWED`` is empty: an exception added
to it must say why, and an entry that no longer occurs fails too.

Sizes: no module over ``MODULE_LINE_LIMIT`` lines and no class over
``CLASS_LINE_LIMIT`` (the house's ~500 and ~400), but for ``SPLIT_IN_PROGRESS``,
which only shrinks, and ``RAISED_LIMITS``: a class that is one responsibility,
whole on purpose, with its own limit and why.

State: no class uses a private attribute (``self._x``) that it neither sets in
one of its methods nor defines in its body (``foreign_private_state``): a mixin
that reads its host's state, or a subclass its base's, hides what a reader of its
file cannot see.  ``SHARED_PRIVATE_STATE`` only shrinks.
"""

from __future__ import annotations

import ast
import functools
import re
from pathlib import Path
from typing import Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

from .import_rules import EVERY_LAYER, Layer, Violation, check_imports, covers, layer_of, read_layers

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "jsonrpc_threads"
INTERNALS = ROOT / "docs" / "internals.md"
README = ROOT / "README.md"

_ROLE = re.compile(r":[a-z]+:`~?\.*([^`]+)`")


def modules() -> Dict[str, str]:
    """Every module of the package (path relative to it) -> the first paragraph of its docstring, as Markdown."""
    found: Dict[str, str] = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
        first = " ".join(doc.split("\n\n")[0].split())
        first = _ROLE.sub(lambda m: f"`{m.group(1)}`", first).replace("``", "`").replace("|", "\\|")
        found[path.relative_to(PACKAGE).as_posix()] = first
    return found


def internals_table() -> str:
    lines = ["| module | holds |", "| --- | --- |"]
    lines += [f"| `{name}` | {text} |" for name, text in modules().items()]
    return "\n".join(lines) + "\n"


def _table_after(text: str, heading: str) -> List[List[str]]:
    section = text.split(heading, 1)[1]
    rows = []
    for line in section.splitlines()[1:]:
        if line.startswith("## "):
            break
        if line.startswith("| ") and not line.startswith("| ---") and not line.startswith("| module"):
            rows.append([cell.strip() for cell in line.strip().strip("|").split(" | ")])
    return rows


def test_every_module_is_in_the_internals_table_with_its_docstring() -> None:
    listed = {
        row[0].strip("`"): row[1] for row in _table_after(INTERNALS.read_text(encoding="utf-8"), "## Every module")
    }
    expected = modules()
    assert sorted(set(expected) - set(listed)) == [], "modules missing from docs/internals.md"
    assert sorted(set(listed) - set(expected)) == [], "docs/internals.md lists modules that do not exist"
    stale = [name for name, text in expected.items() if listed[name] != text]
    assert not stale, f"regenerate the table (python -m tests.test_architecture): {stale}"


def test_the_readme_names_every_top_level_module_and_package() -> None:
    rows = _table_after(README.read_text(encoding="utf-8"), "## Architecture")
    named: Set[str] = set()
    for row in rows:
        named.update(re.findall(r"`([^`]+)`", row[0]))
    top = {p.name for p in PACKAGE.glob("*.py")} | {
        p.name + "/" for p in PACKAGE.iterdir() if (p / "__init__.py").exists()
    }
    top.discard("__init__.py")
    assert sorted(top - named) == [], "top-level modules the README's Architecture table does not name"
    assert sorted(named - top) == [], "the README's Architecture table names what does not exist"


_SPHINX_ROLE = re.compile(r":(?:py:)?(?:class|func|meth|mod|attr|data|exc|obj|const):`")


def test_no_docstring_or_comment_holds_a_sphinx_role() -> None:
    """``help()``, editors and the reference pages show a docstring as written: code is ``name``, never a role."""
    found = [
        f"{path}:{number}"
        for path, text in package_sources().items()
        for number, line in enumerate(text.splitlines(), 1)
        if _SPHINX_ROLE.search(line)
    ]
    assert found == [], "write ``name`` instead of ``name`` (and the like)"


# -- the import rule (tests/import_rules.py) ------------------------------------------------------

#: Exceptions to the rules: (file or folder/, rule, target or folder/) -> why. Issue 36 emptied it; an
#: entry added here must say why, and one that no longer occurs fails the check below.
ALLOWED: Dict[Tuple[str, str, str], str] = {}


def package_sources() -> Dict[str, str]:
    """Every file of the package, relative to it -> its text."""
    return {
        path.relative_to(PACKAGE).as_posix(): path.read_text(encoding="utf-8")
        for path in sorted(PACKAGE.rglob("*.py"))
        if "__pycache__" not in path.parts
    }


def _allowed_by(violation: Violation) -> Optional[Tuple[str, str, str]]:
    for key in ALLOWED:
        where, rule, target = key
        if covers(where, violation.module) and rule == violation.rule and covers(target, violation.target):
            return key
    return None


def _layers() -> List[Layer]:
    return read_layers(INTERNALS.read_text(encoding="utf-8"))


@functools.lru_cache(maxsize=1)
def _package_violations() -> Tuple[Violation, ...]:
    return tuple(check_imports(package_sources(), _layers()))


def test_the_layer_table_covers_every_module_and_names_only_layers() -> None:
    layers = _layers()
    names = {layer.name for layer in layers}
    assert len(names) == len(layers), "two rows of the layer table have one name"
    sources = package_sources()
    assert sorted(path for path in sources if layer_of(path, layers) is None) == [], (
        "modules in no layer: add them to the table under '## Layers' in docs/internals.md"
    )
    entries = [entry for layer in layers for entry in layer.modules]
    stale = [entry for entry in entries if not any(covers(entry, path) for path in sources)]
    assert stale == [], "the layer table names modules that do not exist"
    assert len(entries) == len(set(entries)), "a module or folder named by two layers"
    unknown = {name for layer in layers for name in layer.may_import} - names - {EVERY_LAYER}
    assert unknown == set(), "'may import' names layers the table does not have"


def test_imports_point_down_the_layers_and_no_private_name_crosses_a_module() -> None:
    violations = _package_violations()
    unexpected = [str(v) for v in violations if _allowed_by(v) is None]
    assert not unexpected, "against the layer table of docs/internals.md (## Layers):\n" + "\n".join(unexpected)


def test_every_allowed_exception_still_occurs() -> None:
    """An exception that no longer occurs leaves the list: it only shrinks."""
    used = {_allowed_by(violation) for violation in _package_violations()}
    assert sorted(set(ALLOWED) - used) == [], "remove these entries from ALLOWED: the code no longer needs them"


def _findings(tree: Mapping[str, str]) -> List[Tuple[str, str, str]]:
    """The violations of a crafted tree (the package's own ``__init__.py`` files added), as keys."""
    files = {"__init__.py": ""}
    for path in tree:
        parts = path.split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            files.setdefault("/".join([*parts[:depth], "__init__.py"]), "")
    files.update(tree)
    return [violation.key for violation in check_imports(files, _layers())]


def test_the_checker_finds_an_upward_import_however_it_is_spelled() -> None:
    tree = {
        "errors/__init__.py": "from ..framing import lines\n",
        "messages.py": "from .errors import JsonRpcError\nfrom ._records import Record\n",
        "_records.py": "",
        "client.py": "def send():\n    from .transports.stdio import StdioTransport\n",
        "mcp/session.py": "",
        "transports/base.py": "from ..errors import JsonRpcError\n",
        "transports/stdio/__init__.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from ...mcp import session\n",
        "transports/http/__init__.py": "import jsonrpc_threads.transports.sse\n",
        "transports/sse/__init__.py": "from jsonrpc_threads.transports import http\n",
        "framing/lines.py": "import socket\nfrom .. import client\n",
    }
    assert sorted(_findings(tree)) == [
        ("client.py", "layer client imports stdio", "transports/stdio/__init__.py"),
        ("errors/__init__.py", "layer protocol imports framing", "framing/lines.py"),
        ("framing/lines.py", "I/O in layer framing", "socket"),
        ("framing/lines.py", "layer framing imports client", "client.py"),
        ("transports/http/__init__.py", "layer http imports sse", "transports/sse/__init__.py"),
        ("transports/sse/__init__.py", "layer sse imports http", "transports/http/__init__.py"),
        ("transports/stdio/__init__.py", "layer stdio imports mcp", "mcp/session.py"),
    ]


def test_the_checker_sees_an_import_made_by_a_call() -> None:
    """``import_module`` and ``__import__`` with a constant name import as a statement does (issue 46)."""
    tree = {
        "errors/__init__.py": (
            "from importlib import import_module\n\n"
            "def __getattr__(name):\n    return getattr(import_module('jsonrpc_threads.mcp.errors'), name)\n"
        ),
        "messages.py": "import importlib\nclient = importlib.import_module('.client', __package__)\n",
        "mcp/errors.py": "",
        "client.py": "",
        "framing/lines.py": "sock = __import__('socket')\ncore = __import__('jsonrpc_threads.client')\n",
        "framing/sse.py": "def load(name):\n    return __import__(name)\n",
    }
    assert sorted(_findings(tree)) == [
        ("errors/__init__.py", "layer protocol imports mcp", "mcp/errors.py"),
        ("framing/lines.py", "I/O in layer framing", "socket"),
        ("framing/lines.py", "layer framing imports client", "client.py"),
        ("messages.py", "layer protocol imports client", "client.py"),
    ]


def test_the_checker_follows_a_name_the_package_re_exports() -> None:
    tree = {
        "__init__.py": "TYPE_CHECKING = False\nif TYPE_CHECKING:\n    from .client import JsonRpcClient\n",
        "client.py": "class JsonRpcClient: ...\n",
        "errors/__init__.py": "from jsonrpc_threads import JsonRpcClient\n",
        "acp/client.py": "from .. import JsonRpcClient\n",
    }
    assert _findings(tree) == [("errors/__init__.py", "layer protocol imports client", "client.py")]


def test_the_checker_finds_private_names_reached_across_modules() -> None:
    tree = {
        "client.py": "class JsonRpcClient:\n    def _resolve_timeout(self): ...\n",
        "_records.py": "",
        "transports/http/_redact.py": "def _secret(): ...\n",
        "transports/http/_post.py": "from ._redact import _secret\nfrom . import _redact\n",
        "observe.py": "import jsonrpc_threads.transports.http._redact as redact\nfrom . import _records\n",
        "mcp/session.py": (
            "import os\nfrom .. import client\nfrom .._records import check\n\n"
            "class McpClient:\n"
            "    def __init__(self, rpc):\n        self._rpc = rpc\n        self._own = 1\n"
            "    def call(self, other):\n"
            "        other._own, self._own, os._exit, self._rpc._asdict()\n"
            "        client._helper\n        return self._rpc._resolve_timeout()\n"
        ),
    }
    assert sorted(_findings(tree)) == [
        ("mcp/session.py", "private attribute", "client._helper"),
        ("mcp/session.py", "private attribute", "self._rpc._resolve_timeout"),
        ("observe.py", "layer client imports http", "transports/http/_redact.py"),
        ("observe.py", "private module", "transports/http/_redact.py"),
        ("transports/http/_post.py", "private name", "transports/http/_redact.py: _secret"),
    ]


def test_an_upward_import_added_to_the_package_fails_the_check() -> None:
    """The real package, one line added: the check finds that line and nothing else new."""
    sources, changed = package_sources(), "transports/stdio/_spawn.py"
    before = set(check_imports(sources, _layers(), only=[changed]))
    sources[changed] += "\nfrom ...mcp.session import McpClient\n"
    added = [v for v in check_imports(sources, _layers(), only=[changed]) if v not in before]
    assert [(v.key, _allowed_by(v)) for v in added] == [
        (("transports/stdio/_spawn.py", "layer stdio imports mcp", "mcp/session.py"), None)
    ]


# -- sizes: no module over ~500 lines, no class over ~400 (issue 36) ------------------------------

#: The most lines a module may have, and a class (from its ``class`` line to its last): the house
#: rule's ~500 and ~400, with a little room.
MODULE_LINE_LIMIT = 520
CLASS_LINE_LIMIT = 420
#: What may be over a limit, with why: a module (``file``) or a class (``file:Class``). Issue 36
#: emptied it; an entry that is no longer over its limit fails the test, so the set only shrinks.
SPLIT_IN_PROGRESS: FrozenSet[str] = frozenset()
#: Limits raised for one module or class of one responsibility, with why (issue 46, item 3: a class
#: over the limit that is one responsibility is better whole than in mixins). Each must still need it.
RAISED_LIMITS: Dict[str, int] = {
    # The facade of the tool registry: every public method with its documentation, each delegating
    # in a line or two to a part that owns its state (registry_servers, model_calls, supervisor).
    "mcp/registry.py": 620,
    "mcp/registry.py:ToolRegistry": 490,
    # The public face of MCP: every method makes its deadline, takes a lease and hands the call to a
    # part that owns its state (connection.py, catalog.py); its length is the documented signatures of
    # the public API (the reference is made from these docstrings), which mixins only hid in other files.
    "mcp/session.py": 655,
    "mcp/session.py:McpClient": 560,
    # A server's life's shell (its decisions are server_life.py's): the start, the stop, the waits, and
    # the lock-free way in that every call takes while the session runs (the tools rows of the bench).
    "mcp/supervisor.py:ServerSupervisor": 430,
    # The public face of LSP, likewise: its parts are editing.py (documents) and queries.py.
    "lsp/client.py": 760,
    "lsp/client.py:LspClient": 640,
}


def _classes(node: ast.AST, prefix: str = "") -> Iterator[Tuple[str, int]]:
    """Every class under ``node``, nested ones too: (qualified name, lines)."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.ClassDef):
            name = prefix + child.name
            yield name, (child.end_lineno or child.lineno) - child.lineno + 1
            yield from _classes(child, name + ".")
        else:
            yield from _classes(child, prefix)


def oversized(sources: Mapping[str, str]) -> Dict[str, int]:
    """Every module over ``MODULE_LINE_LIMIT`` lines (``file``) and class over ``CLASS_LINE_LIMIT``
    (``file:Class``) -> its lines."""
    found: Dict[str, int] = {}
    for path, text in sources.items():
        lines = len(text.splitlines())
        if lines > MODULE_LINE_LIMIT:
            found[path] = lines
        for name, size in _classes(ast.parse(text)):
            if size > CLASS_LINE_LIMIT:
                found[f"{path}:{name}"] = size
    return found


def test_no_module_or_class_is_over_the_size_limits() -> None:
    found = oversized(package_sources())
    over = sorted(
        f"{name} ({lines} lines)"
        for name, lines in found.items()
        if name not in SPLIT_IN_PROGRESS and lines > RAISED_LIMITS.get(name, 0)
    )
    assert over == [], f"over {MODULE_LINE_LIMIT} lines a module or {CLASS_LINE_LIMIT} a class: split by concern"
    split = sorted(SPLIT_IN_PROGRESS - set(found))
    assert split == [], "no longer over the limit: remove these from SPLIT_IN_PROGRESS"
    unneeded = sorted(set(RAISED_LIMITS) - set(found))
    assert unneeded == [], "within the house's limit again: remove these from RAISED_LIMITS"


def test_the_size_check_measures_modules_and_nested_classes() -> None:
    body = "".join(f"    x{n} = {n}\n" for n in range(CLASS_LINE_LIMIT))
    sources = {
        "small.py": "class Small:\n    pass\n",
        "big.py": "class Outer:\n    class Inner:\n" + body.replace("    ", "        ") + "\n" * MODULE_LINE_LIMIT,
    }
    assert oversized(sources) == {
        "big.py": MODULE_LINE_LIMIT + CLASS_LINE_LIMIT + 2,
        "big.py:Outer": CLASS_LINE_LIMIT + 2,
        "big.py:Outer.Inner": CLASS_LINE_LIMIT + 1,
    }


# -- parts own their state: no class uses private attributes it does not set (issue 46, item 3) -------

#: Classes that use ``self._x`` set elsewhere, with why.  Mixins that share private state are what issue
#: 46 item 3 ends: an entry that no longer needs it fails the test, so the set only shrinks.
SHARED_PRIVATE_STATE: Dict[str, str] = {}


def _own_names(cls: ast.ClassDef) -> Set[str]:
    """What the class body defines: methods, nested classes, class attributes (fields of a dataclass
    or ``NamedTuple`` too).  A bare annotation elsewhere only declares state set by someone else."""
    fields = any("dataclass" in ast.unparse(d) for d in cls.decorator_list) or any(
        ast.unparse(base).endswith("NamedTuple") for base in cls.bases
    )
    names: Set[str] = set()
    for node in cls.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(n.id for target in node.targets for n in ast.walk(target) if isinstance(n, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.update([node.target.id] if node.value is not None or fields else [])
    return names


def _in_method(node: ast.AST) -> Iterator[ast.AST]:
    """Every node of a method, its closures included, but not of a class defined in it."""
    for child in ast.iter_child_nodes(node):
        if not isinstance(child, ast.ClassDef):
            yield child
            yield from _in_method(child)


def _self_attributes(cls: ast.ClassDef) -> Tuple[Set[str], Set[str]]:
    """The private ``self._x`` names the class's methods use, and every ``self.x`` they set."""
    used: Set[str] = set()
    assigned: Set[str] = set()
    for method in cls.body:
        if not isinstance(method, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        arguments = method.args.posonlyargs + method.args.args
        selves = {"self"} | ({arguments[0].arg} if arguments else set())  # ``self`` made in ``__new__`` too
        for node in _in_method(method):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in selves:
                if node.attr.startswith("_") and not node.attr.endswith("__"):
                    used.add(node.attr)
                if isinstance(node.ctx, ast.Store):
                    assigned.add(node.attr)
            elif (
                isinstance(node, ast.Call)
                and ast.unparse(node.func) in ("object.__setattr__", "setattr")
                and len(node.args) >= 2
                and isinstance(node.args[0], ast.Name)
                and node.args[0].id in selves
                and isinstance(node.args[1], ast.Constant)
            ):
                assigned.add(str(node.args[1].value))
    return used, assigned


def foreign_private_state(sources: Mapping[str, str]) -> Dict[str, List[str]]:
    """Every class (``file:Class``) that uses a ``self._x`` neither its body defines nor its methods set
    -> those names: state it shares with a base or a mixin, which a reader of its file cannot see."""
    found: Dict[str, List[str]] = {}
    for path, text in sources.items():
        for cls in (node for node in ast.walk(ast.parse(text)) if isinstance(node, ast.ClassDef)):
            used, assigned = _self_attributes(cls)
            foreign = sorted(used - assigned - _own_names(cls))
            if foreign:
                found[f"{path}:{cls.name}"] = foreign
    return found


def test_every_class_owns_the_private_state_it_uses() -> None:
    """A reader of one file knows every name it touches: no mixin reads another's private state (issue 46)."""
    found = foreign_private_state(package_sources())
    shared = sorted(f"{name}: {names}" for name, names in found.items() if name not in SHARED_PRIVATE_STATE)
    assert shared == [], "private state set in another class: make it a part the class holds and passes"
    stale = sorted(set(SHARED_PRIVATE_STATE) - set(found))
    assert stale == [], "these own their state now: remove them from SHARED_PRIVATE_STATE"


def test_the_private_state_check_finds_a_mixin_and_spares_what_a_class_sets() -> None:
    sources = {
        "mixin.py": (
            "class Calls:\n"
            "    _rpc: object\n"
            "    def call(self):\n        return self._rpc.call(self._deadline())\n"
            "class Face(Closing, Calls):\n"
            "    def __init__(self, rpc):\n        self._rpc = rpc\n"
            "    def _deadline(self):\n        return 1\n"
            "class Base:\n    def __init__(self):\n        self._session = 1\n"
            "class Sub(Base):\n    def send(self):\n        return self._session\n"
        ),
        "owned.py": (
            "from dataclasses import dataclass\n"
            "@dataclass\nclass Record:\n    _hidden: int\n    def peek(self):\n        return self._hidden\n"
            "class Error(Exception):\n"
            "    _LIMIT = 3\n"
            "    def __new__(cls, *args):\n        self = super().__new__(cls)\n        self._args = args\n"
            "        return self\n"
            "    def later(me):\n"
            "        def step():\n            me._count += 1\n"
            "        object.__setattr__(me, '_frozen', True)\n"
            "        return step, me._args, me._frozen, me._LIMIT, me.__dict__\n"
            "    def _count_once(self):\n        self._count = 0\n"
        ),
    }
    assert foreign_private_state(sources) == {"mixin.py:Calls": ["_deadline", "_rpc"], "mixin.py:Sub": ["_session"]}


# -- import cycles (issue 46, item 8) -------------------------------------------------------------


def _module_file(parts: Sequence[str], sources: Mapping[str, str]) -> Optional[str]:
    for candidate in ("/".join(parts) + ".py", "/".join([*parts, "__init__.py"])):
        if candidate in sources:
            return candidate
    return None


def import_graph(sources: Mapping[str, str]) -> Dict[str, Set[str]]:
    """Module -> the modules of the package it imports, wherever the import stands (``TYPE_CHECKING`` too)."""
    graph: Dict[str, Set[str]] = {}
    for path, text in sources.items():
        package = path.split("/")[:-1]
        found: Set[str] = set()
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package[: len(package) - node.level + 1]
                    base = [*base, *(node.module or "").split(".")] if node.module else base
                elif (node.module or "").split(".")[0] == "jsonrpc_threads":
                    base = (node.module or "").split(".")[1:]
                else:
                    continue
                for alias in node.names:  # a submodule by name, else a name of the module
                    found.add(_module_file([*base, alias.name], sources) or _module_file(base, sources) or "")
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    if alias.name.startswith("jsonrpc_threads."):
                        found.add(_module_file(alias.name.split(".")[1:], sources) or "")
        graph[path] = found - {"", path}
    return graph


def import_cycles(graph: Mapping[str, Set[str]], under: str) -> List[List[str]]:
    """The import cycles among the modules ``under`` a folder: one path round each strongly connected group."""
    nodes = sorted(path for path in graph if path.startswith(under))
    cycles: List[List[str]] = []
    done: Set[str] = set()
    for start in nodes:
        stack: List[Tuple[str, List[str]]] = [(start, [start])]
        seen: Set[str] = set()
        while stack:
            node, trail = stack.pop()
            for target in sorted(graph.get(node, ())):
                if not target.startswith(under) or target in done:
                    continue
                if target == start:
                    cycles.append([*trail, start])
                    stack = []
                    break
                if target not in seen:
                    seen.add(target)
                    stack.append((target, [*trail, target]))
        done.add(start)
    return cycles


#: Known cycles, each with why; it only shrinks (an entry no longer found fails the test).
KNOWN_CYCLES: Dict[Tuple[str, ...], str] = {}


def test_no_import_cycle_among_the_mcp_modules() -> None:
    cycles = [tuple(cycle) for cycle in import_cycles(import_graph(package_sources()), "mcp/")]
    assert [cycle for cycle in cycles if cycle not in KNOWN_CYCLES] == [], "an import cycle in mcp/"
    assert sorted(set(KNOWN_CYCLES) - set(cycles)) == [], "no longer a cycle: remove it from KNOWN_CYCLES"


def test_the_cycle_check_sees_a_cycle_through_a_type_checking_import() -> None:
    tree = {
        "mcp/__init__.py": "",
        "mcp/a.py": "from .b import B\n",
        "mcp/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .c import C\n",
        "mcp/c.py": "from jsonrpc_threads.mcp import a\n",
        "mcp/d.py": "from . import a\n",
    }
    assert import_cycles(import_graph(tree), "mcp/") == [["mcp/a.py", "mcp/b.py", "mcp/c.py", "mcp/a.py"]]


if __name__ == "__main__":
    print(internals_table(), end="")

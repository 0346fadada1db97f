"""The import rule of the package, as a checker that runs on any tree of sources.

The layers are data: a table in ``docs/internals.md`` (under "## Layers") names
the modules of each layer, by file (``messages.py``) or by folder (``framing/``),
the layers each may import, and whether it may do I/O.  A module belongs to the
row that names it, or else to the row of its nearest folder, so a module that
moves needs one edit, in the table.

`check_imports` takes the sources of a package tree (path relative to the
package -> text) and the layers, parses every file, and reports what breaks a
rule.  It reads syntax only (nothing is imported), so it runs on a crafted tree
as well as on the package.  The rules:

- **layer**: a module imports only from its own layer and from the layers its
  row names: ``import x`` and ``from x import y``, relative or absolute, at the
  top, inside a function or under ``TYPE_CHECKING`` alike, and the imports made
  by a call: ``import_module("x")`` (``importlib.import_module`` too, a relative
  name against the module's package) and ``__import__("x")``, whenever the name
  is a string constant (a name computed at run time is not seen).  A name that a
  package's ``__init__.py`` re-exports counts as an import of the module that
  defines it (``from jsonrpc_threads import JsonRpcClient`` depends on
  ``client.py``);
- **I/O**: a layer whose row says no I/O imports none of `IO_MODULES`;
- **private module**: a module with a part of its dotted name that starts with
  ``_`` belongs to the package holding that part; only modules inside that
  package import it (a private module at the root of the package, from
  anywhere in it);
- **private name**: no ``from <module> import _name`` of a name that another
  module defines;
- **private attribute**: no ``x._name`` where ``x`` was imported from another
  module of the package, nor where ``x`` is any object but ``self`` or ``cls``
  and the module itself never defines ``_name``: another module's object,
  reached into.  The receiver of an import from outside the package
  (``os._exit``) and the methods of named tuples (``_replace``) are not the
  package's business.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Collection, Dict, FrozenSet, Iterator, List, Mapping, Optional, Sequence, Set, Tuple

PACKAGE_NAME = "jsonrpc_threads"
#: The heading whose section holds the layer table, and the table's header row.
LAYERS_HEADING = "## Layers"
LAYER_TABLE_HEADER = "| layer | modules | may import | I/O |"
#: What "may import" says of the top layers: every other layer.
EVERY_LAYER = "every layer"
#: What a layer without I/O may not import (standard library and third-party, by top-level name).
IO_MODULES = frozenset(
    {
        "_thread",
        "asyncio",
        "concurrent",
        "fcntl",
        "http",
        "io",
        "mmap",
        "multiprocessing",
        "os",
        "psutil",
        "requests",
        "select",
        "selectors",
        "shutil",
        "signal",
        "socket",
        "ssl",
        "subprocess",
        "tempfile",
        "threading",
        "urllib",
        "urllib3",
    }
)
#: The functions whose call imports the module its first argument names.
IMPORT_CALLS = frozenset({"import_module", "__import__"})
#: The public methods of named tuples, which start with an underscore to stay out of the fields' way.
NAMEDTUPLE_API = frozenset({"_asdict", "_fields", "_field_defaults", "_make", "_replace"})
#: The receivers whose private attributes are the module's own business.
OWN_RECEIVERS = frozenset({"self", "cls"})


@dataclass(frozen=True)
class Layer:
    """One row of the layer table: the modules it holds and the layers they may import."""

    name: str
    modules: Tuple[str, ...]  # a file ("errors.py") or a folder ("framing/"), relative to the package
    may_import: FrozenSet[str]  # layer names, or EVERY_LAYER
    does_io: bool

    def allows(self, other: Layer) -> bool:
        return other.name == self.name or EVERY_LAYER in self.may_import or other.name in self.may_import


@dataclass(frozen=True)
class Violation:
    """One import (or attribute) that breaks a rule; ``key`` leaves out the line, for lists of exceptions."""

    module: str  # the file that breaks the rule, relative to the package
    rule: str
    target: str
    line: int

    @property
    def key(self) -> Tuple[str, str, str]:
        return (self.module, self.rule, self.target)

    def __str__(self) -> str:
        return f"{self.module}:{self.line}: {self.rule}: {self.target}"


def read_layers(markdown: str) -> List[Layer]:
    """The layer table of a page (the one in the section under `LAYERS_HEADING`), as data."""
    section = markdown.split(LAYERS_HEADING + "\n", 1)[1].split("\n## ", 1)[0]
    lines = section.splitlines()
    layers = []
    for line in lines[lines.index(LAYER_TABLE_HEADER) + 2 :]:
        if not line.startswith("|"):
            break
        name, modules, may_import, io = (cell.strip() for cell in line.strip().strip("|").split("|"))
        allowed = {item.strip() for item in may_import.split(",")} - {"", "stdlib"}
        layers.append(Layer(name, tuple(re.findall(r"`([^`]+)`", modules)), frozenset(allowed), io == "yes"))
    return layers


def covers(entry: str, path: str) -> bool:
    """Whether a table entry (a file, or a folder ending in ``/``) covers a path."""
    return path == entry or (entry.endswith("/") and path.startswith(entry))


def layer_of(path: str, layers: Sequence[Layer]) -> Optional[Layer]:
    """The layer of a file (relative to the package): the row naming it, or the row of its nearest folder."""
    matches = [(len(entry), layer) for layer in layers for entry in layer.modules if covers(entry, path)]
    return max(matches, key=lambda match: match[0])[1] if matches else None


def _dotted(path: str) -> str:
    """``transports/http/__init__.py`` -> ``transports.http``; the package's own ``__init__.py`` -> ``""``."""
    parts = path[: -len(".py")].split("/")
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _join(*parts: str) -> str:
    return ".".join(part for part in parts if part)


def _is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


@dataclass(frozen=True)
class _Edge:
    """One name (or module) a module takes from the package."""

    spelled: str  # the package-relative dotted module the statement names (the submodule, if it names one)
    name: Optional[str]  # the name taken from that module (None: the module itself)
    defined_in: str  # the module that defines the name, re-exports followed
    bound: Optional[str]  # the local name it is bound to
    line: int


class _Tree:
    """The modules of a package tree, parsed: dotted name (without the package's) -> path."""

    def __init__(self, sources: Mapping[str, str]) -> None:
        self.sources = sources
        self.paths = {_dotted(path): path for path in sources}
        self._trees: Dict[str, ast.AST] = {}
        self._reexports: Dict[str, Dict[str, Tuple[str, str]]] = {}

    def syntax(self, path: str) -> ast.AST:
        """The syntax tree of one file, parsed on first use."""
        if path not in self._trees:
            self._trees[path] = ast.parse(self.sources[path])
        return self._trees[path]

    @staticmethod
    def within(dotted: str) -> Optional[str]:
        """An absolute dotted name -> the package-relative one, or None if it is outside the package."""
        if dotted == PACKAGE_NAME:
            return ""
        if dotted.startswith(PACKAGE_NAME + "."):
            return dotted[len(PACKAGE_NAME) + 1 :]
        return None

    def source_of(self, importer: str, is_package: bool, node: ast.ImportFrom) -> Optional[str]:
        """The package-relative module an ``ImportFrom`` reads from, or None if it is outside the package."""
        if node.level == 0:
            return self.within(node.module or "")
        base = importer.split(".") if importer else []
        if not is_package:
            base = base[:-1]
        if node.level - 1 > len(base):
            return None
        return _join(*base[: len(base) - (node.level - 1)], node.module or "")

    def reexports(self, package: str) -> Dict[str, Tuple[str, str]]:
        """What a package's ``__init__.py`` takes from the package: local name -> (module, its name there)."""
        if package not in self._reexports:
            found: Dict[str, Tuple[str, str]] = {}
            path = self.paths.get(package, "")
            if path.endswith("__init__.py"):
                for node in ast.walk(self.syntax(path)):
                    if isinstance(node, ast.ImportFrom):
                        source = self.source_of(package, True, node)
                        if source is not None and source in self.paths:
                            found.update({alias.asname or alias.name: (source, alias.name) for alias in node.names})
            self._reexports[package] = found
        return self._reexports[package]

    def defined_in(self, module: str, name: str) -> str:
        """The module that defines what ``from module import name`` takes, re-exports followed."""
        seen = set()
        while (module, name) not in seen:
            seen.add((module, name))
            if _join(module, name) in self.paths:
                return _join(module, name)
            if name not in self.reexports(module):
                return module
            module, name = self.reexports(module)[name]
        return module

    def called_import(self, importer: str, is_package: bool, node: ast.Call) -> Optional[str]:
        """The absolute module a call of `IMPORT_CALLS` imports, if its name is a string constant; else None.

        ``import_module(".x", __package__)`` resolves against the importer's package,
        ``__import__("x", level=n)`` with a constant ``n`` likewise.
        """
        function = node.func
        called = function.id if isinstance(function, ast.Name) else getattr(function, "attr", None)
        if called not in IMPORT_CALLS or not node.args:
            return None
        name = node.args[0]
        if not (isinstance(name, ast.Constant) and isinstance(name.value, str)):
            return None
        level = len(name.value) - len(name.value.lstrip("."))
        dotted = name.value[level:]
        if called == "__import__":
            given = [kw.value for kw in node.keywords if kw.arg == "level"] + node.args[4:5]
            level = given[0].value if given and isinstance(given[0], ast.Constant) else 0
        if level == 0:
            return dotted
        source = self.source_of(importer, is_package, ast.ImportFrom(module=dotted or None, names=[], level=level))
        return None if source is None else _join(PACKAGE_NAME, source)

    def edges(self, path: str) -> Tuple[List[_Edge], List[Tuple[str, int]]]:
        """Every import of one file anywhere in it: those from the package, and the others (name, line)."""
        module, is_package = _dotted(path), path.endswith("__init__.py")
        edges: List[_Edge] = []
        outside: List[Tuple[str, int]] = []
        for node in ast.walk(self.syntax(path)):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    target = self.within(alias.name)
                    if target is None:
                        outside.append((alias.name, node.lineno))
                    else:
                        bound = alias.asname or (None if "." in alias.name else alias.name)
                        edges.append(_Edge(target, None, target, bound, node.lineno))
            elif isinstance(node, ast.Call):
                imported = self.called_import(module, is_package, node)
                if imported is None:
                    continue
                target = self.within(imported)
                if target is None:
                    outside.append((imported, node.lineno))
                else:
                    edges.append(_Edge(target, None, target, None, node.lineno))
            elif isinstance(node, ast.ImportFrom):
                source = self.source_of(module, is_package, node)
                if source is None:
                    outside.append((node.module or "", node.lineno))
                    continue
                for alias in node.names:
                    submodule = _join(source, alias.name)
                    spelled, name = (submodule, None) if submodule in self.paths else (source, alias.name)
                    defined_in = self.defined_in(source, alias.name)
                    edges.append(_Edge(spelled, name, defined_in, alias.asname or alias.name, node.lineno))
        return edges, outside


def check_imports(
    sources: Mapping[str, str], layers: Sequence[Layer], only: Optional[Collection[str]] = None
) -> List[Violation]:
    """Every import and private name in a package tree that breaks the rules (see the module's docstring).

    Args:
        sources: each file of the package, relative to it (``transports/http/_post.py``) -> its text.
        layers: the layer table (`read_layers`); a file in no layer is held to the private-name rules only.
        only: the files to check (default: all); the others are read only as far as the check needs.

    Returns:
        The violations, sorted by file and line; one per file, line, rule and target.
    """
    tree = _Tree(sources)
    found: Set[Violation] = set()
    for path in sorted(sources if only is None else only):
        module = _dotted(path)
        layer = layer_of(path, layers)
        edges, outside = tree.edges(path)
        for edge in edges:
            if edge.spelled not in tree.paths:
                continue  # not a module of this tree (a crafted tree may name one it lacks)
            shown = tree.paths[edge.spelled]
            target_layer = layer_of(tree.paths[edge.defined_in], layers)
            if layer is not None and target_layer is not None and not layer.allows(target_layer):
                rule = f"layer {layer.name} imports {target_layer.name}"
                found.add(Violation(path, rule, tree.paths[edge.defined_in], edge.line))
            parts = edge.spelled.split(".") if edge.spelled else []
            for index, part in enumerate(parts):
                if _is_private(part) and module.split(".")[:index] != parts[:index]:
                    found.add(Violation(path, "private module", shown, edge.line))
                    break
            if edge.name is not None and _is_private(edge.name) and edge.spelled != module:
                found.add(Violation(path, "private name", f"{shown}: {edge.name}", edge.line))
        if layer is not None and not layer.does_io:
            found.update(
                Violation(path, f"I/O in layer {layer.name}", name, line)
                for name, line in outside
                if name.split(".")[0] in IO_MODULES
            )
        found.update(_private_attributes(tree, path, edges))
    return sorted(found, key=lambda v: (v.module, v.line, v.rule, v.target))


def _private_attributes(tree: _Tree, path: str, edges: Sequence[_Edge]) -> Iterator[Violation]:
    """``x._name`` where ``x`` is another module of the package, or another module's object."""
    module = _dotted(path)
    imported = {edge.bound: edge for edge in edges if edge.bound is not None and edge.spelled != module}
    syntax = tree.syntax(path)
    defined = _defined_names(syntax)
    foreign = _bound_from_outside(syntax)
    for node in ast.walk(syntax):
        if not (isinstance(node, ast.Attribute) and _is_private(node.attr)) or node.attr in NAMEDTUPLE_API:
            continue
        receiver = node.value
        if isinstance(receiver, ast.Name) and receiver.id in imported:
            edge = imported[receiver.id]
            yield Violation(
                path, "private attribute", f"{_join(edge.spelled, edge.name or '')}.{node.attr}", node.lineno
            )
        elif isinstance(receiver, ast.Name) and (receiver.id in OWN_RECEIVERS or receiver.id in foreign):
            continue
        elif node.attr not in defined:
            yield Violation(path, "private attribute", f"{ast.unparse(receiver)}.{node.attr}", node.lineno)


def _defined_names(syntax: ast.AST) -> Set[str]:
    """What a module defines: functions, classes, names, attributes of ``self``/``cls``, arguments, ``__slots__``."""
    names: Set[str] = set()
    for node in ast.walk(syntax):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            if isinstance(node.value, ast.Name) and node.value.id in OWN_RECEIVERS:
                names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__slots__" for target in node.targets
        ):
            strings = (c.value for c in ast.walk(node.value) if isinstance(c, ast.Constant))
            names.update(value for value in strings if isinstance(value, str))
    return names


def _bound_from_outside(syntax: ast.AST) -> Set[str]:
    """The local names bound by imports from outside the package (``os`` of ``os._exit``)."""
    names: Set[str] = set()
    for node in ast.walk(syntax):
        if isinstance(node, ast.Import):
            names.update(
                (alias.asname or alias.name).split(".")[0] for alias in node.names if _Tree.within(alias.name) is None
            )
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and _Tree.within(node.module or "") is None:
            names.update(alias.asname or alias.name for alias in node.names)
    return names

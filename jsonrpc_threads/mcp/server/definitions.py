"""What a server offers: tools, resources, resource templates, prompts and completions, made from functions.

Theory of operation.  Each decorator of ``McpServer`` makes one definition
here from a plain function: its wire description (what ``tools/list`` and its
siblings show) is computed once, at definition time, from the function's
signature and docstring (``schema.signature_of``), and ``run`` turns a
request's arguments into a call of the function and its return value into
MCP's JSON (``content``).  A definition never raises for what the function
does wrong: the engine decides what an exception becomes.

``Catalog`` holds the definitions of one server, by name (tools, prompts) or
URI (resources; templates in the order they were made, the first match wins).

Thread-safety: definitions are immutable once made; ``Catalog`` takes a lock
for every change and every read of its tables (a read returns a snapshot).
"""

from __future__ import annotations

import inspect
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from ...errors import InvalidParams
from ..http_headers import NO_HEADERS, HeaderPlan, header_plan
from .content import prompt_messages, resource_contents, tool_result
from .context import Context
from .schema import Signature, signature_of

__all__ = ["Catalog", "CompletionDefinition", "PromptDefinition", "ResourceDefinition", "ToolDefinition"]

#: The names MCP allows for a tool (2025-11-25: 1 to 128 of these characters).
TOOL_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,128}")
_TEMPLATE_VARIABLE = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")


def _call(fn: Callable[..., Any], signature: Signature, kwargs: Dict[str, Any], context: Optional[Context]) -> Any:
    if signature.context_parameter is not None:
        kwargs = {**kwargs, signature.context_parameter: context}
    return fn(**kwargs)


def _drop_none(entry: Dict[str, Any]) -> Dict[str, Any]:
    return {key: value for key, value in entry.items() if value is not None}


@dataclass(frozen=True)
class ToolDefinition:
    """One tool: its wire description and its function.

    Attributes:
        name: the tool's name.
        fn: the function.
        signature: what was read from the function (schemas, docstring).
        timeout: seconds after which the call is answered as timed out (``None``: none).
        description: the tool as ``tools/list`` shows it.
        task_support: ``"optional"`` or ``"required"``: a call may (must) run
            as a task of the tasks extension; ``None``: never.
        task_start: ``"call"`` (the task begins before the function runs) or
            ``"explicit"`` (at ``Context.start_task()``).
    """

    name: str
    fn: Callable[..., Any]
    signature: Signature
    timeout: Optional[float]
    description: Dict[str, Any] = field(repr=False)
    task_support: Optional[str] = None
    task_start: str = "call"
    #: Which arguments travel in ``Mcp-Param-*`` headers (its schema's ``x-mcp-header``), read once.
    headers: HeaderPlan = field(default=NO_HEADERS, repr=False)

    @classmethod
    def make(
        cls,
        fn: Callable[..., Any],
        *,
        name: Optional[str],
        title: Optional[str],
        description: Optional[str],
        annotations: Optional[Mapping[str, Any]],
        meta: Optional[Mapping[str, Any]],
        output_schema: Any,
        input_schema: Optional[Mapping[str, Any]],
        icons: Optional[List[Mapping[str, Any]]],
        timeout: Optional[float],
        task_support: Optional[str] = None,
        task_start: str = "call",
    ) -> ToolDefinition:
        """Read ``fn`` and make its definition.

        Raises:
            ValueError: a name MCP does not allow, a ``task_support`` or ``task_start`` not listed.
            TypeError: a signature that cannot be described (``*args``, ``**kwargs``).
        """
        tool_name = name or fn.__name__
        if not TOOL_NAME.fullmatch(tool_name):
            raise ValueError(f"tool name {tool_name!r}: 1 to 128 of A-Z a-z 0-9 _ . - only")
        if task_support not in (None, "optional", "required"):
            raise ValueError(f"task_support is None, 'optional' or 'required', not {task_support!r}")
        if task_start not in ("call", "explicit"):
            raise ValueError(f"task_start is 'call' or 'explicit', not {task_start!r}")
        signature = signature_of(fn, context_type=Context, output_schema=output_schema)
        wire: Dict[str, Any] = {"name": tool_name}
        if title is not None:
            wire["title"] = title
        wire["description"] = description if description is not None else (signature.description or "")
        wire["inputSchema"] = dict(input_schema) if input_schema is not None else signature.input_schema
        if signature.output_schema is not None:
            wire["outputSchema"] = signature.output_schema
        if annotations:
            wire["annotations"] = dict(annotations)
        if icons:
            wire["icons"] = [dict(icon) for icon in icons]
        if task_support is not None:
            wire["execution"] = {"taskSupport": task_support}
        if meta:
            wire["_meta"] = dict(meta)
        plan, _ = header_plan(wire["inputSchema"])
        return cls(tool_name, fn, signature, timeout, wire, task_support, task_start, plan)

    def bind(self, arguments: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """The keyword arguments for the function.

        Raises:
            schema.ArgumentError: an argument that breaks the schema (names the field).
        """
        return self.signature.bind(arguments)

    def run(self, kwargs: Dict[str, Any], context: Optional[Context]) -> Dict[str, Any]:
        """Call the function and build its ``CallToolResult`` (what it raises passes through)."""
        value = _call(self.fn, self.signature, kwargs, context)
        return tool_result(value, self.signature.structured(value))


@dataclass(frozen=True)
class ResourceDefinition:
    """One resource, or a template of many (``uri`` holds ``{variables}``).

    Attributes:
        uri: the URI, or the template.
        fn: the function; a template's variables are its keyword arguments.
        mime_type: the contents' MIME type (``None``: text/plain for text, application/octet-stream for bytes).
        description: the resource (or template) as the lists show it.
    """

    uri: str
    fn: Callable[..., Any]
    signature: Signature
    mime_type: Optional[str]
    description: Dict[str, Any] = field(repr=False)
    pattern: Optional[re.Pattern[str]] = field(default=None, repr=False)

    @property
    def is_template(self) -> bool:
        """True for a template (its URI has ``{variables}``)."""
        return self.pattern is not None

    @classmethod
    def make(
        cls,
        fn: Callable[..., Any],
        uri: str,
        *,
        name: Optional[str],
        title: Optional[str],
        description: Optional[str],
        mime_type: Optional[str],
        icons: Optional[List[Mapping[str, Any]]] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> ResourceDefinition:
        """Read ``fn`` and make its definition.

        Raises:
            ValueError: a URI without a scheme, or a template whose variables are not the function's parameters.
        """
        if not isinstance(uri, str) or ":" not in uri:
            raise ValueError(f"a resource needs a URI with a scheme, not {uri!r}")
        signature = signature_of(fn, context_type=Context, output_schema=None)
        variables = _TEMPLATE_VARIABLE.findall(uri)
        parameters = {parameter.name for parameter in signature.parameters}
        pattern = None
        if variables:
            if set(variables) != parameters:
                raise ValueError(
                    f"resource template {uri!r}: its variables {sorted(variables)} must be the parameters "
                    f"of {fn.__name__}() {sorted(parameters)}"
                )
            pieces = _TEMPLATE_VARIABLE.split(uri)
            regex = "".join(re.escape(piece) if i % 2 == 0 else f"(?P<{piece}>[^/]+)" for i, piece in enumerate(pieces))
            pattern = re.compile(regex)
        elif any(parameter.required for parameter in signature.parameters):
            raise ValueError(f"resource {uri!r}: {fn.__name__}() has required parameters but the URI names none")
        wire: Dict[str, Any] = {("uriTemplate" if variables else "uri"): uri, "name": name or fn.__name__}
        wire.update(_drop_none({"title": title, "description": description or signature.description}))
        if mime_type is not None:
            wire["mimeType"] = mime_type
        if icons:
            wire["icons"] = [dict(icon) for icon in icons]
        if meta:
            wire["_meta"] = dict(meta)
        return cls(uri, fn, signature, mime_type, wire, pattern)

    def match(self, uri: str) -> Optional[Dict[str, str]]:
        """The variables of ``uri`` when it is this resource (or fits this template), else ``None``."""
        if self.pattern is None:
            return {} if uri == self.uri else None
        found = self.pattern.fullmatch(uri)
        return found.groupdict() if found else None

    def read(self, uri: str, variables: Dict[str, str], context: Optional[Context]) -> Dict[str, Any]:
        """Call the function and build the ``ReadResourceResult`` (what it raises passes through)."""
        kwargs = self.signature.bind(variables) if variables else {}
        value = _call(self.fn, self.signature, kwargs, context)
        return {"contents": resource_contents(uri, value, self.mime_type)}


@dataclass(frozen=True)
class PromptDefinition:
    """One prompt: its arguments (the function's parameters) and its function."""

    name: str
    fn: Callable[..., Any]
    signature: Signature
    description: Dict[str, Any] = field(repr=False)

    @classmethod
    def make(
        cls,
        fn: Callable[..., Any],
        *,
        name: Optional[str],
        title: Optional[str],
        description: Optional[str],
        icons: Optional[List[Mapping[str, Any]]] = None,
        meta: Optional[Mapping[str, Any]] = None,
    ) -> PromptDefinition:
        """Read ``fn`` and make its definition."""
        signature = signature_of(fn, context_type=Context, output_schema=None)
        arguments = [
            _drop_none({"name": parameter.name, "description": parameter.description, "required": parameter.required})
            for parameter in signature.parameters
        ]
        wire: Dict[str, Any] = {"name": name or fn.__name__}
        wire.update(_drop_none({"title": title, "description": description or signature.description}))
        wire["arguments"] = arguments
        if icons:
            wire["icons"] = [dict(icon) for icon in icons]
        if meta:
            wire["_meta"] = dict(meta)
        return cls(wire["name"], fn, signature, wire)

    def get(self, arguments: Optional[Mapping[str, Any]], context: Optional[Context]) -> Dict[str, Any]:
        """Call the function and build the ``GetPromptResult``.

        Raises:
            schema.ArgumentError: arguments that break the prompt's signature.
        """
        kwargs = self.signature.bind(arguments)
        value = _call(self.fn, self.signature, kwargs, context)
        result: Dict[str, Any] = {"messages": prompt_messages(value)}
        if self.description.get("description"):
            result["description"] = self.description["description"]
        return result


@dataclass(frozen=True)
class CompletionDefinition:
    """Completions for the arguments of one prompt or resource template.

    The function is called as ``fn(argument, value, context_arguments)``
    (``context_arguments``: the other arguments already filled in) and
    returns a list of strings, or ``{"values", "total"?, "hasMore"?}``.
    """

    ref: Tuple[str, str]
    fn: Callable[..., Any]

    @staticmethod
    def ref_of(ref: Any) -> Tuple[str, str]:
        """A completion reference as a key: ``("ref/prompt", name)`` or ``("ref/resource", uri)``.

        ``ref`` is a wire reference (``{"type": "ref/prompt", "name": ...}``),
        or a string: a prompt's name, or a template's URI (it has ``://`` or ``{``).

        Raises:
            InvalidParams: not a reference.
        """
        if isinstance(ref, str):
            return ("ref/resource", ref) if ("://" in ref or "{" in ref) else ("ref/prompt", ref)
        if isinstance(ref, Mapping):
            kind = ref.get("type")
            if kind == "ref/prompt" and isinstance(ref.get("name"), str):
                return kind, ref["name"]
            if kind == "ref/resource" and isinstance(ref.get("uri"), str):
                return kind, ref["uri"]
        raise InvalidParams(f"not a completion reference: {ref!r}")

    def complete(self, argument: str, value: str, others: Dict[str, Any]) -> Dict[str, Any]:
        """The ``completion`` object (at most 100 values, as MCP allows)."""
        found = self.fn(argument, value, others)
        if isinstance(found, Mapping):
            values = list(found.get("values") or [])
            extra = {key: found[key] for key in ("total", "hasMore") if key in found}
        else:
            values = list(found or [])
            extra = {}
        if len(values) > 100:
            extra = {"total": extra.get("total", len(values)), "hasMore": True}
            values = values[:100]
        return {"values": [str(item) for item in values], **extra}


class Catalog:
    """The definitions of one server.  Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # guards the five tables
        self._tools: Dict[str, ToolDefinition] = {}
        self._resources: Dict[str, ResourceDefinition] = {}
        self._templates: List[ResourceDefinition] = []
        self._prompts: Dict[str, PromptDefinition] = {}
        self._completions: Dict[Tuple[str, str], CompletionDefinition] = {}

    def add_tool(self, tool: ToolDefinition) -> None:
        """Add (or replace) a tool."""
        with self._lock:
            self._tools[tool.name] = tool

    def remove_tool(self, name: str) -> bool:
        """Remove a tool; True when there was one."""
        with self._lock:
            return self._tools.pop(name, None) is not None

    def add_resource(self, resource: ResourceDefinition) -> None:
        """Add (or replace) a resource or template."""
        with self._lock:
            if resource.is_template:
                self._templates = [item for item in self._templates if item.uri != resource.uri] + [resource]
            else:
                self._resources[resource.uri] = resource

    def add_prompt(self, prompt: PromptDefinition) -> None:
        """Add (or replace) a prompt."""
        with self._lock:
            self._prompts[prompt.name] = prompt

    def remove_prompt(self, name: str) -> bool:
        """Remove a prompt; True when there was one."""
        with self._lock:
            return self._prompts.pop(name, None) is not None

    def add_completion(self, completion: CompletionDefinition) -> None:
        """Add (or replace) the completions of one reference."""
        with self._lock:
            self._completions[completion.ref] = completion

    def tools(self) -> List[ToolDefinition]:
        """Every tool, in the order they were made."""
        with self._lock:
            return list(self._tools.values())

    def tool(self, name: str) -> Optional[ToolDefinition]:
        """The tool of that name, or ``None``."""
        with self._lock:
            return self._tools.get(name)

    def resources(self) -> List[ResourceDefinition]:
        """Every resource (no templates)."""
        with self._lock:
            return list(self._resources.values())

    def templates(self) -> List[ResourceDefinition]:
        """Every resource template."""
        with self._lock:
            return list(self._templates)

    def find_resource(self, uri: str) -> Optional[Tuple[ResourceDefinition, Dict[str, str]]]:
        """The resource that is ``uri``, else the first template it fits, with the template's variables."""
        with self._lock:
            exact = self._resources.get(uri)
            templates = list(self._templates)
        if exact is not None:
            return exact, {}
        for template in templates:
            variables = template.match(uri)
            if variables is not None:
                return template, variables
        return None

    def prompts(self) -> List[PromptDefinition]:
        """Every prompt."""
        with self._lock:
            return list(self._prompts.values())

    def prompt(self, name: str) -> Optional[PromptDefinition]:
        """The prompt of that name, or ``None``."""
        with self._lock:
            return self._prompts.get(name)

    def completion(self, ref: Tuple[str, str]) -> Optional[CompletionDefinition]:
        """The completions of a reference, or ``None``."""
        with self._lock:
            return self._completions.get(ref)

    def has(self, kind: str) -> bool:
        """Whether anything of a kind is defined: ``"tools"``, ``"resources"``, ``"prompts"``, ``"completions"``."""
        with self._lock:
            if kind == "resources":
                return bool(self._resources or self._templates)
            return bool({"tools": self._tools, "prompts": self._prompts, "completions": self._completions}[kind])


def is_function(value: Any) -> bool:
    """True for what a decorator can describe (a function or another callable with a signature)."""
    if not callable(value):
        return False
    try:
        inspect.signature(value)
    except (TypeError, ValueError):
        return False
    return True

"""Guard declarations for tools an agent framework runs in-process.

The same ``[[guard]]`` tables the MCP gateway reads (``idem mcp gateway
--guard FILE``), read from the same TOML file or given as the same
structure in code::

    guards = idem_client.guards.load("pay-guard.toml")
    guards = idem_client.guards.load([{
        "tool": "charge_pix", "action": "pix.cobranca", "key_argument": "idempotency_key",
        "fields": {"cliente_id": "customer_id", "valor": "amount",
                   "chave_pix_destino": "pix_key", "referencia_intencao": "invoice_ref"},
    }])

A mistake stops the program where the guards are loaded, naming the file,
the line and the fix (``GuardFileError``), never at the first payment. See
the book's "Agent frameworks".
"""

from __future__ import annotations

import difflib
import json
import os
import re
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Iterator, Literal, Mapping, Sequence, Union, cast

from ._protocol import MAX_LEASE_MS

__all__ = ["Guard", "GuardFileError", "Guards", "load", "TURN"]

OnUncertain = Literal["refuse", "resend", "lookup"]
Errors = Literal["retryable", "final"]

#: A field source that reads the conversation's turn instead of an
#: argument: the thread and the id of the user's message that started the
#: turn, as each framework names them (the book's "Agent frameworks").
TURN = "$turn"

DEFAULT_LEASE_MS = 30_000
MAX_GUARDS = 64
MAX_FILE_BYTES = 64 * 1024

_ACTION = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
_GUARD_KEYS = (
    "tool",
    "action",
    "fields",
    "key_argument",
    "lease_ms",
    "on_uncertain",
    "errors",
    "supersede_failed",
    "freeze_meta",
    "lookup",
)
# Read by the gateway only; an in-process integration has no upstream.
_GATEWAY_ONLY = ("upstream", "tenants", "pass_through")


class GuardFileError(ValueError):
    """A guard declaration that cannot be used: ``where`` names the file and
    line (or the position in the list given in code)."""

    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where}: {message}")
        self.where = where
        self.message = message


class Pointer:
    """Where an argument is read: a top-level name, or an RFC 6901 JSON
    Pointer into nested arguments (``/payload/totals/0/amount``)."""

    __slots__ = ("text", "parts")

    def __init__(self, text: str) -> None:
        self.text = text
        if text.startswith("/"):
            self.parts = [p.replace("~1", "/").replace("~0", "~") for p in text[1:].split("/")]
        else:
            self.parts = [text]

    def __str__(self) -> str:
        return self.text

    @property
    def top(self) -> str:
        return self.parts[0]

    def get(self, doc: Any) -> tuple[bool, Any]:
        """``(True, value)`` when the arguments hold something here."""
        cur: Any = doc
        for part in self.parts:
            if isinstance(cur, Mapping):
                m = cast(Mapping[str, Any], cur)
                if part not in m:
                    return False, None
                cur = m[part]
            elif isinstance(cur, list) and part.isdigit() and int(part) < len(cast(list[Any], cur)):
                cur = cast(list[Any], cur)[int(part)]
            else:
                return False, None
        return True, cur

    def set(self, doc: dict[str, Any], value: Any) -> None:
        """Writes ``value`` here, creating the objects on the way; raises
        ``ValueError`` saying why when the arguments have no place for it."""
        cur: Any = doc
        for i, part in enumerate(self.parts):
            last = i == len(self.parts) - 1
            if isinstance(cur, dict):
                d = cast(dict[str, Any], cur)
                if last:
                    d[part] = value
                    return
                if part not in d:
                    d[part] = {}
                cur = d[part]
            elif isinstance(cur, list) and part.isdigit() and int(part) < len(cast(list[Any], cur)):
                lst = cast(list[Any], cur)
                if last:
                    lst[int(part)] = value
                    return
                cur = lst[int(part)]
            else:
                where = "/".join(self.parts[:i]) or "the arguments"
                kind = type(cast(object, cur)).__name__
                raise ValueError(f"`{self.text}` has no place in these arguments ({where} is {kind})")

    def within(self, other: Pointer) -> bool:
        """Whether one of the two holds the other (or they are the same)."""
        n = min(len(self.parts), len(other.parts))
        return self.parts[:n] == other.parts[:n]


@dataclass(frozen=True)
class Field:
    """One catalog field and the argument (or the turn) that carries it."""

    name: str
    source: str
    line: int | None = None

    @property
    def is_turn(self) -> bool:
        return self.source == TURN

    @property
    def pointer(self) -> Pointer:
        return Pointer(self.source)


@dataclass(frozen=True)
class Guard:
    """One guarded tool: its calls record ``action``'s intent from
    ``fields`` (catalog field -> tool argument), and run once per intent."""

    tool: str
    action: str
    fields: tuple[Field, ...]
    key_argument: str | None = None
    lease_ms: int = DEFAULT_LEASE_MS
    on_uncertain: OnUncertain = "refuse"
    errors: Errors = "retryable"
    where: str = "guard"
    line: int | None = None
    lookup: Callable[..., Any] | None = field(default=None, compare=False, repr=False)
    key_lines: Mapping[str, int] = field(default_factory=lambda: cast(Mapping[str, int], {}), compare=False, repr=False)

    @property
    def key_pointer(self) -> Pointer | None:
        return Pointer(self.key_argument) if self.key_argument else None

    def at(self, key: str | None = None) -> str:
        """``file:line`` of this guard, or of one of its keys."""
        line = self.line
        if key is not None:
            line = self.key_lines.get(key, line)
            for f in self.fields:
                if f.name == key and f.line is not None:
                    line = f.line
        return f"{self.where}:{line}" if line is not None else self.where


class Guards:
    """The loaded guards, by tool name."""

    def __init__(self, guards: Sequence[Guard], where: str) -> None:
        self._by_tool = {g.tool: g for g in guards}
        self.where = where

    def __getitem__(self, tool: str) -> Guard:
        return self._by_tool[tool]

    def get(self, tool: str) -> Guard | None:
        return self._by_tool.get(tool)

    def __iter__(self) -> Iterator[Guard]:
        return iter(self._by_tool.values())

    def __len__(self) -> int:
        return len(self._by_tool)

    def __contains__(self, tool: object) -> bool:
        return tool in self._by_tool

    def refuse_turn(self, how: str) -> None:
        """For an integration that cannot read the turn by itself: a guard
        field written ``"$turn"`` raises ``GuardFileError`` naming its line
        and ``how`` to give the turn."""
        for g in self:
            for f in g.fields:
                if f.is_turn:
                    raise GuardFileError(g.at(f.name), f'field `{f.name}` reads "{TURN}": {how}, or map it to an argument')

    def check_tools(self, schemas: Mapping[str, Mapping[str, Any] | None]) -> None:
        """The start-up checks against the tools the agent has (name ->
        JSON Schema of its arguments, ``None`` when it has none): a guard
        naming a tool the agent lacks, or an argument its schema does not
        declare, raises ``GuardFileError`` naming the line."""
        for g in self:
            if g.tool not in schemas:
                raise GuardFileError(
                    g.at("tool"),
                    f"guards tool `{g.tool}`, which the agent does not have"
                    + _suggest(g.tool, list(schemas))
                    + f" (its tools: {', '.join(sorted(schemas)) or 'none'})",
                )
            schema = schemas[g.tool]
            if schema is None:
                continue
            named = [(f.source, f.name, g.at(f.name)) for f in g.fields if not f.is_turn]
            if g.key_argument:
                named.append((g.key_argument, "key_argument", g.at("key_argument")))
            for source, what, where in named:
                why = _schema_lacks(schema, Pointer(source))
                if why:
                    label = "key_argument" if what == "key_argument" else f"field `{what}`"
                    raise GuardFileError(
                        where,
                        f"{label} reads `{source}`, which tool `{g.tool}` does not declare: {why}"
                        + _suggest(Pointer(source).top, list(_properties(schema, schema)))
                        + " (a tool never receives an argument its schema lacks, and a key it never receives protects nothing)",
                    )


Source = Union[str, "os.PathLike[str]", Mapping[str, Any], Iterable[Union[Mapping[str, Any], Guard]], Guards]


def load(source: Source, *, lookups: Mapping[str, Callable[..., Any]] | None = None) -> Guards:
    """Reads guards: a guard file's path (TOML, the gateway's format), the
    parsed file as a dict (``{"guard": [...]}``), or a list of guard tables
    (or ``Guard``s). ``lookups`` maps a tool to the function that settles its
    unknown outcomes (``on_uncertain = "lookup"``): it gets the ``Intent``
    and returns the tool's stored result when the provider says executed,
    ``None`` when it says not executed (the tool then runs again, same key),
    or raises when it cannot tell.
    """
    if isinstance(source, Guards):
        return source
    text: str | None = None
    if isinstance(source, (str, os.PathLike)):
        where = os.fspath(source)
        text = _read(where)
        doc = _parse_toml(where, text)
    elif isinstance(source, Mapping):
        where = "guards"
        doc = dict(cast(Mapping[str, Any], source))
    else:
        where = "guards"
        doc = {"guard": list(source)}
    lines = _Lines(text)
    for key in doc:
        if key != "guard" and key not in _GATEWAY_ONLY:
            raise GuardFileError(
                f"{where}:{lines.top(key)}" if text and lines.top(key) else where,
                f"unknown key `{key}`" + _suggest(key, ["guard", *_GATEWAY_ONLY]),
            )
    tables = doc.get("guard")
    if not isinstance(tables, list) or not tables:
        raise GuardFileError(where, "no [[guard]] table: nothing would be guarded")
    tables = cast(list[Any], tables)
    if len(tables) > MAX_GUARDS:
        raise GuardFileError(where, f"{len(tables)} guards; at most {MAX_GUARDS}")
    lookups = dict(lookups or {})
    out: list[Guard] = []
    for i, table in enumerate(tables):
        if isinstance(table, Guard):
            g = table
        else:
            g = _guard(where, lines, i, table, lookups)
        if any(o.tool == g.tool for o in out):
            raise GuardFileError(g.at(), f"tool `{g.tool}` is guarded twice")
        out.append(g)
    for tool in lookups:
        if not any(g.tool == tool for g in out):
            raise GuardFileError(where, f"lookups= names tool `{tool}`, which no guard guards")
    return Guards(out, where)


def _read(path: str) -> str:
    try:
        size = os.path.getsize(path)
    except OSError as e:
        raise GuardFileError(path, f"cannot be read: {e.strerror or e}") from None
    if size > MAX_FILE_BYTES:
        raise GuardFileError(path, f"is {size} bytes; a guard file is at most {MAX_FILE_BYTES}")
    with open(path, encoding="utf-8") as f:
        return f.read()


def _parse_toml(where: str, text: str) -> dict[str, Any]:
    try:
        import tomllib as toml  # type: ignore[import-not-found, unused-ignore]
    except ModuleNotFoundError:  # Python 3.10
        try:
            import tomli as toml  # type: ignore[import-not-found, no-redef, unused-ignore]
        except ModuleNotFoundError:
            raise GuardFileError(where, "reading a guard file needs Python 3.11, or the tomli package on 3.10") from None
    try:
        return cast(dict[str, Any], toml.loads(text))  # pyright: ignore[reportUnknownMemberType]
    except Exception as e:  # tomllib.TOMLDecodeError names the line and column
        line = re.search(r"line (\d+)", str(e))
        raise GuardFileError(f"{where}:{line.group(1)}" if line else where, f"not TOML: {e}") from None


class _Lines:
    """Line numbers of a guard file's tables and keys (the TOML reader keeps
    none): the i-th ``[[guard]]`` header, and a key's line within it."""

    def __init__(self, text: str | None) -> None:
        self.lines = text.splitlines() if text else []
        self.headers = [n for n, line in enumerate(self.lines) if re.match(r"^\s*\[\[\s*guard\s*\]\]", line)]

    def top(self, key: str) -> int | None:
        for n, line in enumerate(self.lines):
            if re.match(rf"^\s*\[*\s*\"?{re.escape(key)}\"?\s*[\]=.]", line):
                return n + 1
        return None

    def guard(self, i: int) -> int | None:
        return self.headers[i] + 1 if i < len(self.headers) else None

    def key(self, i: int, key: str, table: str = "") -> int | None:
        if i >= len(self.headers):
            return None
        start = self.headers[i]
        end = self.headers[i + 1] if i + 1 < len(self.headers) else len(self.lines)
        section = ""
        for n in range(start + 1, end):
            line = self.lines[n]
            m = re.match(r"^\s*\[\s*([^\]]+?)\s*\]", line)
            if m and not line.lstrip().startswith("[["):
                section = m.group(1)
                if not section.startswith("guard."):
                    return None
                if not table and section == f"guard.{key}":
                    return n + 1
                continue
            if section == (f"guard.{table}" if table else "") and re.match(
                rf"^\s*\"?{re.escape(key)}\"?\s*=", line
            ):
                return n + 1
        return self.guard(i)


def _guard(where: str, lines: _Lines, i: int, table: Any, lookups: Mapping[str, Callable[..., Any]]) -> Guard:
    at = lines.guard(i)
    here = f"{where}:{at}" if at is not None else f"{where}[{i}]"

    def line_of(key: str, sub: str = "") -> str:
        n = lines.key(i, key, sub)
        return f"{where}:{n}" if n is not None else here

    def number(key: str, sub: str = "") -> int | None:
        return lines.key(i, key, sub)

    if not isinstance(table, Mapping):
        raise GuardFileError(here, f"a guard is a table, not {type(table).__name__}")
    t = cast(Mapping[str, Any], table)
    for key in t:
        if key not in _GUARD_KEYS:
            raise GuardFileError(line_of(key), f"unknown key `{key}` in a [[guard]]" + _suggest(key, _GUARD_KEYS))
    tool = t.get("tool")
    if not isinstance(tool, str) or not tool:
        raise GuardFileError(line_of("tool"), "`tool` names the tool to guard: a non-empty string")
    action = t.get("action")
    if not isinstance(action, str) or not _ACTION.match(action):
        raise GuardFileError(
            line_of("action"),
            "`action` names the catalog action whose fields make the key (letters, digits, `.`, `_`, `-`), e.g. \"pix.cobranca\"",
        )
    raw_fields = t.get("fields")
    if not isinstance(raw_fields, Mapping) or not raw_fields:
        raise GuardFileError(
            line_of("fields"),
            "[guard.fields] maps each of the action's fields to the argument that carries it, e.g. valor = \"amount\"",
        )
    fields: list[Field] = []
    for name, src in cast(Mapping[str, Any], raw_fields).items():
        fat = line_of(name, "fields")
        if not isinstance(src, str) or not src:
            raise GuardFileError(fat, f"field `{name}`: the argument is a non-empty string (a name, or a JSON Pointer starting with /)")
        if src.startswith("meta:"):
            raise GuardFileError(
                fat,
                f"field `{name}` reads `{src}`, a request's MCP _meta: a tool run in-process has none. "
                "Guard this tool with the MCP gateway (`idem mcp gateway`), or map the field to an argument",
            )
        if src.startswith("$") and src != TURN:
            raise GuardFileError(fat, f"field `{name}` reads `{src}`; the only source that is not an argument is \"{TURN}\"")
        _check_pointer(fat, src, f"field `{name}`")
        fields.append(Field(str(name), src, number(name, "fields")))
    key_argument = t.get("key_argument")
    if key_argument is not None:
        kat = line_of("key_argument")
        if not isinstance(key_argument, str) or not key_argument or key_argument == TURN:
            raise GuardFileError(kat, "`key_argument` names the argument the key is written into (a name or a JSON Pointer)")
        _check_pointer(kat, key_argument, "key_argument")
        kp = Pointer(key_argument)
        for f in fields:
            if not f.is_turn and kp.within(f.pointer):
                raise GuardFileError(
                    kat,
                    f"key_argument `{key_argument}` overlaps field `{f.name}`'s argument `{f.source}`: the key would overwrite what it is derived from",
                )
    lease_ms = t.get("lease_ms", DEFAULT_LEASE_MS)
    if isinstance(lease_ms, bool) or not isinstance(lease_ms, int) or not 1 <= lease_ms <= MAX_LEASE_MS:
        raise GuardFileError(line_of("lease_ms"), f"`lease_ms` is a whole number of milliseconds from 1 to {MAX_LEASE_MS}, not {lease_ms!r}")
    on_uncertain = t.get("on_uncertain", "refuse")
    if on_uncertain not in ("refuse", "resend", "lookup"):
        raise GuardFileError(
            line_of("on_uncertain"),
            f"`on_uncertain` is \"refuse\", \"resend\" or \"lookup\", not {on_uncertain!r}"
            + (_suggest(on_uncertain, ["refuse", "resend", "lookup"]) if isinstance(on_uncertain, str) else ""),
        )
    errors = t.get("errors", "retryable")
    if errors not in ("retryable", "final"):
        raise GuardFileError(line_of("errors"), f"`errors` is \"retryable\" or \"final\", not {errors!r}")
    if t.get("supersede_failed") is True:
        raise GuardFileError(
            line_of("supersede_failed"),
            "`supersede_failed` is the gateway's; in-process, supersede a failed intent with "
            "POST /v1/intents/{action}/{reference}/supersede or on /live",
        )
    freeze = t.get("freeze_meta")
    if freeze:
        raise GuardFileError(line_of("freeze_meta"), "`freeze_meta` freezes MCP _meta entries: a tool run in-process has none")
    lookup = lookups.get(tool)
    if "lookup" in t:
        raise GuardFileError(
            line_of("lookup"),
            "[guard.lookup] names an upstream MCP tool, which an in-process guard does not call: "
            f"pass the function that asks the provider instead, lookups={{\"{tool}\": fn}}",
        )
    if on_uncertain == "lookup" and lookup is None:
        raise GuardFileError(
            line_of("on_uncertain"),
            f"on_uncertain = \"lookup\" needs the function that asks the provider: lookups={{\"{tool}\": fn}}",
        )
    if lookup is not None and on_uncertain != "lookup":
        raise GuardFileError(line_of("on_uncertain"), f"lookups= has a function for `{tool}`, whose guard says on_uncertain = {on_uncertain!r}, not \"lookup\"")
    return Guard(
        tool=tool,
        action=action,
        fields=tuple(fields),
        key_argument=key_argument,
        lease_ms=lease_ms,
        on_uncertain=on_uncertain,
        errors=errors,
        where=where,
        line=at,
        lookup=lookup,
        key_lines={k: n for k in ("tool", "key_argument") if (n := number(k)) is not None},
    )


def _check_pointer(where: str, src: str, what: str) -> None:
    if src.startswith("/"):
        if re.search(r"~[^01]|~$", src):
            raise GuardFileError(where, f"{what}: `{src}` is not a JSON Pointer (`~` is written `~0`, `/` inside a name `~1`)")
        if src == "/":
            raise GuardFileError(where, f"{what}: `/` names no argument")
    elif "/" in src:
        raise GuardFileError(where, f"{what}: `{src}` holds a `/`: a nested argument is a JSON Pointer starting with `/`, e.g. `/{src}`")


def _suggest(word: Any, options: Iterable[str]) -> str:
    if not isinstance(word, str):
        return ""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean `{close[0]}`?)" if close else ""


def _resolve(schema: Mapping[str, Any], root: Mapping[str, Any], depth: int = 0) -> list[Mapping[str, Any]]:
    """The object schemas ``schema`` may be: local ``$ref``s followed, and
    ``anyOf``/``oneOf``/``allOf`` branches."""
    if depth > 32:
        return []
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/"):
        ok, target = Pointer(ref[1:]).get(root)
        return _resolve(cast(Mapping[str, Any], target), root, depth + 1) if ok and isinstance(target, Mapping) else []
    out = [schema]
    for k in ("anyOf", "oneOf", "allOf"):
        for branch in cast(list[Any], schema.get(k) or []):
            if isinstance(branch, Mapping):
                out.extend(_resolve(cast(Mapping[str, Any], branch), root, depth + 1))
    return out


def _properties(schema: Mapping[str, Any], root: Mapping[str, Any]) -> dict[str, Any]:
    props: dict[str, Any] = {}
    for s in _resolve(schema, root):
        p = s.get("properties")
        if isinstance(p, Mapping):
            props.update(cast(Mapping[str, Any], p))
    return props


def _schema_lacks(root: Mapping[str, Any], pointer: Pointer) -> str | None:
    """Why the arguments' schema cannot hold ``pointer`` (``None`` when it
    can): member by member, a free-form object or array below the top level
    holding anything."""
    current: list[Mapping[str, Any]] = [root]
    for depth, part in enumerate(pointer.parts):
        nxt: list[Mapping[str, Any]] = []
        free = False
        for s in current:
            for r in _resolve(s, root):
                props = r.get("properties")
                items = r.get("items")
                if isinstance(props, Mapping) and part in props:
                    sub = cast(Mapping[str, Any], props)[part]
                    nxt.append(cast(Mapping[str, Any], sub) if isinstance(sub, Mapping) else {})
                elif part.isdigit() and isinstance(items, Mapping):
                    nxt.append(cast(Mapping[str, Any], items))
                elif depth > 0 and (r.get("additionalProperties") not in (None, False) or (not props and not items)):
                    free = True
                elif depth > 0 and isinstance(props, Mapping) and r.get("additionalProperties") is not False and not props:
                    free = True
        if free and not nxt:
            return None
        if not nxt:
            where = "/".join(pointer.parts[:depth]) or "the arguments"
            return f"{where} has no member `{part}`"
        current = nxt
    return None


def dumps(value: Any) -> str:
    """Compact JSON, as the gateway writes values in its sentences."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))

"""A small declarative codec for Kafka-format messages that kio has no schema for.

Each message is declared once, as data, as Kafka's JSON specs declare it: a `Struct` names the
class its values are built as (a dataclass, or any callable taking the fields as keywords) and
lists its `Field`s in wire order, each with its type, the versions it exists in, the versions it
is nullable in, its tag when it is a tagged field, and the Python value that stands for it when
a version lacks it or a tagged field is absent. A `Codec` reads and writes a struct at any of
its valid versions, in both of Kafka's message formats:

- non-flexible (the older versions): fixed-width big-endian integers, uuids as 16 bytes,
  strings as an int16 length (-1 for null) and UTF-8, bytes as an int32 length, arrays as an
  int32 count (-1 for null), no tagged fields;
- flexible ("compact"): the same integers, then strings, bytes and arrays as their length + 1
  as an unsigned varint (0 for null), and after every struct's fields a tagged-field section:
  the count, then per field its tag, its size and its bytes, in ascending tag order. A tagged
  field is written only when its value differs from its default; unknown tags are skipped.

Speed matters (nodes decode metadata records by the thousand), so a codec compiles each version
it is asked for, once, into a Python reader and writer: consecutive fixed-width fields become
one `struct.Struct`, arrays of integers one unpack. A field may carry a pair of conversions
(`decode`, `encode`) between its wire value and its Python value (an enum, a sentinel such as
"-2 means unchanged"); `ignored` fields are read and dropped and written as their default.
Anything that is not a valid message is a `SchemaDecodeError`.

This module imports nothing else of ours.
"""

from __future__ import annotations

import dataclasses
import struct
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final
from uuid import UUID as _UUID
from uuid import SafeUUID

__all__ = [
    "BOOL",
    "BYTES",
    "FLOAT64",
    "INT8",
    "INT16",
    "INT32",
    "INT64",
    "STRING",
    "UINT16",
    "UUID",
    "Array",
    "Codec",
    "Field",
    "Primitive",
    "SchemaDecodeError",
    "Struct",
    "Versions",
    "read_uvarint",
    "write_uvarint",
]


class SchemaDecodeError(ValueError):
    """Bytes that are not a valid message of the schema (version, truncation, values)."""


@dataclass(frozen=True, slots=True)
class Versions:
    """A range of versions, as Kafka's specs write them: "0+", "1-3", "2" or "none"."""

    low: int
    high: int | None  # None: open-ended

    @classmethod
    def parse(cls, text: str) -> Versions:
        text = text.strip()
        if text == "none":
            return cls(1, 0)
        if text.endswith("+"):
            return cls(int(text[:-1]), None)
        low, _, high = text.partition("-")
        return cls(int(low), int(high or low))

    def __contains__(self, version: object) -> bool:
        return (
            isinstance(version, int)
            and self.low <= version
            and (self.high is None or version <= self.high)
        )

    def __str__(self) -> str:
        if self.high is None:
            return f"{self.low}+"
        if self.high < self.low:
            return "none"
        return str(self.low) if self.low == self.high else f"{self.low}-{self.high}"


@dataclass(frozen=True, slots=True)
class Primitive:
    """A scalar type; `code` is its `struct` format for the fixed-width ones, "" otherwise."""

    name: str
    code: str


INT8: Final = Primitive("int8", "b")
INT16: Final = Primitive("int16", "h")
UINT16: Final = Primitive("uint16", "H")
INT32: Final = Primitive("int32", "i")
INT64: Final = Primitive("int64", "q")
FLOAT64: Final = Primitive("float64", "d")
BOOL: Final = Primitive("bool", "?")
UUID: Final = Primitive("uuid", "16s")
STRING: Final = Primitive("string", "")
BYTES: Final = Primitive("bytes", "")


@dataclass(frozen=True, slots=True)
class Array:
    """An array of `element` (read as a tuple)."""

    element: Primitive | Struct


class _NoDefault:
    def __repr__(self) -> str:
        return "NO_DEFAULT"


NO_DEFAULT: Final = _NoDefault()


@dataclass(frozen=True, slots=True)
class Field:
    """One field of a struct, in wire order.

    `name` is the attribute (and constructor keyword) of the struct's class. `versions`,
    `nullable` and `tagged` are version ranges ("0+", "2-3", ...); `tag` makes the field a
    tagged field in `tagged` versions (all of `versions` when not given). `default` is the
    Python value of the field where a version lacks it or a tagged field is absent (a tagged
    field equal to it is not written). `decode` / `encode` convert between the wire value and
    the Python value (neither is applied to `default`). An `ignored` field is not an attribute:
    it is read and dropped, and written as `default`.
    """

    name: str
    type: Primitive | Array | Struct
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    tagged: str | None = None
    default: Any = NO_DEFAULT
    decode: Callable[[Any], Any] | None = None
    encode: Callable[[Any], Any] | None = None
    ignored: bool = False


@dataclass(frozen=True, slots=True, eq=False)
class Struct:
    """A struct (a message, or the element of an array of structs): its class and fields."""

    target: Callable[..., Any]
    fields: tuple[Field, ...]


# --- run-time helpers the generated code calls ---------------------------------------------------

_SMALL_ARRAYS = 16


def read_uvarint(data: bytes, pos: int) -> tuple[int, int]:
    """The unsigned varint at `pos` and the position after it (IndexError when cut short)."""
    value = 0
    shift = 0
    while True:
        byte = data[pos]  # IndexError when truncated
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise SchemaDecodeError("unsigned varint longer than 64 bits")


def write_uvarint(out: bytearray, value: int) -> None:
    """Appends `value` as an unsigned varint."""
    while value >= 0x80:
        out.append((value & 0x7F) | 0x80)
        value >>= 7
    out.append(value)


_UUID_NEW = object.__new__
_SET = object.__setattr__
_SAFE_UNKNOWN = SafeUUID.unknown


def _uuid(data: bytes) -> _UUID:
    # What UUID(bytes=data) builds, without its argument checks: three times faster.
    value = _UUID_NEW(_UUID)
    _SET(value, "int", int.from_bytes(data))
    _SET(value, "is_safe", _SAFE_UNKNOWN)
    return value


def _array_structs(code: str) -> tuple[struct.Struct, ...]:
    return tuple(struct.Struct(f">{count}{code}") for count in range(_SMALL_ARRAYS))


def _array_struct(code: str, count: int) -> struct.Struct:
    return struct.Struct(f">{count}{code}")


def _too_long(kind: str, length: int) -> ValueError:
    return ValueError(f"{kind} of {length} bytes is too long for its length field")


def _null_error(what: str) -> SchemaDecodeError:
    return SchemaDecodeError(f"null in the non-nullable {what}")


# --- the compiler --------------------------------------------------------------------------------


class _Compiler:
    """Generates the reader and writer of one struct tree at one version, as Python source."""

    def __init__(self, version: int, flexible: bool) -> None:
        self.version = version
        self.flexible = flexible
        self.namespace: dict[str, Any] = {
            "_read_uvarint": read_uvarint,
            "_write_uvarint": write_uvarint,
            "_uuid": _uuid,
            "_array_struct": _array_struct,
            "_too_long": _too_long,
            "_null_error": _null_error,
            "SchemaDecodeError": SchemaDecodeError,
        }
        self.lines: list[str] = []
        self.functions: dict[int, str] = {}
        self.counter = 0
        self.pending: list[tuple[Struct, str]] = []

    def name(self, hint: str) -> str:
        self.counter += 1
        return f"_{hint}{self.counter}"

    def constant(self, value: object, hint: str) -> str:
        name = self.name(hint)
        self.namespace[name] = value
        return name

    def function(self, schema: Struct) -> str:
        """The suffix of the `_read…` / `_write…` functions of `schema`, generated once."""
        key = id(schema)
        if key not in self.functions:
            suffix = f"{getattr(schema.target, '__name__', 'struct')}_{len(self.functions)}"
            self.functions[key] = suffix
            self.pending.append((schema, suffix))
        return self.functions[key]

    def compile(self, schema: Struct) -> tuple[Callable[..., Any], Callable[..., Any], str]:
        root = self.function(schema)
        while self.pending:
            struct_schema, suffix = self.pending.pop()
            self.reader(struct_schema, suffix)
            self.writer(struct_schema, suffix)
        source = "\n".join(self.lines) + "\n"
        exec(compile(source, f"<schema {root} v{self.version}>", "exec"), self.namespace)
        return self.namespace[f"_read{root}"], self.namespace[f"_write{root}"], source

    # -- which fields a version has -------------------------------------------------------------

    def present(self, schema: Struct) -> tuple[list[Field], list[Field], list[Field]]:
        """The struct's fields at this version: (untagged, tagged by ascending tag, absent)."""
        untagged: list[Field] = []
        tagged: list[Field] = []
        absent: list[Field] = []
        for field in schema.fields:
            if self.version not in Versions.parse(field.versions):
                absent.append(field)
            elif field.tag is not None and self.version in Versions.parse(
                field.tagged or field.versions
            ):
                if not self.flexible:
                    raise ValueError(f"tagged field {field.name} in a non-flexible version")
                tagged.append(field)
            else:
                untagged.append(field)
        for field in (*tagged, *absent):
            if field.default is NO_DEFAULT and not field.ignored:
                raise ValueError(f"field {field.name} needs a default (tagged or not always there)")
        tagged.sort(key=lambda field: field.tag or 0)
        return untagged, tagged, absent

    def is_nullable(self, field: Field) -> bool:
        return self.version in Versions.parse(field.nullable)

    @staticmethod
    def is_fixed(field: Field) -> bool:
        return isinstance(field.type, Primitive) and field.type.code != ""

    # -- reading ----------------------------------------------------------------------------------

    def reader(self, schema: Struct, suffix: str) -> None:
        untagged, tagged, absent = self.present(schema)
        lines = [f"def _read{suffix}(data, pos):"]
        variables: dict[str, str] = {}
        index = 0
        while index < len(untagged):
            field = untagged[index]
            if self.is_fixed(field):
                run = [field]
                while index + len(run) < len(untagged) and self.is_fixed(
                    untagged[index + len(run)]
                ):
                    run.append(untagged[index + len(run)])
                self.read_fixed_run(run, variables, lines)
                index += len(run)
                continue
            target = self.variable_for(field, variables)
            self.read_value(
                field.type, target, self.is_nullable(field), field.name, lines=lines, depth=1
            )
            self.convert(field, target, lines, 1)
            index += 1
        if self.flexible:
            self.read_tagged(tagged, variables, lines)
        for field in absent:
            if not field.ignored:
                variables[field.name] = self.constant(field.default, "default")
        lines.append(f"    return {self.construct(schema, variables)}, pos")
        self.lines.extend(lines)

    def variable_for(self, field: Field, variables: dict[str, str]) -> str:
        name = self.name("v")
        if not field.ignored:
            variables[field.name] = name
        return name

    def read_fixed_run(self, run: list[Field], variables: dict[str, str], lines: list[str]) -> None:
        codes = "".join(field.type.code for field in run if isinstance(field.type, Primitive))
        layout = struct.Struct(">" + codes)
        names = [self.variable_for(field, variables) for field in run]
        layout_name = self.constant(layout, "S")
        targets = ", ".join(names) + ("," if len(names) == 1 else "")
        lines.append(f"    {targets} = {layout_name}.unpack_from(data, pos)")
        lines.append(f"    pos += {layout.size}")
        for field, name in zip(run, names, strict=True):
            if field.type is UUID:
                lines.append(f"    {name} = _uuid({name})")
            self.convert(field, name, lines, 1)

    def convert(self, field: Field, target: str, lines: list[str], depth: int) -> None:
        if field.decode is not None and not field.ignored:
            converter = self.constant(field.decode, "decode")
            lines.append(f"{'    ' * depth}{target} = {converter}({target})")

    def read_length(self, kind: str, target: str, lines: list[str], depth: int) -> None:
        """`target` = the length of a string / bytes / array, -1 for null."""
        pad = "    " * depth
        if self.flexible:
            lines.append(f"{pad}{target} = data[pos]")
            lines.append(f"{pad}pos += 1")
            lines.append(f"{pad}if {target} > 127:")
            lines.append(f"{pad}    {target}, pos = _read_uvarint(data, pos - 1)")
            lines.append(f"{pad}{target} -= 1")
        else:
            layout = self.constant(struct.Struct(">h" if kind == "string" else ">i"), "L")
            lines.append(f"{pad}{target} = {layout}.unpack_from(data, pos)[0]")
            lines.append(f"{pad}pos += {2 if kind == 'string' else 4}")

    def read_value(
        self,
        kind: Primitive | Array | Struct,
        target: str,
        nullable: bool,
        what: str,
        *,
        lines: list[str],
        depth: int,
    ) -> None:
        pad = "    " * depth
        if isinstance(kind, Struct):
            lines.append(f"{pad}{target}, pos = _read{self.function(kind)}(data, pos)")
            return
        if isinstance(kind, Primitive) and kind.code:
            layout = self.constant(struct.Struct(">" + kind.code), "S")
            lines.append(f"{pad}{target} = {layout}.unpack_from(data, pos)[0]")
            lines.append(f"{pad}pos += {struct.calcsize('>' + kind.code)}")
            if kind is UUID:
                lines.append(f"{pad}{target} = _uuid({target})")
            return
        length = self.name("n")
        self.read_length(
            kind.name if isinstance(kind, Primitive) else "array", length, lines, depth
        )
        lines.append(f"{pad}if {length} < 0:")
        if nullable:
            lines.append(f"{pad}    if {length} != -1:")
            lines.append(f"{pad}        raise SchemaDecodeError('negative length in {what}')")
            lines.append(f"{pad}    {target} = None")
        else:
            lines.append(f"{pad}    raise _null_error({what!r})")
        lines.append(f"{pad}else:")
        pad += "    "
        if isinstance(kind, Primitive):
            end = self.name("end")
            lines.append(f"{pad}{end} = pos + {length}")
            lines.append(f"{pad}if {end} > len(data):")
            lines.append(f"{pad}    raise IndexError")
            if kind is STRING:
                lines.append(f"{pad}{target} = data[pos:{end}].decode()")
            else:
                lines.append(f"{pad}{target} = bytes(data[pos:{end}])")
            lines.append(f"{pad}pos = {end}")
            return
        element = kind.element
        if isinstance(element, Primitive) and element.code and element is not UUID:
            small = self.constant(_array_structs(element.code), "A")
            size = struct.calcsize(">" + element.code)
            lines.append(
                f"{pad}{target} = ({small}[{length}] if {length} < {_SMALL_ARRAYS} "
                f"else _array_struct({element.code!r}, {length})).unpack_from(data, pos)"
            )
            lines.append(f"{pad}pos += {size} * {length}")
            return
        items = self.name("items")
        item = self.name("item")
        lines.append(f"{pad}{items} = []")
        lines.append(f"{pad}for _ in range({length}):")
        self.read_value(element, item, False, f"{what} element", lines=lines, depth=depth + 2)
        lines.append(f"{pad}    {items}.append({item})")
        lines.append(f"{pad}{target} = tuple({items})")

    def read_tagged(self, tagged: list[Field], variables: dict[str, str], lines: list[str]) -> None:
        targets = []
        for field in tagged:
            target = self.variable_for(field, variables)
            targets.append(target)
            lines.append(f"    {target} = {self.constant(field.default, 'default')}")
        lines.append("    count = data[pos]")
        lines.append("    pos += 1")
        lines.append("    if count > 127:")
        lines.append("        count, pos = _read_uvarint(data, pos - 1)")
        lines.append("    for _ in range(count):")
        lines.append("        tag, pos = _read_uvarint(data, pos)")
        lines.append("        size, pos = _read_uvarint(data, pos)")
        lines.append("        stop = pos + size")
        lines.append("        if stop > len(data):")
        lines.append("            raise IndexError")
        keyword = "if"
        for field, target in zip(tagged, targets, strict=True):
            lines.append(f"        {keyword} tag == {field.tag}:")
            self.read_value(
                field.type, target, self.is_nullable(field), field.name, lines=lines, depth=3
            )
            self.convert(field, target, lines, 3)
            lines.append("            if pos != stop:")
            lines.append(
                f"                raise SchemaDecodeError('tagged field {field.name} "
                f"(tag {field.tag}) is ' + str(size) + ' bytes, not ' + str(size + pos - stop))"
            )
            keyword = "elif"
        if tagged:
            lines.append("        else:")
            lines.append("            pos = stop")
        else:
            lines.append("        pos = stop")

    def construct(self, schema: Struct, variables: dict[str, str]) -> str:
        target = self.constant(schema.target, "cls")
        if dataclasses.is_dataclass(schema.target):
            names = [f.name for f in dataclasses.fields(schema.target) if f.init]
            if set(names) == set(variables):
                return f"{target}({', '.join(variables[name] for name in names)})"
            unknown = set(variables) - set(names)
            if unknown:
                raise ValueError(f"{schema.target} has no fields {sorted(unknown)}")
        arguments = ", ".join(f"{name}={value}" for name, value in variables.items())
        return f"{target}({arguments})"

    # -- writing ----------------------------------------------------------------------------------

    def writer(self, schema: Struct, suffix: str) -> None:
        untagged, tagged, _ = self.present(schema)
        lines = [f"def _write{suffix}(obj, out):"]
        index = 0
        while index < len(untagged):
            field = untagged[index]
            if self.is_fixed(field):
                run = [field]
                while index + len(run) < len(untagged) and self.is_fixed(
                    untagged[index + len(run)]
                ):
                    run.append(untagged[index + len(run)])
                layout = struct.Struct(
                    ">" + "".join(f.type.code for f in run if isinstance(f.type, Primitive))
                )
                values = ", ".join(self.wire_value(f, uuid_bytes=True) for f in run)
                lines.append(f"    out += {self.constant(layout, 'S')}.pack({values})")
                index += len(run)
                continue
            value = self.name("w")
            lines.append(f"    {value} = {self.wire_value(field)}")
            self.write_value(
                field.type, value, self.is_nullable(field), "out", lines=lines, depth=1
            )
            index += 1
        if self.flexible:
            self.write_tagged(tagged, lines)
        self.lines.extend(lines)

    def wire_value(self, field: Field, uuid_bytes: bool = False) -> str:
        if field.ignored:
            expression = self.constant(field.default, "default")
        else:
            expression = f"obj.{field.name}"
            if field.encode is not None:
                expression = f"{self.constant(field.encode, 'encode')}({expression})"
        if uuid_bytes and field.type is UUID:
            expression += ".bytes"
        return expression

    def write_length(self, kind: str, value: str, out: str, lines: list[str], depth: int) -> None:
        """Writes `value`, a length (-1 for null), as the struct's format wants it."""
        pad = "    " * depth
        if value == "-1":  # null
            if self.flexible:
                lines.append(f"{pad}{out}.append(0)")
            else:
                null = bytes([0xFF] * (2 if kind == "string" else 4))
                lines.append(f"{pad}{out} += {null!r}")
            return
        if self.flexible:
            lines.append(f"{pad}if {value} < 127:")
            lines.append(f"{pad}    {out}.append({value} + 1)")
            lines.append(f"{pad}else:")
            lines.append(f"{pad}    _write_uvarint({out}, {value} + 1)")
        elif kind == "string":
            lines.append(f"{pad}if {value} > 32767:")
            lines.append(f"{pad}    raise _too_long('string', {value})")
            lines.append(f"{pad}{out} += {self.constant(struct.Struct('>h'), 'L')}.pack({value})")
        else:
            lines.append(f"{pad}{out} += {self.constant(struct.Struct('>i'), 'L')}.pack({value})")

    def write_value(
        self,
        kind: Primitive | Array | Struct,
        value: str,
        nullable: bool,
        out: str,
        *,
        lines: list[str],
        depth: int,
    ) -> None:
        pad = "    " * depth
        if isinstance(kind, Struct):
            lines.append(f"{pad}_write{self.function(kind)}({value}, {out})")
            return
        if isinstance(kind, Primitive) and kind.code:
            layout = self.constant(struct.Struct(">" + kind.code), "S")
            argument = f"{value}.bytes" if kind is UUID else value
            lines.append(f"{pad}{out} += {layout}.pack({argument})")
            return
        kind_name = kind.name if isinstance(kind, Primitive) else "array"
        if nullable:
            lines.append(f"{pad}if {value} is None:")
            self.write_length(kind_name, "-1", out, lines, depth + 1)
            lines.append(f"{pad}else:")
            pad += "    "
            depth += 1
        if isinstance(kind, Primitive):
            data = self.name("b")
            encoded = f"{value}.encode()" if kind is STRING else value
            lines.append(f"{pad}{data} = {encoded}")
            self.write_length(kind_name, f"len({data})", out, lines, depth)
            lines.append(f"{pad}{out} += {data}")
            return
        count = self.name("count")
        lines.append(f"{pad}{count} = len({value})")
        self.write_length(kind_name, count, out, lines, depth)
        element = kind.element
        if isinstance(element, Primitive) and element.code and element is not UUID:
            small = self.constant(_array_structs(element.code), "A")
            lines.append(
                f"{pad}{out} += ({small}[{count}] if {count} < {_SMALL_ARRAYS} "
                f"else _array_struct({element.code!r}, {count})).pack(*{value})"
            )
            return
        item = self.name("item")
        lines.append(f"{pad}for {item} in {value}:")
        self.write_value(element, item, False, out, lines=lines, depth=depth + 1)

    def write_tagged(self, tagged: list[Field], lines: list[str]) -> None:
        if not tagged:
            lines.append("    out.append(0)")
            return
        lines.append("    tagged = []")
        for field in tagged:
            value = self.name("w")
            default = self.constant(field.default, "default")
            if field.ignored:
                continue  # always its default: never written
            lines.append(f"    {value} = obj.{field.name}")
            lines.append(f"    if {value} != {default}:")
            if field.encode is not None:
                lines.append(f"        {value} = {self.constant(field.encode, 'encode')}({value})")
            buffer = self.name("buffer")
            lines.append(f"        {buffer} = bytearray()")
            self.write_value(
                field.type, value, self.is_nullable(field), buffer, lines=lines, depth=2
            )
            lines.append(f"        tagged.append(({field.tag}, {buffer}))")
        lines.append("    if not tagged:")
        lines.append("        out.append(0)")
        lines.append("        return")
        lines.append("    _write_uvarint(out, len(tagged))")
        lines.append("    for tag, buffer in tagged:")
        lines.append("        _write_uvarint(out, tag)")
        lines.append("        _write_uvarint(out, len(buffer))")
        lines.append("        out += buffer")


# --- the codec -----------------------------------------------------------------------------------

Reader = Callable[[bytes, int], tuple[Any, int]]
Writer = Callable[[Any, bytearray], None]


class Codec:
    """Reads and writes one message (`schema`) at any of its `versions`.

    `flexible` is the range of flexible versions, as in Kafka's specs ("0+", "4+", "none").
    Each version is compiled the first time it is used.
    """

    __slots__ = ("_compiled", "flexible", "name", "schema", "versions")

    def __init__(
        self, schema: Struct, versions: str, flexible: str, name: str | None = None
    ) -> None:
        self.schema = schema
        self.versions = Versions.parse(versions)
        self.flexible = Versions.parse(flexible)
        self.name = name or getattr(schema.target, "__name__", "message")
        self._compiled: dict[int, tuple[Reader, Writer, str]] = {}

    def supports(self, version: int) -> bool:
        return version in self.versions

    def _compile(self, version: int) -> tuple[Reader, Writer, str]:
        compiled = self._compiled.get(version)
        if compiled is None:
            if version not in self.versions:
                raise SchemaDecodeError(
                    f"unsupported version {version} of {self.name} (valid: {self.versions})"
                )
            compiled = _Compiler(version, version in self.flexible).compile(self.schema)
            self._compiled[version] = compiled
        return compiled

    def source(self, version: int) -> str:
        """The generated reader and writer of `version` (to debug the codec)."""
        return self._compile(version)[2]

    def reader(self, version: int) -> Reader:
        """The compiled reader of `version`: `(data, pos) -> (message, pos after it)`.

        It raises IndexError or struct.error on truncation, ValueError on bad values: `read`
        turns them into `SchemaDecodeError`.
        """
        return self._compile(version)[0]

    def writer(self, version: int) -> Writer:
        """The compiled writer of `version`: appends a message to a bytearray."""
        return self._compile(version)[1]

    def read(self, data: bytes, pos: int, version: int) -> tuple[Any, int]:
        """The message at `pos` in `data` and the position after it."""
        reader = self.reader(version)
        try:
            return reader(data, pos)
        except SchemaDecodeError:
            raise
        except (IndexError, struct.error) as error:
            raise SchemaDecodeError(f"{self.name} v{version} truncated") from error
        except (ValueError, TypeError) as error:
            raise SchemaDecodeError(f"bad {self.name} v{version}: {error}") from error

    def decode(self, data: bytes, version: int) -> Any:
        """The message that is the whole of `data`."""
        message, end = self.read(data, 0, version)
        if end != len(data):
            raise SchemaDecodeError(f"{len(data) - end} bytes left after {self.name}")
        return message

    def write(self, message: Any, version: int, out: bytearray) -> None:
        self.writer(version)(message, out)

    def encode(self, message: Any, version: int) -> bytes:
        out = bytearray()
        self.writer(version)(message, out)
        return bytes(out)

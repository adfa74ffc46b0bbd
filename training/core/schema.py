"""Strict data: dataclasses built from plain data (YAML, JSON) with every key and value checked, and errors that name
the key, the value and what is allowed (``ConfigError``, ``require``). ``training.core.config`` declares the training
config with it, and each algorithm's declaration its own section; a value in a message is ``quoted``, cut to
``QUOTE_LIMIT`` characters so that a hostile value never floods the terminal.
"""

from __future__ import annotations

import ast
import inspect
import math
import re
import types
import typing
from dataclasses import fields, is_dataclass
from functools import cache
from typing import Any


class ConfigError(ValueError):
    """A training config that cannot be used; the message names the key and the problem."""


QUOTE_LIMIT = 200
"""Characters of a value that an error message shows (a longer one is cut, with its length)."""


def quoted(value: Any, limit: int = QUOTE_LIMIT) -> str:
    """``repr(value)`` for an error message, cut to ``limit`` characters: a hostile value never floods the terminal."""
    return cut(repr(value), limit)


def cut(text: Any, limit: int = QUOTE_LIMIT) -> str:
    """``str(text)`` (a name, a nested error's message) cut to ``limit`` characters, with its full length."""
    text = str(text)
    return text if len(text) <= limit else f"{text[:limit]}…({len(text)} chars)"


MAX_LEARNING_RATE = 1.0
"""Largest Adam learning rate of any network or table (Adam moves each weight by about this much per step)."""


def require(where: str, key: str, value: Any, ok: bool, expected: str) -> None:
    """Unless ``ok``: ``ConfigError`` naming the section ``where``, the ``key``, its ``value`` and what is ``expected``
    (every config section's ``validate`` checks its values with it).
    """
    if not ok:
        raise ConfigError(f"{where}: {cut(key)}={quoted(value)} is not allowed; expected {expected}")


def require_learning_rate(where: str, key: str, value: float, alternative: str = "") -> None:
    """``require`` an Adam learning rate above 0 and at most ``MAX_LEARNING_RATE`` (or ``alternative``)."""
    require(
        where,
        key,
        value,
        0 < value <= MAX_LEARNING_RATE,
        f"a number > 0 and at most MAX_LEARNING_RATE={MAX_LEARNING_RATE:g}{alternative}",
    )


def yaml_load(text: str) -> Any:
    """``yaml.safe_load`` that refuses aliases (``*name``): a few hundred bytes of nested aliases expand to gigabytes
    (a "billion laughs" document), and a config has no use for them.
    """
    import yaml

    try:
        return yaml.load(text, Loader=_no_alias_loader())
    except (ValueError, RecursionError) as error:  # an integer of 5000 digits, lists nested 10000 deep
        raise yaml.YAMLError(cut(error)) from None


@cache
def _no_alias_loader() -> type:
    import yaml

    class NoAliasLoader(yaml.SafeLoader):
        def compose_node(self, parent, index):
            if self.check_event(yaml.AliasEvent):
                event = self.peek_event()
                raise yaml.composer.ComposerError(
                    None,
                    None,
                    f"alias *{event.anchor} is not allowed in a config; expected the value written out",
                    event.start_mark,
                )
            return super().compose_node(parent, index)

    return NoAliasLoader


@cache
def _hints_cached(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def type_hints(cls: type) -> dict[str, Any]:
    """The resolved annotations of a dataclass's fields (cached)."""
    return _hints_cached(cls)


def build_dataclass(cls: type, data: Any, where: str, prefix: str) -> Any:
    """``cls`` from a mapping of plain data, every key and value checked against its fields (``ConfigError`` names the
    file ``where``, the dotted key under ``prefix`` and what is allowed).
    """
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: {prefix or 'the config'} must be a mapping of keys, got {quoted(data)}")
    hints = type_hints(cls)
    allowed = [f.name for f in fields(cls)]
    unknown = [k for k in data if k not in allowed]
    if unknown:
        section = f" in section {prefix!r}" if prefix else ""
        raise ConfigError(
            f"{where}: unknown key {quoted(dotted_key(prefix, unknown[0]))}{section}; allowed keys: {allowed}"
        )
    values = {}
    for name, raw in data.items():
        values[name] = _convert(hints[name], raw, where, dotted_key(prefix, name))
    return cls(**values)


def _convert(kind: Any, value: Any, where: str, key: str) -> Any:
    """Check ``value`` against the annotation ``kind``; ints are accepted where floats are expected."""
    if isinstance(kind, type) and is_dataclass(kind):
        return build_dataclass(kind, value, where, key)
    origin = typing.get_origin(kind)
    args = typing.get_args(kind)
    if origin in (typing.Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        inner = [a for a in args if a is not type(None)]
        return _convert(inner[0], value, where, key)
    if kind is Any:
        return value
    if origin is list:
        if not isinstance(value, list):
            raise ConfigError(
                f"{where}: {key}={quoted(value)} is not allowed; expected a list of {_type_name(args[0])}"
            )
        return [_convert(args[0], v, where, f"{key}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        if not isinstance(value, dict):
            raise ConfigError(
                f"{where}: {key}={quoted(value)} is not allowed; expected a mapping of {_type_name(args[0])} to "
                f"{_type_name(args[1])}"
            )
        return {
            _convert(args[0], k, where, key): _convert(args[1], v, where, dotted_key(key, str(k)))
            for k, v in value.items()
        }
    if kind is bool:
        if not isinstance(value, bool):
            raise ConfigError(f"{where}: {key}={quoted(value)} is not allowed; expected true or false")
        return value
    if kind is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{where}: {key}={quoted(value)} is not allowed; expected an integer")
        return value
    if kind is float:
        # YAML 1.1 reads 3e-4 (no dot) as a string
        text = isinstance(value, str) and _FLOAT_TEXT.fullmatch(value.strip()) is not None
        if not text and (isinstance(value, bool) or not isinstance(value, (int, float))):
            raise ConfigError(f"{where}: {key}={quoted(value)} is not allowed; expected a number")
        try:
            number = float(value)
        except OverflowError:  # an integer beyond the float range
            number = math.inf
        if not math.isfinite(number):
            raise ConfigError(f"{where}: {key}={quoted(value)} is not allowed; expected a finite number")
        return number
    if kind is str:
        if not isinstance(value, str):
            raise ConfigError(f"{where}: {key}={quoted(value)} is not allowed; expected a string")
        return value
    raise TypeError(f"unsupported config annotation {kind!r} for {key}")


_FLOAT_TEXT = re.compile(r"[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?")


def dotted_key(prefix: str, name: str) -> str:
    """``prefix.name``, or ``name`` at the top level."""
    return f"{prefix}.{name}" if prefix else name


def _type_name(kind: Any) -> str:
    return getattr(kind, "__name__", str(kind))


def field_docs(cls: type) -> dict[str, str]:
    """The docstrings written under each field of a dataclass (read from its source)."""
    try:
        tree = ast.parse(inspect.getsource(cls))
    except (OSError, TypeError):
        return {}
    body = tree.body[0].body
    docs = {}
    for node, after in zip(body, body[1:]):
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            if (
                isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[node.target.id] = " ".join(after.value.value.split())
    return docs

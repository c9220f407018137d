"""Option values as their declaration types them: a strategy's `Options` dataclass, a `py:`
factory's type hints.

Values arrive as text (`--model-opt dim=8`, `--param k=2`), as whatever YAML or lm-eval's
`--model_args` parsed, or as Python values. `coerce` turns each into the declared int, float,
bool, str, None or `Literal` choice, or raises one `ValueError` line naming the option, what
was given and what fits. A type outside these (a tensor, a list, a class) passes unchanged:
the code that declared it checks it.
"""

from __future__ import annotations

import ast
import math
import types
import typing
from typing import Any, Literal, Union

KNOWN = ("int", "float", "bool", "str", "None")


def option_error(name: str, value: Any, valid: str) -> ValueError:
    return ValueError(f"option {name}={value!r} is invalid: valid range is {valid}")


def _split_top(text: str, sep: str) -> list[str]:
    """`text` split at `sep` outside brackets and quotes."""
    parts, depth, quote, start = [], 0, "", 0
    for i, ch in enumerate(text):
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "[(":
            depth += 1
        elif ch in "])":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append(text[start:i].strip())
            start = i + 1
    return parts + [text[start:].strip()]


def kinds(annotation: Any) -> tuple[list[str], list[Any]]:
    """(type names, Literal choices) of an annotation, given as a type or as its source text
    (`from __future__ import annotations` keeps dataclass fields as text)."""
    if isinstance(annotation, str):
        text = annotation.strip()
        for head in ("Optional[", "typing.Optional["):
            if text.startswith(head) and text.endswith("]"):
                names, choices = kinds(text[len(head):-1])
                return names + ["None"], choices
        names, choices = [], []
        for part in _split_top(text, "|"):
            head = part.split("[", 1)[0]
            if head in ("Literal", "typing.Literal") and part.endswith("]"):
                try:
                    choices += list(ast.literal_eval(f"({part[len(head) + 1:-1]},)"))
                    continue
                except (ValueError, SyntaxError):
                    pass
            names.append(part)
        return names, choices
    if annotation is None or annotation is type(None):
        return ["None"], []
    origin = typing.get_origin(annotation)
    if origin is Literal:
        return [], list(typing.get_args(annotation))
    if origin in (Union, types.UnionType):
        names, choices = [], []
        for arg in typing.get_args(annotation):
            n, c = kinds(arg)
            names, choices = names + n, choices + c
        return names, choices
    return [getattr(annotation, "__name__", str(annotation))], []


def describe(annotation: Any) -> str:
    """What fits an annotation, in words: `an integer`, `one of 'a', 'b'`, `a number or none`."""
    names, choices = kinds(annotation)
    words = {"int": "an integer", "float": "a number", "bool": "true or false", "str": "text", "None": "none"}
    parts = [words.get(n, n) for n in names]
    if choices:
        parts.insert(0, "one of " + ", ".join(repr(c) for c in choices))
    return " or ".join(parts)


def _choice(value: Any, choices: list[Any]) -> tuple[bool, Any]:
    for choice in choices:
        if type(value) is type(choice) and value == choice:
            return True, choice
    text = str(value).strip()
    for choice in choices:  # "2" for Literal[2], True for Literal["true"], "True" for Literal[True]
        if text == str(choice) or (isinstance(choice, bool) and text.lower() == str(choice).lower()):
            return True, choice
    return False, None


def coerce(name: str, annotation: Any, value: Any) -> Any:
    """`value` as the annotation's type; `ValueError` (one line, naming the option) when it does not fit."""
    names, choices = kinds(annotation)
    if choices:
        found, choice = _choice(value, choices)
        if found:
            return choice
        if not names:
            raise option_error(name, value, describe(annotation))
    elif not any(n in KNOWN for n in names):
        return value  # a type this layer does not know: its own code checks it
    if value is None:
        if "None" in names:
            return None
        raise option_error(name, value, describe(annotation))
    if isinstance(value, str) and "str" not in names:
        text = value.strip().lower()
        if text in ("none", "null") and "None" in names:
            return None
        if "bool" in names and text in ("true", "false", "1", "0", "yes", "no"):
            return text in ("true", "1", "yes")
        try:
            value = float(value) if any(k in names for k in ("float", "int")) else value
        except ValueError:
            raise option_error(name, value, describe(annotation)) from None
    if "bool" in names:
        if isinstance(value, bool):
            return value
        if isinstance(value, (int, float)) and value in (0, 1):
            return bool(value)
        raise option_error(name, value, "true or false")
    if isinstance(value, bool) and "str" not in names:
        raise option_error(name, value, describe(annotation))
    if "int" in names and isinstance(value, (int, float)) and not isinstance(value, bool):
        if float(value).is_integer():
            return int(value)
        if "float" not in names:
            raise option_error(name, value, "an integer")
    if "float" in names and isinstance(value, (int, float)) and not isinstance(value, bool):
        if not math.isfinite(float(value)):
            raise option_error(name, value, "a finite number")
        return float(value)
    if "str" in names:
        if isinstance(value, str):
            return value
        if isinstance(value, bool):  # text that the command line read as a boolean
            return str(value).lower()
        if isinstance(value, (int, float)):  # text that the command line read as a number
            return str(value)
    raise option_error(name, value, describe(annotation))

"""Scorers of the structured tasks (`structured/*`): JSON records and tool calls.

Both readings look at the same text: the **last top-level JSON value** of the output (an
object `{...}` or array `[...]` at bracket depth 0; prose before or after it and a
```json fence around it are passed over), as the list rule reads the last `[...]`.

- ``fields`` (the headline, partial credit): that value read leniently (repeated keys kept,
  trailing or missing commas, single quotes, bare keys, NaN and an object left open at the
  end of the output all read; there it is closed, a pair cut before its value dropped), then the fraction of the target's fields that occur exactly
  once with the right value, and, where the task fixes the order (`json_fields`, a tool
  call's arguments), at the right place: the i-th pair of the object. Every key that is
  not a target key costs one field, as a wrong one does; a repeated target key is not
  present once, so it earns nothing. Floored at 0. A tool call has n + 1 fields: the
  function name and the n arguments (extra top-level keys cost one each too).
- ``strict``: the value parses as JSON (Python's `json` with a repeated key made a parse
  failure and NaN / Infinity refused; trailing commas and single quotes are not JSON) and
  equals the target, in order where the task fixes it (a tool call's two top-level keys may
  come in either order).

Values compare as JSON values: a string only with a string, a number only with a number
(42 and 42.0 are the same number; `true` is not 1), exactly, with no trimming.

Bounded on any input: only the output's last `MAX_CHARS` characters are read, one linear scan
finds the value, and a value nested deeper than `MAX_DEPTH` scores 0 without being parsed.
There is no reference metric for this family, so ``--scoring paper`` scores it as the
default does.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from typing import TYPE_CHECKING, Any

from parallelbench.scoring.base import Scores, register_scorer
from parallelbench.tasks._records import target_fields

if TYPE_CHECKING:
    from parallelbench.tasks.base import Sample

MAX_CHARS = 100_000  # a real answer is a few hundred characters
MAX_DEPTH = 32  # a record nests 1 deep, a tool call 2


class Obj(list):
    """A JSON object as its (key, value) pairs, in order, repeats kept."""


# ---- extraction ---------------------------------------------------------------------------

_STRUCTURAL = re.compile(r'[{}\[\]"\\]')


def last_value(text: str) -> str | None:
    """Source of the last top-level `{...}` / `[...]` of the text (an unclosed one runs to the
    end), or None when there is none or it nests deeper than `MAX_DEPTH`."""
    if not isinstance(text, str):
        return None
    text = text[-MAX_CHARS:]
    depth, in_string, skip = 0, False, -1
    start, deep = -1, False  # the value being read
    last: tuple[int, int, bool] | None = None  # the last closed one: start, end, too deep
    for m in _STRUCTURAL.finditer(text):
        i, c = m.start(), m.group()
        if i == skip:  # the character after a backslash in a string
            continue
        if depth == 0:
            if c in "{[":  # quotes in prose between values are not strings
                start, depth, deep, in_string = i, 1, False, False
        elif in_string:
            if c == "\\":
                skip = i + 1
            elif c == '"':
                in_string = False
        elif c == '"':
            in_string = True
        elif c in "{[":
            depth += 1
            deep = deep or depth > MAX_DEPTH
        elif c in "}]":
            depth -= 1
            if depth == 0:
                last, start = (start, i + 1, deep), -1
    if start >= 0:  # unclosed: it runs to the end of the output
        return None if deep else text[start:]
    if last is None or last[2]:
        return None
    return text[last[0] : last[1]]


# ---- strict reading: JSON itself ----------------------------------------------------------


class _NotJson(ValueError):
    pass


def _pairs_no_repeats(pairs: list[tuple[str, Any]]) -> Obj:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        raise _NotJson("repeated key")
    return Obj(pairs)


def _no_constants(name: str):
    raise _NotJson(f"{name} is not JSON")


def parse_strict(source: str | None) -> tuple[bool, Any]:
    """(parsed, value): JSON exactly, objects as `Obj`; a repeated key or NaN is a failure."""
    if source is None:
        return False, None
    try:
        return True, json.loads(source, object_pairs_hook=_pairs_no_repeats, parse_constant=_no_constants)
    except (ValueError, RecursionError, TypeError):
        return False, None


# ---- lenient reading ---------------------------------------------------------------------

_TOKEN = re.compile(
    r"""(?P<ws>\s+)
    |(?P<dq>"(?:[^"\\]|\\.)*")
    |(?P<sq>'(?:[^'\\]|\\.)*')
    |(?P<open>["'](?:[^\\]|\\.)*\\?)
    |(?P<num>[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)
    |(?P<const>[-+]?(?:NaN|Infinity)\b)
    |(?P<word>[A-Za-z_$][\w$]*)
    |(?P<punct>[{}\[\],:])
    |(?P<other>.)""",
    re.VERBOSE | re.DOTALL,
)
_WORDS = {"true": True, "false": False, "null": None}
_MISSING = object()
_INTEGER = re.compile(r"[-+]?\d+")


def _string(token: str, closed: bool) -> str:
    """A quoted token's text: JSON escapes decoded where they are JSON, else kept as written."""
    body = token[1:-1] if closed else token[1:]
    if token[0] == '"':
        try:
            return json.loads('"' + body + '"')
        except ValueError:
            pass
    return re.sub(r"\\(.)", r"\1", body, flags=re.DOTALL)


def _scalar(kind: str, token: str) -> Any:
    """The value of a scalar token, or _MISSING when the token is not a value."""
    if kind in ("dq", "sq"):
        return _string(token, closed=True)
    if kind == "open":  # a string left open at the end of the output
        return _string(token, closed=False)
    if kind == "num":
        if _INTEGER.fullmatch(token):
            try:
                return int(token)
            except ValueError:  # more digits than Python converts
                return float(token)
        return float(token)
    if kind == "const":
        return float(token)
    if kind == "word":
        return _WORDS.get(token, _MISSING)
    return _MISSING


def parse_lenient(source: str | None) -> tuple[bool, Any]:
    """(parsed, value) of a JSON-like text, objects as `Obj` with repeats kept; see the module
    docstring for what is forgiven. Anything else (a stray character, a value where a key
    belongs) fails. Iterative, so depth costs no recursion."""
    if source is None:
        return False, None
    stack: list[list] = []  # frames: [container, pending key or _MISSING, expecting]
    result = _MISSING
    for m in _TOKEN.finditer(source):
        kind, token = m.lastgroup, m.group()
        if kind == "ws":
            continue
        if result is not _MISSING:
            return False, None  # text after the value (cannot happen for an extracted span)
        frame = stack[-1] if stack else None
        if kind == "punct" and token in "{[":
            value: Any = Obj() if token == "{" else []
            if frame is not None and not _place(frame, value):
                return False, None
            stack.append([value, _MISSING, "key" if token == "{" else "value"])
            continue
        if kind == "punct" and token in "}]":
            if frame is None or (token == "}") != isinstance(frame[0], Obj) or frame[2] == "colon":
                return False, None
            if frame[2] == "after_colon":
                return False, None  # a key with no value
            done = stack.pop()[0]
            if not stack:
                result = done
            continue
        if frame is None:
            return False, None
        if kind == "punct" and token == ",":
            if frame[2] in ("comma", "key", "value"):  # trailing or doubled commas are forgiven
                frame[2] = "key" if isinstance(frame[0], Obj) else "value"
                continue
            return False, None
        if kind == "punct" and token == ":":
            if frame[2] != "colon":
                return False, None
            frame[2] = "after_colon"
            continue
        if isinstance(frame[0], Obj) and frame[2] in ("key", "comma") and kind in ("dq", "sq", "word", "num", "open"):
            # a key (a missing comma before it is forgiven); bare words and numbers too; a key
            # left open runs to the end of the output, where its pair is dropped (below)
            frame[1], frame[2] = token if kind in ("word", "num") else _string(token, closed=kind != "open"), "colon"
            continue
        value = _scalar(kind, token)
        if value is _MISSING or not _place(frame, value):
            return False, None
    if result is not _MISSING:
        return True, result
    if stack:  # unclosed at the end of the output: closed there, a pair cut before its value dropped
        return True, stack[0][0]
    return False, None


def _place(frame: list, value: Any) -> bool:
    """Put a value into the frame's container, if a value is what it expects."""
    container, key, expecting = frame
    if isinstance(container, Obj):
        if expecting != "after_colon":
            return False
        container.append((key, value))
        frame[1], frame[2] = _MISSING, "comma"
        return True
    if expecting not in ("value", "comma"):  # a missing comma between items is forgiven
        return False
    container.append(value)
    frame[2] = "comma"
    return True


# ---- comparison ---------------------------------------------------------------------------


def same_value(out: Any, want: Any) -> bool:
    """Equal as JSON values: a string only with a string, a number only with a number."""
    if isinstance(want, bool) or isinstance(out, bool):
        return isinstance(out, bool) and isinstance(want, bool) and out == want
    if want is None or out is None:
        return want is None and out is None
    if isinstance(want, (int, float)):
        if isinstance(out, int):
            return out == want
        return isinstance(out, float) and math.isfinite(out) and out == want
    if isinstance(want, str):
        return isinstance(out, str) and out == want
    if isinstance(want, dict):
        return isinstance(out, Obj) and len(out) == len(want) and len({k for k, _ in out}) == len(out) and all(
            k in want and same_value(v, want[k]) for k, v in out)
    if isinstance(want, (list, tuple)):
        return isinstance(out, list) and not isinstance(out, Obj) and len(out) == len(want) and all(
            same_value(a, b) for a, b in zip(out, want))
    return False


def field_credit(obj: Any, fields: list[tuple[str, Any]], ordered: bool) -> tuple[int, int]:
    """(fields right, extra keys) of an object against the target fields (see module docstring)."""
    if not isinstance(obj, Obj):
        return 0, 0
    counts = Counter(k for k, _ in obj)
    position = {k: j for j, (k, _) in enumerate(obj)}
    right = 0
    for i, (key, want) in enumerate(fields):
        if counts[key] == 1 and same_value(obj[position[key]][1], want) and (not ordered or position[key] == i):
            right += 1
    wanted = {k for k, _ in fields}
    extra = sum(c for k, c in counts.items() if k not in wanted)
    return right, extra


def equals_fields(obj: Any, fields: list[tuple[str, Any]], ordered: bool) -> bool:
    """The strictly parsed object holds exactly the target fields (in order when `ordered`)."""
    if not isinstance(obj, Obj) or len(obj) != len(fields):
        return False
    if ordered:
        return all(k == key and same_value(v, want) for (k, v), (key, want) in zip(obj, fields))
    got = dict(obj)
    return all(key in got and same_value(got[key], want) for key, want in fields)


# ---- scorers ------------------------------------------------------------------------------


def _fields(sample: "Sample") -> list[tuple[str, Any]]:
    return target_fields(sample.data if isinstance(sample.data, dict) else {})


def _record_scores(sample: "Sample", output: str, ordered: bool) -> Scores:
    fields = _fields(sample)
    source = last_value(output)
    ok, value = parse_lenient(source)
    right, extra = field_credit(value, fields, ordered) if ok else (0, 0)
    headline = max(0, right - extra) / len(fields) if fields else 0.0
    ok, value = parse_strict(source)
    strict = float(ok and bool(fields) and equals_fields(value, fields, ordered))
    return Scores(score=headline, components={"fields": headline, "strict": strict})


@register_scorer("json_fields")
def score_json_fields(sample: "Sample", output: str) -> Scores:
    """One JSON object with ``data["fields"]`` ([key, value] pairs), keys in the order given."""
    return _record_scores(sample, output, ordered=True)


@register_scorer("json_any_order")
def score_json_any_order(sample: "Sample", output: str) -> Scores:
    """One JSON object with ``data["fields"]``, keys in any order."""
    return _record_scores(sample, output, ordered=False)


def _tool_parts(obj: Any) -> tuple[Counter, dict]:
    counts = Counter(k for k, _ in obj)
    return counts, {k: v for k, v in obj}


@register_scorer("tool_call")
def score_tool_call(sample: "Sample", output: str) -> Scores:
    """``{"name": data["name"], "arguments": {...data["arguments"] in order}}``; n + 1 fields."""
    data = sample.data if isinstance(sample.data, dict) else {}
    name, args = data.get("name"), _fields(sample)
    source = last_value(output)
    ok, value = parse_lenient(source)
    headline = 0.0
    if ok and isinstance(value, Obj):
        counts, top = _tool_parts(value)
        right = int(counts["name"] == 1 and same_value(top["name"], name))
        extra = sum(c for k, c in counts.items() if k not in ("name", "arguments"))
        if counts["arguments"] == 1:
            got, more = field_credit(top["arguments"], args, ordered=True)
            right, extra = right + got, extra + more
        headline = max(0, right - extra) / (len(args) + 1)
    ok, value = parse_strict(source)
    strict = 0.0
    if ok and isinstance(value, Obj) and sorted(k for k, _ in value) == ["arguments", "name"]:
        top = dict(value)
        strict = float(same_value(top["name"], name) and bool(args) and equals_fields(top["arguments"], args, ordered=True))
    return Scores(score=headline, components={"fields": headline, "strict": strict})

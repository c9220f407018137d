"""Option values typed by their declarations say what fits in words, not as Python type names
(`option ratio='abc' is invalid: valid range is a number`, not `a value of type float`)."""

from typing import Literal, Optional

import pytest

from parallelbench.typed_options import coerce


@pytest.mark.parametrize(("annotation", "value", "words"), [
    (float, "abc", "a number"),
    ("float", "abc", "a number"),
    (Optional[int], "x", "an integer or none"),
    ("int | None", "x", "an integer or none"),
    (int, None, "an integer"),
    (Literal["a", "b"], "c", "one of 'a', 'b'"),
])
def test_errors_say_what_fits_in_words(annotation, value, words):
    with pytest.raises(ValueError) as err:
        coerce("opt", annotation, value)
    assert str(err.value) == f"option opt={value!r} is invalid: valid range is {words}"
    assert "type" not in str(err.value)


def test_values_that_fit_are_typed():
    assert coerce("k", int, "2") == 2 and coerce("t", float, "0.5") == 0.5 and coerce("b", bool, "yes") is True
    assert coerce("o", Optional[int], "none") is None and coerce("m", Literal["a", "b"], "b") == "b"

"""Failure browser: pairing one-by-one successes with parallel failures, and token colouring."""

import json

import pandas as pd

from parallelbench.analysis.failures import failures_html, find_failures, tokens_html
from parallelbench.analysis.synthetic import result_row


def _row(k, sample, score, texts=("A", "B", "C", "D"), order=None, task="t"):
    n = len(texts)
    order = order if order is not None else [i // k for i in range(n)]
    return result_row(
        "random", {"k": k}, task=task, sample_id=sample, score=score, num_tokens=n, nfe=max(order) + 1,
        order=json.dumps(order), token_texts=json.dumps(list(texts)), output="".join(texts),
    )


def _frame():
    return pd.DataFrame(
        [
            _row(1, "s1", 1.0), _row(2, "s1", 0.0, texts=("A", "C", "B", "D")), _row(4, "s1", 0.0),  # pair at k=2
            _row(1, "s2", 0.0), _row(2, "s2", 0.0),  # one-by-one already wrong: no pair
            _row(1, "s3", 1.0), _row(2, "s3", 1.0),  # parallel right too: no pair
            _row(1, "s4", 1.0), _row(4, "s4", 0.0),  # breaks only at k=4: listed after s1
            _row(1, "u1", 1.0, task="u"), _row(2, "u1", 1.0, task="u"),
        ]
    )


def test_pairs_are_serial_success_against_mildest_parallel_failure():
    failures = find_failures(_frame())
    assert list(failures) == ["t"]
    pairs = failures["t"]
    assert [p.sample_id for p in pairs] == ["s1", "s4"]
    first = pairs[0]
    assert first.serial.tps == 1.0 and first.serial.score == 1.0
    assert first.parallel.tps == 2.0 and first.parallel.config == "random[k=2]"
    assert first.parallel.tokens == [("A", 0), ("C", 0), ("B", 1), ("D", 1)]
    assert first.parallel.steps == 2 and first.serial.steps == 4
    assert len(find_failures(_frame(), per_task=1)["t"]) == 1


def test_tokens_are_coloured_by_step_with_a_legend():
    decode = find_failures(_frame())["t"][0].parallel
    html = tokens_html(decode)
    assert html.count('title="forward call 1 of 2"') == 2 and html.count('title="forward call 2 of 2"') == 2
    assert "linear-gradient" in html and "forward call 2 (last)" in html
    page = failures_html(find_failures(_frame()))
    assert "one-by-one (correct)" in page and "parallel (wrong)" in page and "s4" in page


def test_prefilled_tokens_trailing_padding_and_escaping():
    row = _row(2, "x", 0.0, texts=("<b>", "ok", "<eos>", "<eos>", "<eos>"), order=[-1, 0, 0, 1, 1])
    from parallelbench.analysis.failures import _decode

    html = tokens_html(_decode(pd.Series(row)))
    assert "&lt;b&gt;" in html and "<b>" not in html.replace("<b>step", "")
    assert 'title="pre-filled"' in html
    assert html.count("&lt;eos&gt;") == 1 and "×3" in html


def test_line_breaks_between_grid_rows_are_visible_and_coloured():
    from parallelbench.analysis.failures import _decode

    row = _row(2, "x", 0.0, texts=("1342", "\n", "2431"), order=[0, 1, 0])
    html = tokens_html(_decode(pd.Series(row)))
    assert 'title="forward call 2 of 2">\u21b5\n</span>' in html  # the row break's own span, with its step


def test_no_pairs_without_serial_or_parallel_runs():
    assert find_failures(pd.DataFrame()) == {}
    only_serial = pd.DataFrame([_row(1, "s1", 1.0)])
    assert find_failures(only_serial) == {}


def test_step_count_colour_bar_and_tokens_per_step_are_one_quantity():
    """A decode of 32 forward calls whose shown tokens were committed in 13 of them, the last
    at call 31 (order 30): the card says 32 calls, the bar runs to call 32, tps = tokens / 32."""
    import re

    from parallelbench.analysis.failures import _decode, failures_html

    order = [i * 30 // 12 for i in range(13)]  # 13 distinct steps, 0 .. 30
    texts = [f"w{i}" for i in range(13)]
    serial = _row(1, "s", 1.0, texts=texts, order=list(range(13)))
    parallel = result_row(
        "random", {"k": 2}, task="t", sample_id="s", score=0.0, num_tokens=64, nfe=32, tps=64 / 32,
        order=json.dumps(order), token_texts=json.dumps(texts), output="".join(texts),
    )
    decode = _decode(pd.Series(parallel))
    assert decode.steps == 32 and decode.committing_steps == 13
    page = failures_html(find_failures(pd.DataFrame([serial, parallel])))
    card = page[page.index("parallel (wrong)"):]
    meta = re.search(r"([0-9.]+) tokens/step = (\d+) tokens / (\d+) forward calls", card)
    assert meta is not None
    tps, tokens, calls = float(meta.group(1)), int(meta.group(2)), int(meta.group(3))
    assert calls == 32 and abs(tps - tokens / calls) < 0.005
    assert "(13 committed a shown token)" in card
    assert "forward call 32 (last)" in card and 'title="forward call 31 of 32"' in card
    # the bar's last colour is the colour of call 32, so the token of call 31 is one shade before it
    assert "forward call 30 (last)" not in card and " steps<" not in card

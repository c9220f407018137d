"""The runner-level ideal model (spec "ideal") on real benchmark samples."""

import pytest

from parallelbench.decoding import build_strategy
from parallelbench.models.ideal.bench import NoAnswerSetError
from parallelbench.models.ideal.tokenizer import AnswerTokenizer, split_words
from parallelbench.models.registry import load_model
from parallelbench.tasks import get_task, valid_answers


def test_word_pieces_round_trip_and_split_names():
    text = '["Susan Fox", "Philip Gray"]'
    pieces = split_words(text)
    assert "".join(pieces) == text
    assert "Susan" in pieces and " Fox" in pieces and " Gray" in pieces
    tok = AnswerTokenizer([text])
    ids = tok.encode(text)
    assert tok.decode(ids + [tok.eos_id, ids[0]]) == text
    assert tok.token_texts(ids)[2:4] == ["Susan", " Fox"]
    assert "".join(split_words("H,4,A,C\n4,C,H,A")) == "H,4,A,C\n4,C,H,A"
    assert split_words("1342\n2431") == ["1342", "\n2431"]  # a Sudoku row is one piece, its line break in front


def test_loader_registered_and_validates_options():
    model = load_model("ideal")
    assert model.kind == "ideal" and model.name == "ideal"
    assert "torch" in model.versions()
    with pytest.raises(ValueError, match="unknown ideal model option"):
        load_model("ideal", temperature=1)


@pytest.mark.parametrize("task_id", ["waiting_line/shuffle", "waiting_line/copy", "synthetic/replace_random", "puzzle/latin_square"])
def test_one_token_per_step_is_always_right(task_id):
    samples = get_task(task_id).samples(3)
    model = load_model("ideal")
    gens = model.generate(samples, build_strategy("confidence-topk", k=1), max_new_tokens=32, seed=0)
    assert len(gens) == len(samples)
    for g, s in zip(gens, samples):
        assert g.text in set(valid_answers(s)), (task_id, g.text)
        assert g.nfe == g.num_tokens == sum(g.tokens_per_step) == max(32, len(g.order))  # the whole canvas
        assert len(g.order) == len(g.token_texts) and "".join(g.token_texts) == g.text
        assert len(set(g.order)) == len(g.order) and all(0 <= o < g.nfe for o in g.order)  # one token per step


@pytest.mark.parametrize("k", [1, 2, 4, 8])
def test_tokens_per_step_means_the_same_as_for_the_tiny_model(k):
    """Issue 25: positions committed on the task's canvas per model call, for every model kind (the
    ideal model used to decode only the answer region: k = 4 gave 3.8 where tiny gave 4.0)."""
    task = get_task("waiting_line/copy")
    samples = task.samples(4)
    for spec in ("ideal", "tiny"):
        gens = load_model(spec).generate(samples, build_strategy("confidence-topk", k=k),
                                         max_new_tokens=task.max_new_tokens, seed=0)
        assert [g.num_tokens / g.nfe for g in gens] == [float(k)] * len(samples), spec
        assert all(g.num_tokens == task.max_new_tokens for g in gens), spec
    adaptive = load_model("ideal").generate(samples, build_strategy("confidence-threshold", threshold=0.9),
                                            max_new_tokens=task.max_new_tokens, seed=0)
    assert all(g.num_tokens == task.max_new_tokens and g.text == s.answer for g, s in zip(adaptive, samples))


def test_parallel_decoding_breaks_shuffle_but_not_copy():
    model = load_model("ideal")
    strategy = build_strategy("random", k=16)  # whole answer in one step
    shuffle = get_task("waiting_line/shuffle").samples(12)
    wrong = sum(g.text not in set(valid_answers(s)) for g, s in zip(model.generate(shuffle, strategy, max_new_tokens=32), shuffle))
    assert wrong > 0  # names are torn apart or repeated
    copy = get_task("waiting_line/copy").samples(4)
    assert all(g.text == s.answer for g, s in zip(model.generate(copy, strategy, max_new_tokens=32), copy))


def test_text_writing_is_a_clear_error():
    sample = get_task("text_writing/summarization").samples(1)
    with pytest.raises(NoAnswerSetError, match="text_writing/summarization.*not Text Writing"):
        load_model("ideal").generate(sample, build_strategy("random", k=1), max_new_tokens=32)
    assert not load_model("ideal").supports(sample[0])


def test_too_many_answers_names_the_count_not_text_writing():
    """waiting_line_n15/shuffle is a Waiting Line task: the message must say its 15! answers are too many."""
    model = load_model("ideal")
    sample = get_task("waiting_line_n15/shuffle").samples(1)
    assert not model.supports(sample[0])
    with pytest.raises(NoAnswerSetError, match=r"1,307,674,367,999 valid answers") as info:
        model.generate(sample, build_strategy("random", k=1), max_new_tokens=128)
    assert "Text Writing" not in str(info.value)
    assert all(model.supports(s) for s in get_task("waiting_line_n15/copy").samples(2))
    assert all(model.supports(s) for s in get_task("puzzle/latin_square").samples(2))


def test_semi_ar_blocks_pad_the_region_with_eos():
    samples = get_task("waiting_line/copy").samples(2)
    gens = load_model("ideal").generate(samples, build_strategy("random", k=2, block_length=5), max_new_tokens=32)
    for g, s in zip(gens, samples):
        assert g.text == s.answer
        assert g.num_tokens % 5 == 0 and g.num_tokens >= len(g.order)


def test_infilling_samples_decode_only_the_items():
    samples = get_task("synthetic_infill/shuffle").samples(4)
    assert samples[0].output_format
    gens = load_model("ideal").generate(samples, build_strategy("confidence-topk", k=1), max_new_tokens=32)
    for g, s in zip(gens, samples):
        assert g.text in set(valid_answers(s))
        n = len(s.data["input"]) if "input" in s.data else s.output_format.count("[MASK]")
        assert g.num_tokens == g.nfe == n  # formatting was pre-filled, one item per step
        assert g.order.count(-1) == len(g.order) - n


# ---- structured answers: one field per token, punctuation given (issue 34) ------------------


def test_json_pieces_one_field_per_token():
    from parallelbench.models.ideal.tokenizer import json_pieces

    record = '{"customer": "Susan Fox", "age": 42}'
    assert json_pieces(record) == [("{", False), ('"customer": "Susan Fox"', True), (", ", False),
                                   ('"age": 42', True), ("}", False)]
    call = '{"name": "book_table", "arguments": {"party": 4, "guest": "Ann Lee"}}'
    pieces = json_pieces(call)
    assert "".join(p for p, _ in pieces) == call
    assert [p for p, field in pieces if field] == ['"name": "book_table"', '"party": 4', '"guest": "Ann Lee"']
    assert json_pieces('["Susan Fox"]') is None and json_pieces("{bad") is None
    assert json_pieces('{"a":1}') is None  # not in canonical form: the text would not come back


@pytest.mark.parametrize("task_id", ["structured/json_fields", "structured/tool_call"])
def test_zero_dependency_structured_tasks_are_perfect_at_k_all(task_id):
    """C(Y|X) = 0: every field decoded in one step is still right (the whole canvas at once)."""
    from parallelbench.scoring import score

    task = get_task(task_id)
    samples = task.samples(30)
    model = load_model("ideal")
    for strategy in (build_strategy("random", k=task.max_new_tokens), build_strategy("confidence-topk", k=3),
                     build_strategy("random", k=2, temperature=1.0)):
        gens = model.generate(samples, strategy, max_new_tokens=task.max_new_tokens, seed=0)
        assert [score(s, g.text).components["strict"] for s, g in zip(samples, gens)] == [1.0] * len(samples)
        assert all(g.text == s.answer for g, s in zip(gens, samples))
    one_step = model.generate(samples, build_strategy("random", k=task.max_new_tokens), max_new_tokens=task.max_new_tokens)
    assert {g.nfe for g in one_step} == {1}


def test_json_any_order_follows_shuffle_with_n_fields():
    """Random top-k at k = 2 over the fields: the exact-answer rate is eq. 5 with n = fields."""
    import math

    from parallelbench.scoring import score
    from parallelbench.theory.closed_forms import shuffle_topk_accuracy

    task = get_task("structured/json_any_order")
    samples = [s for s in task.samples() if s.data["n"] <= 6]  # 7! and 8! answers per sample are slow to list
    model = load_model("ideal")
    hits, expected, variance = 0.0, 0.0, 0.0
    for seed in range(2):
        gens = model.generate(samples, build_strategy("random", k=2), max_new_tokens=task.max_new_tokens, seed=seed)
        for s, g in zip(samples, gens):
            p = shuffle_topk_accuracy(s.data["n"], 2)
            hits += score(s, g.text).components["strict"]
            expected, variance = expected + p, variance + p * (1 - p)
    assert abs(hits - expected) <= 3 * math.sqrt(variance) + 0.5, (hits, expected)
    conf = model.generate(samples, build_strategy("confidence-topk", k=1), max_new_tokens=task.max_new_tokens)
    assert all(score(s, g.text).components["strict"] == 1.0 for s, g in zip(samples, conf))

"""The tiny model's tokenizer, network, data streams and training loop (fast: tiny configs)."""

from __future__ import annotations

import json

import pytest
import torch

from parallelbench.models.tiny.data import (
    SEED_BASE,
    HeldOutGuard,
    TrainingStream,
    collate,
    encode_sample,
    train_seed,
    train_split,
    training_tasks,
    vocabulary_pairs,
)
from parallelbench.models.tiny.model import Logits, TinyConfig, TinyDenoiser
from parallelbench.models.tokenizer import UnknownWordsError, WordTokenizer, split_pieces
from parallelbench.tasks import get_task

SMALL_TASKS = ["waiting_line/copy", "synthetic_infill/shuffle"]


@pytest.fixture(scope="module")
def tok() -> WordTokenizer:
    from parallelbench.models.tiny.data import extra_pieces

    tasks = training_tasks()  # as `parallelbench train` builds it: every name, key and function name
    return WordTokenizer.build(vocabulary_pairs(tasks, seed=0, chunks=1, size=48), extra_pieces())


# ---- tokenizer ------------------------------------------------------------------------


def test_pieces_cover_text_exactly():
    text = 'Fill 0042\n2031\n\nInput:\n["Susan Fox", "Philip Gray"] H,4,A,C\n4,C,H,A'
    assert "".join(split_pieces(text)) == text


def test_round_trip_on_every_training_task(tok):
    for task in training_tasks():
        for s in train_split(task, chunk=0, seed=0, size=48):
            assert tok.decode(tok.encode(s.answer)) == s.answer
            assert tok.decode(tok.encode(s.prompt)) == s.prompt


def test_names_are_first_and_last_tokens_three_per_name(tok):
    s = train_split(get_task("waiting_line/copy"), chunk=0, seed=0, size=8)[0]
    names = s.data["input"]
    texts = tok.token_texts(tok.encode(s.answer))
    assert len(texts) == 3 * len(names) + 1
    first, last = names[0].split(" ", 1)
    assert texts[:3] == ['["', first, " " + last]


def test_seven_names_fit_the_waiting_line_budget(tok):
    names = [n for s in train_split(get_task("waiting_line/copy"), 0, 0, 48) for n in s.data["input"]][:7]
    answer = "[" + ", ".join(f'"{n}"' for n in names) + "]"
    ids = tok.encode_answer(answer, 32)
    assert len(ids) == 32 and ids[-1] == tok.eos_id and tok.decode(ids) == answer


def test_puzzle_answers_round_trip(tok):
    for text in ["1342\n2431\n4123\n3214", "H,4,A,C\n4,C,H,A\nC,A,4,H\nA,H,C,4"]:
        assert tok.decode(tok.encode(text)) == text
        assert tok.token_texts(tok.encode(text)).count("\n") == 3  # each line break is a token of its own


def test_line_breaks_in_answers_do_not_split_instruction_phrases(tok):
    """Grid rows end in a newline, but whitespace is not an item: the Sudoku prompt's text
    after its grid stays one phrase, and the grid's rows are separated by newline tokens."""
    assert "\n" not in tok.data_pieces
    sudoku = get_task("puzzle/sudoku").samples(1)[0]
    texts = tok.token_texts(tok.encode(sudoku.prompt))
    assert texts[-1] == "\nOutput:\n" and texts.count("\n") == 3


def test_unknown_words_error_names_them(tok):
    with pytest.raises(UnknownWordsError, match="Zyzzyva"):
        tok.encode("Please sort Zyzzyva")


def test_encode_chat_uses_last_user_turn(tok):
    s = get_task("waiting_line/copy").samples(1)[0]
    assert tok.encode_chat(s.messages) == tok.encode_prompt(s.prompt)
    assert tok.encode_prompt(s.prompt)[-1] == tok.sep_id


def test_encode_template_masks_items_only(tok):
    ids = tok.encode_template('["[MASK]", "[MASK]", "[MASK]"]', 32)
    assert len(ids) == 32
    assert [i for i, t in enumerate(ids) if t == tok.mask_id] == [1, 3, 5]
    assert ids[7:] == [tok.eos_id] * 25
    assert tok.encode_template('["[MASK]"]', 8, tokens_per_item=2).count(tok.mask_id) == 2


def test_tokenizer_save_load(tok, tmp_path):
    tok.save(tmp_path / "t.json")
    again = WordTokenizer.load(tmp_path / "t.json")
    assert again.tokens == tok.tokens and again.data_pieces == tok.data_pieces


# ---- network --------------------------------------------------------------------------


def _net(vocab: int = 50, rope: bool = True, pointer: bool = False, **extra) -> TinyDenoiser:
    torch.manual_seed(0)
    return TinyDenoiser(
        TinyConfig(vocab_size=vocab, mask_id=1, eos_id=2, sep_id=3, d_model=32, n_layers=2, n_heads=2, d_ff=64,
                   rope=rope, pointer=pointer, segments=pointer, **extra)
    )


def test_forward_shapes_and_hf_style_logits():
    from parallelbench.models.base import MaskedDiffusionModel

    net = _net()
    x = torch.randint(4, 50, (3, 10))
    out = net(x)
    assert out.shape == (3, 10, 50) and isinstance(out, Logits)
    assert type(out.logits) is torch.Tensor and torch.equal(out.logits, out)
    assert isinstance(net, MaskedDiffusionModel)
    assert type(out + 1) is torch.Tensor  # arithmetic gives plain tensors


@pytest.mark.parametrize("rope,pointer,grid", [(True, False, 0), (False, False, 0), (True, True, 0), (True, True, 4)])
def test_left_padding_does_not_change_logits(rope, pointer, grid):
    extra = dict(grid=grid, grid_bias=True, grid_line_ids=[6], grid_row_ids=[7], grid_skip_ids=[8]) if grid else {}
    net = _net(rope=rope, pointer=pointer, **extra).eval()
    if grid:  # the biases start at zero; give them weight so the test can see them
        torch.nn.init.normal_(net.grid_bias, std=1.0)
    torch.manual_seed(3)
    x = torch.randint(4, 50, (1, 8))
    x[0, 1], x[0, 2] = 7, 8  # a row break and a comma before the first line break
    x[0, 4] = 3  # [SEP]: prompt of four tokens, answer of three
    padded = torch.cat([torch.zeros(1, 3, dtype=torch.long), x], 1)
    attn = torch.cat([torch.zeros(1, 3, dtype=torch.bool), torch.ones(1, 8, dtype=torch.bool)], 1)
    a = net(x, attention_mask=torch.ones_like(x, dtype=torch.bool))
    b = net(padded, attention_mask=attn)[:, 3:]
    assert torch.allclose(a, b, atol=1e-5)


def test_rotary_attention_depends_on_relative_position_only():
    from parallelbench.models.tiny.model import _rotary_tables, _rotate

    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(1, 1, 5, 8, generator=g), torch.randn(1, 1, 5, 8, generator=g)
    scores = []
    for shift in (0, 7):
        cos, sin = _rotary_tables(torch.arange(5)[None] + shift, 8)
        scores.append(_rotate(q, cos, sin) @ _rotate(k, cos, sin).transpose(-1, -2))
    assert torch.allclose(scores[0], scores[1], atol=1e-4)


def test_answer_segment_starts_after_the_first_sep():
    from parallelbench.models.tiny.model import answer_segment

    canvas = torch.tensor([[0, 0, 7, 3, 1, 1, 3], [7, 8, 9, 9, 1, 1, 1]])
    seg = answer_segment(canvas, sep_id=3)
    assert seg.tolist() == [[False] * 4 + [True] * 3, [False] * 7]


def test_pointer_output_is_a_distribution_and_copies_only_prompt_tokens():
    net = _net(pointer=True).eval()
    x = torch.tensor([[11, 12, 13, 3, 1, 1, 1, 1]])
    probs = net(x).exp()
    assert torch.allclose(probs.sum(-1), torch.ones(1, 8), atol=1e-4)
    # Gate fully on the copy side: all of an answer position's mass is on the prompt's ids.
    with torch.no_grad():
        net.ptr_gate.bias.fill_(-40.0)
    copy = net(x).exp()[0, 4:]
    assert torch.allclose(copy[:, [11, 12, 13, 3]].sum(-1), torch.ones(4), atol=1e-4)


def test_coverage_counts_other_unmasked_answer_tokens():
    from parallelbench.models.tiny.model import coverage_counts, answer_segment

    # prompt: 7 8 9 [SEP]; answer: 7 [MASK] 7 [EOS] 7 7 9
    canvas = torch.tensor([[7, 8, 9, 3, 7, 1, 7, 2, 7, 7, 9]])
    counts = coverage_counts(canvas, answer_segment(canvas, 3), hidden_ids=(1, 2, 0))
    # prompt 7 sees four 7s in the answer (capped at 3); an answer 7 sees the three others;
    # masked and [EOS] positions count the visible copies of their own id (none)
    assert counts.tolist() == [[3, 0, 1, 0, 3, 0, 3, 0, 3, 3, 0]]


def test_grid_positions_give_row_and_column_of_puzzle_cells(tok):
    from parallelbench.models.tiny.train import TrainConfig, model_config

    net = TinyDenoiser(model_config(TrainConfig(), tok))

    def codes(ids):  # the network's own grid reading, on an unpadded canvas
        canvas = torch.tensor([ids])
        row, col, _ = net._grid(canvas, torch.ones_like(canvas, dtype=torch.bool))
        return row, col

    sudoku = get_task("puzzle/sudoku").samples(1)[0]
    latin = get_task("puzzle/latin_square").samples(1)[0]
    for sample, cells in ((sudoku, "3412\n2143\n1234\n4321"), (latin, "H,E,J,0\n0,J,E,H\nE,H,0,J\nJ,0,H,E")):
        ids = tok.encode_prompt(sample.prompt) + tok.encode_answer(cells, 40)
        row, col = codes(ids)
        start = len(ids) - 40
        got = [(tok.decode([i]), r, c) for i, r, c in zip(ids[start:], row[0, start:].tolist(), col[0, start:].tolist())]
        symbols = [g for g in got if g[0] not in ("\n", ",", "")]
        assert [(r, c) for _, r, c in symbols] == [(r, c) for r in range(4) for c in range(4)]
        assert "".join(s for s, _, _ in symbols) == cells.replace("\n", "").replace(",", "")
    # the Sudoku prompt's grid gets the same codes as the answer's cells: its first row
    # follows "Input:\n" (a line break: not after a cell), its others a row break
    ids = tok.encode_prompt(sudoku.prompt)
    row, col = codes(ids)
    grid = sudoku.data["puzzle"].replace("\n", "")
    digits = [(r, c) for i, r, c in zip(ids, row[0].tolist(), col[0].tolist()) if tok.decode([i]) in "01234" and len(tok.decode([i])) == 1]
    assert digits[-16:] == [(r, c) for r in range(4) for c in range(4)] and len(grid) == 16


def test_a_newline_ends_a_row_after_a_cell_and_starts_a_grid_elsewhere():
    from parallelbench.models.tiny.model import grid_positions, split_line_breaks

    # tokens: Input:\n  a  b  \n  c  d  \n  Output:  \n  x   (newline is id 9, listed as both)
    ids = torch.tensor([[5, 1, 1, 9, 1, 1, 9, 6, 9, 1]])
    nl, cell = ids == 9, ids == 1
    line, row_break = split_line_breaks((ids == 5) | nl, nl, cell)
    assert row_break[0].tolist() == [False, False, False, True, False, False, True, False, False, False]
    assert line[0].tolist() == [True, False, False, False, False, False, False, False, True, False]
    row, col = grid_positions(ids, line, row_break, torch.zeros_like(nl), size=8)
    cells = [(r, c) for r, c, is_cell in zip(row[0].tolist(), col[0].tolist(), cell[0].tolist()) if is_cell]
    assert cells == [(0, 0), (0, 1), (1, 0), (1, 1), (0, 0)]  # the cell after "Output:\n" starts a new grid
    # a token listed as a line break only (the old layout's newline) stays one everywhere
    line2, row2 = split_line_breaks(nl, ids == 7, cell)
    assert torch.equal(line2, nl) and not row2.any()


def test_grid_relations_link_cells_of_one_row_or_column_only():
    from parallelbench.models.tiny.model import _grid_relations

    row = torch.tensor([[0, 0, 1, 1, 3]])  # the last token sits at the cap: outside any grid
    col = torch.tensor([[0, 1, 0, 1, 0]])
    rel = _grid_relations(row, col, size=4)
    assert rel[0, 0].tolist() == [[1, 1, 0, 0, 0], [1, 1, 0, 0, 0], [0, 0, 1, 1, 0], [0, 0, 1, 1, 0], [0] * 5]
    assert rel[0, 1].tolist() == [[1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [1, 0, 1, 0, 0], [0, 1, 0, 1, 0], [0] * 5]
    # only cells are linked: a non-cell token (a name, a comma) sits outside the grid
    rel = _grid_relations(row, col, size=4, cells=torch.tensor([[True, False, True, True, True]]))
    assert rel[0, 0, 1].sum() == 0 and rel[0, 0, :, 1].sum() == 0 and rel[0, 0, 2, 3] == 1


def test_grid_exclusion_lowers_symbols_already_in_the_cells_row_or_column(tok):
    from parallelbench.models.tiny.train import TrainConfig, model_config

    net = TinyDenoiser(model_config(TrainConfig(), tok)).eval()
    latin = get_task("puzzle/latin_square").samples(1)[0]
    prompt = tok.encode_chat(latin.messages)  # lists J, but only the answer's cells count
    answer = tok.encode_answer("H,E,J,0\n0,J,E,H\nE,H,0,J\nJ,0,H,E", 40)
    cell = len(prompt) + 2 * 5  # row 1, column 1 ("J"); cells sit at every other token
    canvas = torch.tensor([prompt + answer])
    canvas[0, cell] = net.mask_id
    canvas[0, len(prompt) + 2 * 4] = net.mask_id  # "0" at row 1, column 0: masked, so not counted
    with torch.no_grad():
        base = net(canvas)[0, cell]
        net.grid_exclude.copy_(torch.tensor([5.0, 0.0]))
        by_row = net(canvas)[0, cell] - base
        net.grid_exclude.copy_(torch.tensor([0.0, 3.0]))
        by_col = net(canvas)[0, cell] - base
    ids = {s: tok.encode(s)[0] for s in "HEJ0"}
    # row 1 shows E and H (0 is masked); column 1 shows E, H and 0
    assert {s: round(float(by_row[i]), 4) for s, i in ids.items()} == {"H": -5.0, "E": -5.0, "J": 0.0, "0": 0.0}
    assert {s: round(float(by_col[i]), 4) for s, i in ids.items()} == {"H": -3.0, "E": -3.0, "J": 0.0, "0": -3.0}
    others = torch.ones_like(by_row, dtype=torch.bool)
    others[list(ids.values())] = False
    assert by_row[others].abs().max() == 0 and by_col[others].abs().max() == 0


def test_alphabetical_ranks_order_names_as_the_sort_task_does():
    from parallelbench.models.tiny.model import alphabetical_ranks, rank_features

    tokens = ["[PAD]", ",", ' "', " Norris", " Garner", "Alice", " Medina", '"Abigail', " garner"]
    r = dict(zip(tokens, alphabetical_ranks(tokens)))
    assert r["[PAD]"] == r[","] == r[' "'] == 0.0
    assert r['"Abigail'] < r["Alice"] < r[" Garner"] == r[" garner"] < r[" Medina"] < r[" Norris"] == 1.0
    feats = rank_features(torch.tensor([0.0, 0.5, 1.0]))
    assert feats.shape == (3, 13) and feats[:, 0].tolist() == [0.0, 0.5, 1.0]
    net = TinyDenoiser(TinyConfig(vocab_size=9, mask_id=1, eos_id=2, d_model=16, n_layers=1, n_heads=2, d_ff=32,
                                  token_rank=alphabetical_ranks(tokens)))
    assert net.rank_proj is not None and "rank_table" not in net.state_dict()
    with pytest.raises(ValueError, match="token_rank has 2 entries"):
        TinyDenoiser(TinyConfig(vocab_size=9, mask_id=1, eos_id=2, d_model=16, n_heads=2, token_rank=[0.0, 1.0]))


def test_tokenizer_files_keep_their_splitter(tok, tmp_path):
    from parallelbench.models.tokenizer import SPLITTER

    assert tok.splitter == SPLITTER == 4
    assert split_pieces("0412 0043", 2) == ["0", "4", "1", "2", " ", "0", "0", "4", "3"]
    assert split_pieces("0412 0043", 1) == ["0", "4", "1", "2", " 0", "0", "4", "3"]
    old = WordTokenizer(["[PAD]", "[MASK]", "[EOS]", "[SEP]", "0", " 0", "4"], ["0", " 0", "4"], splitter=1)
    old.save(tmp_path / "old.json")
    data = json.loads((tmp_path / "old.json").read_text())
    del data["splitter"]  # a file written before splitters were recorded
    (tmp_path / "old.json").write_text(json.dumps(data))
    again = WordTokenizer.load(tmp_path / "old.json")
    assert again.splitter == 1 and again.encode("40 0") == [6, 4, 5]


def test_training_covers_the_structured_family():
    from parallelbench.models.tiny.data import TASK_WEIGHT

    ids = {t.id for t in training_tasks()}
    assert {"structured/json_fields", "structured/json_any_order", "structured/tool_call"} <= ids
    assert not any(i.endswith("-cot") for i in ids)
    assert TASK_WEIGHT["json_any_order"] > TASK_WEIGHT["json_fields"] == TASK_WEIGHT["tool_call"] > 0


def test_json_punctuation_is_compact_and_other_text_splits_as_before():
    record = '{"age": 10, "customer": "Andrea Williamson"}'
    assert split_pieces(record, 3) == ['{"', "age", '": ', "1", "0", ', "', "customer", '": "', "Andrea", " Williamson", '"}']
    call = '{"name": "assign_seat", "arguments": {"floor": 18}}'
    assert split_pieces(call, 3)[:9] == ['{"', "name", '": "', "assign", "_", "seat", '", "', "arguments", '": ']
    for text in ('["Susan Fox", "Philip Gray"]', "1342\n2431", "H,4,A,C\n4,C,H,A", 'Fill 0042 [0, J] "x"'):
        assert split_pieces(text, 3) == split_pieces(text, 2)


def test_json_punctuation_does_not_depend_on_the_value_type():
    # splitter 4: a name carries its quotes, so `": ` / `, "` / `}` are the same for every value
    record = '{"age": 10, "customer": "Andrea Williamson", "seat": 42}'
    pieces = split_pieces(record, 4)
    assert pieces == ['{"', "age", '": ', "1", "0", ', "', "customer", '": ', '"Andrea', ' Williamson"', ', "',
                      "seat", '": ', "4", "2", "}"]
    # every field is key, separator, two value tokens and an end: the layout follows from the count
    assert [pieces[i] for i in (2, 7, 12)] == ['": '] * 3 and [pieces[i] for i in (5, 10)] == [', "'] * 2
    # the prompt's line holds the same value tokens, so the pointer copies them
    assert split_pieces('customer: "Andrea Williamson"\n', 4) == ["customer", ": ", '"Andrea', ' Williamson"', "\n"]
    end = split_pieces('{"name": "log_visit", "arguments": {"owner": "Jean Luna"}}', 4)
    assert end[-4:] == ['"Jean', ' Luna"', "}", "}"] and end[2:4] == ['": "', "log"]  # a function name is no person
    for text in ('["Susan Fox", "Philip Gray"]', "1342\n2431", "H,4,A,C\n4,C,H,A", 'Fill 0042 [0, J] "x"',
                 'Add "Susan Fox", then: "x"'):
        assert split_pieces(text, 4) == split_pieces(text, 2)


def test_field_counts_number_the_prompt_lines_and_tell_the_answer_their_total():
    from parallelbench.models.tiny.data import extra_pieces
    from parallelbench.models.tiny.model import FIELD_COUNT_MAX, answer_segment, field_counts
    from parallelbench.models.tiny.train import field_token_ids

    pairs = vocabulary_pairs(training_tasks(["structured/json_any_order"]), seed=0, chunks=1, size=48)
    tok = WordTokenizer.build(pairs, extra_pieces())
    info = field_token_ids(tok, count=True)
    assert info["field_count"]
    s = get_task("structured/json_any_order").samples()[-1]  # 8 fields
    prompt = tok.encode_chat(s.messages)
    ids = torch.tensor([prompt + tok.encode_answer(s.answer, 48)])
    counts = field_counts(ids, info["field_sep_ids"], answer_segment(ids, tok.sep_id))[0].tolist()
    n = len(json.loads(s.answer))
    assert counts[len(prompt):] == [FIELD_COUNT_MAX + n] * 48
    text = [tok.decode([i]) for i in prompt]
    values = [c for c, t in zip(counts, text) if t.startswith('"') or t.isdigit()]  # first value token of each line
    assert sorted(set(values)) == list(range(1, n + 1))


@pytest.mark.parametrize("tid", ["structured/json_fields", "structured/json_any_order", "structured/tool_call"])
def test_structured_records_fit_the_budget_and_round_trip(tok, tid):
    from parallelbench.models.tiny.data import extra_pieces

    # as `parallelbench train` builds it: every name, key and function name, whichever the sample drew
    tok = WordTokenizer.build(vocabulary_pairs(training_tasks([tid]), seed=0, chunks=1, size=48), extra_pieces())
    task = get_task(tid)
    for s in task.samples():
        ids = tok.encode_answer(s.answer, task.max_new_tokens)
        assert ids[-1] == tok.eos_id and tok.decode(ids) == s.answer
        tok.encode_chat(s.messages)  # every test prompt is inside the vocabulary


def _field_values(tok, ids, keys, seps):
    """key text -> the joined text of the tokens the field-key embedding assigns to it."""
    out: dict[str, str] = {}
    for i, k in zip(ids, keys):
        if k != tok.pad_id and i not in seps:
            key = tok.decode([k])
            out[key] = out.get(key, "") + tok.decode([i])
    return {k: v.strip().strip('"') for k, v in out.items() if v.strip()}


@pytest.mark.parametrize("tid", ["structured/json_fields", "structured/tool_call"])
def test_field_keys_tie_each_value_to_its_key_in_prompt_and_answer(tok, tid):
    from parallelbench.models.tiny.model import field_keys
    from parallelbench.models.tiny.train import field_token_ids

    info = field_token_ids(tok)
    assert info["field_key"] and info["field_sep_ids"] and info["field_end_ids"]
    for s in get_task(tid).samples(5):
        prompt = tok.encode_chat(s.messages)
        ids = prompt + tok.encode_answer(s.answer, 48)
        keys = field_keys(torch.tensor([ids]), info["field_sep_ids"], info["field_end_ids"], tok.pad_id)[0].tolist()
        record = json.loads(s.answer)
        want = {"name": record["name"], **record["arguments"]} if "arguments" in record else record
        want = {k: str(v) for k, v in want.items()}
        answer = _field_values(tok, ids[len(prompt):], keys[len(prompt):], set(info["field_sep_ids"]))
        assert answer == want
        if tid == "structured/json_fields":  # the prompt's `key: value` lines carry the same keys
            assert _field_values(tok, prompt, keys[:len(prompt)], set(info["field_sep_ids"])) == want
    # no field outside a separator: a Waiting Line list gets none
    s = get_task("waiting_line/copy").samples(1)[0]
    ids = tok.encode_answer(s.answer, 32)
    keys = field_keys(torch.tensor([ids]), info["field_sep_ids"], info["field_end_ids"], tok.pad_id)
    assert (keys == tok.pad_id).all()


def test_field_key_embedding_keeps_left_padding_neutral(tok):
    from parallelbench.models.tiny.train import TrainConfig, model_config

    net = TinyDenoiser(model_config(TrainConfig(d_model=32, n_layers=1, n_heads=2, d_ff=64), tok)).eval()
    assert net.cfg.field_key and hasattr(net, "field_key")
    s = get_task("structured/json_fields").samples(1)[0]
    x = torch.tensor([tok.encode_chat(s.messages) + tok.encode_answer(s.answer, 48)])
    padded = torch.cat([torch.full((1, 3), tok.pad_id), x], 1)
    attn = torch.cat([torch.zeros(1, 3, dtype=torch.bool), torch.ones_like(x, dtype=torch.bool)], 1)
    with torch.no_grad():
        assert torch.allclose(net(x), net(padded, attention_mask=attn)[:, 3:], atol=1e-4)


def test_positions_select_rows_of_the_full_output():
    net = TinyDenoiser(TinyConfig(vocab_size=50, mask_id=1, eos_id=2, sep_id=3, d_model=32, n_layers=2, n_heads=2,
                                  d_ff=64, rope=True, pointer=True, segments=True, coverage=True, neighbours=True,
                                  list_pos=8, list_open_id=5, grid=4, grid_line_ids=[6],
                                  grid_row_ids=[7], grid_skip_ids=[8])).eval()
    torch.manual_seed(1)
    x = torch.randint(4, 50, (3, 12))
    x[:, 5] = 3
    x[:, 8:10] = 1
    pick = torch.rand(3, 12) < 0.4
    full = net(x)
    assert torch.allclose(net(x, positions=pick), full[pick], atol=1e-5)


def test_neighbour_embeddings_see_the_adjacent_tokens():
    net = TinyDenoiser(TinyConfig(vocab_size=50, mask_id=1, eos_id=2, sep_id=3, d_model=32, n_layers=1, n_heads=2,
                                  d_ff=64, rope=True, neighbours=True)).eval()
    a = torch.tensor([[7, 8, 9, 3, 1, 1]])
    b = torch.tensor([[7, 8, 9, 3, 20, 1]])
    with torch.no_grad():
        for blk in net.blocks:  # no attention mixing: only the embeddings can carry the change
            blk.proj.weight.zero_()
            blk.proj.bias.zero_()
        out_a, out_b = net(a), net(b)
    changed = ~torch.isclose(out_a, out_b, atol=1e-6).all(-1)[0]
    assert changed.tolist() == [False, False, False, True, True, True]


def test_output_depends_on_the_prompt():
    net = _net().eval()
    a, b = torch.randint(4, 50, (1, 12)), torch.randint(4, 50, (1, 12))
    b[:, 6:] = a[:, 6:]
    assert not torch.allclose(net(a)[:, 6:], net(b)[:, 6:])


def test_too_long_sequence_is_a_clear_error():
    net = TinyDenoiser(
        TinyConfig(vocab_size=20, mask_id=1, eos_id=2, d_model=16, n_layers=1, n_heads=2, d_ff=32, max_len=8)
    )
    with pytest.raises(ValueError, match="max_len"):
        net(torch.full((1, 9), 5))


# ---- data -----------------------------------------------------------------------------


def test_training_seeds_are_disjoint_from_test_seeds():
    tasks = training_tasks()
    test_seeds = {t.params.seed for t in tasks}
    seeds = {train_seed(t.id, c, s) for t in tasks for c in range(20) for s in range(3)}
    assert min(seeds) >= SEED_BASE > max(test_seeds)


def test_training_samples_are_disjoint_from_test_sets():
    tasks = training_tasks()
    guard = HeldOutGuard(tasks)
    for task in tasks:
        test_answers = {(s.prompt, s.answer) for s in task.samples()}
        train = train_split(task, chunk=0, seed=0, size=64)
        assert len(train) == 64
        # Generators seeded from the training stream never reproduce a test prompt ...
        clashes = [s for s in train if s.prompt in guard.prompts]
        # ... except by coincidence for tiny spaces; the guard drops those anyway.
        assert len(clashes) <= 1, task.id
        assert not any((s.prompt, s.answer) in test_answers for s in train if guard.keep(s))


def test_infill_examples_mask_only_items(tok):
    s = train_split(get_task("synthetic_infill/shuffle"), 0, 0, 4)[0]
    ex = encode_sample(tok, s, 32, 0)
    masked_texts = [tok.tokens[t] for t, m in zip(ex.target, ex.maskable) if m]
    assert sorted(masked_texts) == sorted(s.data["input"])


def test_stream_is_deterministic_per_step(tok):
    tasks = [get_task(t) for t in SMALL_TASKS]
    a = TrainingStream(tok, tasks, seed=3, batch_size=8, chunk_per_task=16)
    b = TrainingStream(tok, tasks, seed=3, batch_size=8, chunk_per_task=16)
    for step in (5, 0, 5):
        assert [e.prompt for e in a.batch(step)] == [e.prompt for e in b.batch(step)]
    batch = collate(a.batch(0), tok.pad_id)
    assert batch["canvas"].shape[0] == 8 and bool((batch["maskable"] <= batch["answer"]).all())


def test_batches_share_a_generation_length_and_a_length_band_and_keep_the_task_mix(tok):
    from parallelbench.models.tiny.data import LENGTH_BAND

    tasks = [get_task("puzzle/sudoku"), get_task("puzzle/latin_square")]
    stream = TrainingStream(tok, tasks, seed=1, batch_size=16, chunk_per_task=64)
    picks = []
    for step in range(60):
        batch = stream.batch(step)
        assert len({(len(e.target), (len(e.prompt) + len(e.target)) // LENGTH_BAND) for e in batch}) == 1
        picks.append(batch[0].task)
    # Sudoku and Latin-square prompts differ threefold in length, so each batch holds one
    # task; bands are drawn by size, so both tasks (equal weights) get about half the batches:
    # 60 draws, p = 1/2, 3 standard deviations is 11.6.
    assert abs(picks.count(0) - 30) <= 11.6

"""Defaults shared by the training code and its command (kept light: no torch import)."""

# tasks whose prompts and answers make the heads' training text
DEFAULT_TASKS = (
    "waiting_line/copy", "waiting_line/reverse", "waiting_line/sort", "waiting_line/shuffle",
    "waiting_line/insert_index", "waiting_line/replace_index", "puzzle/latin_square", "text_writing/paraphrasing",
)

"""Bridges to other tools: `lm_eval` (our engine as an lm-evaluation-harness model) and
`lm_eval_tasks` (our tasks as lm-evaluation-harness tasks)."""

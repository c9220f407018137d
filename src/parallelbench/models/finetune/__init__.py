"""Task fine-tuning of dLLMs (`parallelbench finetune`; the paper's "Impact of Fine-tuning").

`hf:` dLLMs get LoRA adapters on their query/key/value projections (the paper's LLaDA 1.5
settings), the bundled `tiny` / `tiny-uniform` models a full fine-tune on CPU. Either way the
data come from the task generators with seeds disjoint from the test samples, and the
result loads as a model spec:

    parallelbench finetune --model tiny --tasks waiting_line/sort --out ft/
    parallelbench run --model tiny:ft/ --tasks waiting_line/sort
    parallelbench finetune --model hf:GSAI-ML/LLaDA-1.5 --tasks waiting_line/copy --out lora/
    parallelbench run --model hf:GSAI-ML/LLaDA-1.5 --model-opt adapter=lora/ --tasks waiting_line/copy
"""

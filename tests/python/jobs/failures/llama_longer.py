"""Recompile on a real model: a Llama-style transformers model called with a longer sequence
the second time. The failing guard is on kwargs['input_ids'] dimension 1."""

import torch
from transformers import LlamaConfig, LlamaForCausalLM

torch.manual_seed(0)
config = LlamaConfig(
    vocab_size=128,
    hidden_size=64,
    intermediate_size=128,
    num_hidden_layers=2,
    num_attention_heads=4,
    num_key_value_heads=2,
    max_position_embeddings=64,
)
model = LlamaForCausalLM(config).eval()
compiled = torch.compile(model, backend="eager")
with torch.no_grad():
    for length in (7, 9):
        ids = torch.randint(0, 128, (1, length))
        print(compiled(input_ids=ids).logits.sum().item())

"""A model whose config is a validated dataclass (huggingface_hub's @strict over transformers'
PreTrainedConfig, as WhisperConfig is), and whose forward sets a field on a copy of it, as
Whisper's does: Dynamo
traces the field's validators and guards each by its closure (the dataclass field it was made
for). DYNREP_VALIDATOR=strict swaps the custom validator for one that rejects the value forward
sets, as an edited library would. Prints the output's sum, or the validation error."""

import copy
import os

import torch
from huggingface_hub.dataclasses import strict, validated_field
from transformers import PreTrainedConfig


def at_least_one(value: int) -> None:
    if value < 1:
        raise ValueError(f"{value} is below 1")


def at_most_two(value: int) -> None:
    if value > 2:
        raise ValueError(f"{value} is above 2")


VALIDATOR = at_most_two if os.environ.get("DYNREP_VALIDATOR") == "strict" else at_least_one


@strict
class Config(PreTrainedConfig):
    model_type = "validated-tiny"
    width: int = 16
    layers: int = validated_field(VALIDATOR, default=2)
    scale: float | int = 0.5
    names: list[str] | None = None


class Model(torch.nn.Module):
    def __init__(self, config: Config) -> None:
        super().__init__()
        self.config = config
        self.proj = torch.nn.Linear(config.width, config.width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        inner = copy.deepcopy(self.config)
        inner.layers = self.config.layers + 1  # runs every validator of the field
        inner.scale = 0.25
        for _ in range(inner.layers):
            x = torch.tanh(self.proj(x)) * inner.scale
        return x


torch.manual_seed(0)
model = Model(Config())
compiled = torch.compile(model)
try:
    with torch.no_grad():
        out = [compiled(torch.randn(n, 16, generator=torch.Generator().manual_seed(n))) for n in (2, 3)][-1]
    print("OUTPUT", f"{out.double().sum().item():.10f}")
except Exception as error:  # noqa: BLE001 - what a plain torch.compile raises is the answer
    print("REJECTED", type(error).__name__, str(error).splitlines()[0])

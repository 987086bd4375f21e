"""An operator fails on the fake tensors while Dynamo traces (TorchRuntimeError): the shapes of a
matrix product do not match, which eager code would report too."""

import torch


def project(x, w):
    return (x @ w).relu()  # why: here


print(torch.compile(project, backend="aot_eager")(torch.ones(4, 3), torch.ones(4, 2)))

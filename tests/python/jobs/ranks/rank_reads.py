"""One process, rank 0 of PyTorch's fake process group of WORLD ranks, for each WORLD in turn (2
by default; the process group is made again for each): each compiled function below reads the
process's rank one way (or, the controls, reads something every rank shares) and is called
twice; OUT (a JSON file) gets, per world size, each function's outputs and the functions Dynamo
traced.

Usage: rank_reads.py OUT [WORLD ...]"""

from __future__ import annotations

import json
import sys

import torch
import torch._dynamo.convert_frame
import torch.distributed as dist
from torch.distributed.device_mesh import init_device_mesh
from torch.testing._internal.distributed import fake_pg  # registers the "fake" backend

traced: list[str] = []
torch._dynamo.convert_frame.register_bytecode_hook(lambda code, new_code: traced.append(code.co_name))

MESH = None  # the device mesh of the world size being run


def get_rank(x: torch.Tensor) -> torch.Tensor:
    return x + dist.get_rank()


def get_rank_of_group(x: torch.Tensor) -> torch.Tensor:
    return x + dist.get_rank(dist.group.WORLD)


def group_rank(x: torch.Tensor) -> torch.Tensor:
    return x + dist.group.WORLD.rank()


def mesh_local_rank(x: torch.Tensor) -> torch.Tensor:
    return x + MESH.get_local_rank()


def mesh_rank(x: torch.Tensor) -> torch.Tensor:
    return x + MESH.get_rank()


def mesh_coordinate(x: torch.Tensor) -> torch.Tensor:
    return x + MESH.get_coordinate()[0]


def world_size(x: torch.Tensor) -> torch.Tensor:
    return x * dist.get_world_size()


def mesh_size(x: torch.Tensor) -> torch.Tensor:
    return x * MESH.size()


def rank_argument(x: torch.Tensor, rank: int) -> torch.Tensor:
    return x + rank


def no_rank(x: torch.Tensor) -> torch.Tensor:
    return x.sin()


def run(world: int) -> dict:
    global MESH
    dist.init_process_group(backend="fake", store=fake_pg.FakeStore(), rank=0, world_size=world)
    MESH = init_device_mesh("cpu", (world,))
    traced.clear()
    outputs = {}
    x = torch.arange(4.0)
    for case in (
        get_rank,
        get_rank_of_group,
        group_rank,
        mesh_local_rank,
        mesh_rank,
        mesh_coordinate,
        world_size,
        mesh_size,
        no_rank,
    ):
        compiled = torch.compile(case)
        outputs[case.__name__] = [compiled(x).tolist() for _ in range(2)]
    compiled = torch.compile(rank_argument)
    outputs["rank_argument"] = [compiled(x, dist.get_rank()).tolist() for _ in range(2)]
    dist.destroy_process_group()
    return {"outputs": outputs, "traced": list(traced)}


def main() -> None:
    worlds = sys.argv[2:] or ["2"]
    with open(sys.argv[1], "w") as out:
        json.dump({world: run(int(world)) for world in worlds}, out)


if __name__ == "__main__":
    main()

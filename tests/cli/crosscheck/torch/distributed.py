"""The stand-in's torch.distributed: one process per rank, no traffic.
new_group counts the groups a rank creates and fails past 8, as NCCL runs
out of memory when every call of the original's 048 makes new ones."""
import os

made = [0]


def new_group(ranks=None, **kwargs):
    made[0] += 1
    if made[0] > 8:
        raise RuntimeError(f"NCCL error: out of memory (stand-in: group {made[0]} created)")
    return ("group", tuple(ranks or ()))


def barrier(group=None):
    pass


def get_rank(group=None):
    return int(os.environ["RANK"])


def get_world_size(group=None):
    return int(os.environ["WORLD_SIZE"])


class ReduceOp:
    SUM, MAX = "sum", "max"


def all_reduce(tensor, op=None, group=None):
    pass   # one rank's view: its own value is the world's

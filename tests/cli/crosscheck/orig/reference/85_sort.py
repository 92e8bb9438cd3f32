import torch


def solution(local_shard, group=None):
    return torch.tensor(sorted(local_shard.tolist()), local_shard.dtype)

import torch.distributed as dist


def solution(x):
    # as the original's 048: new groups on every call
    dist.new_group([0, 1])
    dist.new_group([0])
    return x

"""torch.distributed of the stand-in: uninitialised, its collectives would need NCCL."""


def is_initialized():
    return False


def all_reduce(*a, **k):
    raise AssertionError("the stand-in's real all_reduce was reached")

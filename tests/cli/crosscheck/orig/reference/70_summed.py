import torch
import torch.distributed as dist


def solution(lengths, values, key_splits, batch_size, pg=None):
    # the original's all-to-alls take values in splits of sum(lengths)
    if values.numel() != sum(lengths.tolist()):
        raise RuntimeError(f"stand-in: split sizes sum to {sum(lengths.tolist())}, "
                           f"values has {values.numel()}")
    return {"lengths": lengths, "values": values, "stride": torch.tensor(batch_size, torch.int64),
            "stride_per_rank": torch.tensor([batch_size] * dist.get_world_size(), torch.int64)}

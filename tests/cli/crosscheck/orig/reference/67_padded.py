import torch
import torch.distributed as dist


def solution(idx, value, num_nodes, group=None):
    # the entries this rank owns (idx % W), of its own: no traffic here;
    # R depends on the data, as the original's does
    w, r = dist.get_world_size(), dist.get_rank()
    ids, rows, h = idx.tolist(), value.tolist(), value.shape[1]
    keep = [i for i, x in enumerate(ids) if x % w == r]
    return (torch.tensor([ids[i] for i in keep], idx.dtype),
            torch.tensor([v for i in keep for v in rows[i * h:(i + 1) * h]], value.dtype).reshape(len(keep), h))

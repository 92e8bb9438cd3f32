import torch


def create_input_tensor(rank, world_size, problem_id, base_shape, dtype, trial=0, device=None):
    if problem_id == 40:   # the shape of 040's arguments: tensors, lr, beta1, step
        return (torch.tensor([0.0, 0.0], dtype), 1e-3, 0.9, 1)
    if problem_id == 85:   # 085: the shard is as long as the rank's count
        n = 8 if rank == 0 else 5
        return (torch.tensor([0.0] * n, dtype), None)
    if problem_id == 31:   # 031: the expert MLP is a module, pkb's weights are inputs
        return (torch.tensor([0.0] * 6, dtype).reshape(2, 3), torch.nn.Linear(3, 2, dtype), None)
    if problem_id == 35:   # 035: (M, N) on every rank, pkb's rows differ per rank
        return (torch.tensor([0.0] * (1024 * 2), dtype).reshape(1024, 2), 0, None)
    if problem_id == 67:   # 067: R, the entries a rank receives, depends on the data
        return (torch.tensor([0] * 4, torch.int64), torch.tensor([0.0] * 8, dtype).reshape(4, 2), 100000, None)
    if problem_id == 68:   # 068: the original's 111e6-row table (here 8 rows), pkb's 2^22
        return (torch.tensor([0.0] * 16, dtype).reshape(8, 2), torch.tensor([0] * 3, torch.int64),
                torch.tensor([0.0] * 4, dtype).reshape(2, 2), 111000000, None)
    if problem_id == 70:   # 070: values as long as its own random lengths sum to
        return (torch.tensor([1, 2, 3, 1], torch.int64), torch.tensor([0] * 7, torch.int64), [1, 1], 2, None)
    return (torch.tensor([0.0] * 6, dtype).reshape(2, 3),)

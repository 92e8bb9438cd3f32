calls = [0]


def solution(tensor):
    calls[0] += 1
    if calls[0] > 1:
        raise RuntimeError("a timed call failed")
    return tensor

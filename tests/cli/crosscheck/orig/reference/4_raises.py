def solution(tensor):
    raise RuntimeError("the original's own error")

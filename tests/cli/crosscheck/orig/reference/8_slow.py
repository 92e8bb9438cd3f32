import time


def solution(tensor):
    # 50 ms a call: the original's 500 + 100 timed calls (30 s) do not fit
    # the case's deadline, fewer do
    time.sleep(0.05)
    return tensor

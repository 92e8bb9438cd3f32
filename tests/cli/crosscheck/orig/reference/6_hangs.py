import os
import time

calls = [0]


def solution(tensor):
    # its timed calls never return (a collective that waits forever); the
    # pid goes where the test looks for processes left behind
    calls[0] += 1
    if calls[0] > 1:
        with open(os.path.join(os.environ["XC_PIDS"], str(os.getpid())), "w"):
            pass
        time.sleep(3600)
    return tensor

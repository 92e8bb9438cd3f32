import os
import time


def solution(tensor):
    # never returns (a rank stuck in a collective, or a loop that outlasts
    # the case's deadline): no outputs, no report; the pid goes where the
    # test looks for processes left behind
    with open(os.path.join(os.environ["XC_PIDS"], str(os.getpid())), "w"):
        pass
    time.sleep(3600)
    return tensor

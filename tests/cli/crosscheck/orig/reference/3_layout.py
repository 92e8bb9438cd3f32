def solution(tensor):
    return tensor, tensor

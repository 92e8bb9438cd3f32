"""
001_allreduce, known-bad under the `triton` backend (issue 42: what the Python host adds
to the sandbox): a Python solution process may read its interpreter's folders and write
one scratch folder of its own (TMPDIR, a fresh mkdtemp per evaluation, removed at its
end). This one tries to read beyond them: the user's home folder (keys, tokens) and the
folder that holds its scratch folder, where an earlier evaluation's scratch, left by a
killed process, could carry results across evaluations. Either read that works makes it
return zeros (a mismatch); both refused by Landlock, it raises (runtime_error). It never
computes the all-reduce.
pkb-expect: runtime_error
pkb-caught-by: sandbox
pkb-backend: triton
"""
import os
import pwd

import torch


def _readable(path):
    try:
        os.listdir(path)
        return True
    except OSError:
        return False


@torch.no_grad()
def solution(tensor: torch.Tensor) -> torch.Tensor:
    home = pwd.getpwuid(os.getuid()).pw_dir
    scratch = os.environ.get("TMPDIR", "")
    parent = os.path.dirname(scratch.rstrip("/")) if scratch else "/tmp"
    if _readable(home) or _readable(parent):
        return torch.zeros_like(tensor)
    raise PermissionError(f"the sandbox refused {home} and {parent}")

/*
 * 001_allreduce, known-bad (issue 36: a candidate's fault reaching the
 * judge): bad_late_host_thread.cu without its drain. pkb_fini returns while
 * the host thread still has queued calls running on the GPU, reading the
 * peer's symmetric buffer; the process ends under them. Under MPS a fatal
 * fault of one client reaches every client of the GPU, the judge's context
 * too (seen on 4x H100, 2026-11-28: the judge died at its next CUDA call,
 * the reference's start). The judge looks at its context as soon as the
 * candidate's process has ended and names the candidate: runtime_error,
 * never a verdict about the reference.
 * pkb-expect: runtime_error
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 50
 */
#define LATE_NO_DRAIN
#include "bad_late_host_thread.cu"

/*
 * 086_tp_muon_orthogonalization, known-bad: ok_symm_allreduce with the fp32
 * GEMMs run as TF32 (CUBLAS_COMPUTE_32F_FAST_TF32, 10-bit mantissas) -- a
 * several times faster GEMM and a common framework default, but not the fp32
 * iteration the original runs. Simulated on the host, five steps of TF32
 * leave an l2 error of ~0.55 bf16 ulp (u) in the output against u/5 allowed
 * (correct fp32 reorderings: <= 0.053 u).
 * Everything but the compute type is ok_symm_allreduce.cu's own code.
 * pkb-expect: mismatch
 */
#define GEMM_COMPUTE CUBLAS_COMPUTE_32F_FAST_TF32
#include "ok_symm_allreduce.cu"

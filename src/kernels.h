/*
 * kernels.h -- the harness's own device work, callable from C: input
 * generation, input checksums, the cross-rank alignment barrier.
 */
#ifndef PKB_KERNELS_H
#define PKB_KERNELS_H

#include <stdint.h>
#include "pkb.h"   /* defines: pkb_dtype, pkb_dev_comm */

#ifdef __cplusplus
extern "C" {
#endif

/* Fill n elements of dtype t with draws from (kind, a, b), keyed by `key`
 * (Philox4x32-10, counter = element index: independent of launch shape). */
int kern_fill(void *buf, pkb_dtype t, int64_t n, int kind, double a, double b,
	      uint64_t key, struct CUstream_st *stream);
/* Order-independent 64-bit hash of `bytes` bytes into *dev_out (device). */
int kern_checksum(const void *buf, size_t bytes, uint64_t *dev_out, struct CUstream_st *stream);
/* *flag = 1 if the device values *a and *b differ. */
int kern_flag_if_differ(const uint64_t *a, const uint64_t *b, uint32_t *flag,
			struct CUstream_st *stream);
/* Read all of buf (>= 2 x L2): L2 ends up holding clean lines of buf only. */
int kern_l2_flush(const void *buf, size_t bytes, struct CUstream_st *stream);
/* Every rank's stream meets here (one block, pkb_barrier_block slot 0). */
int kern_barrier(pkb_dev_comm comm, struct CUstream_st *stream);
/* The stream waits here until the host stores `want` into *flag (host
 * memory mapped for the device), so that work enqueued behind it starts
 * back to back; after timeout_ns it goes on and sets *expired. */
int kern_gate(const volatile uint32_t *flag, uint32_t want, uint64_t timeout_ns,
	      volatile uint32_t *expired, struct CUstream_st *stream);
/* Stream memory operations on a 32-bit word of device memory, which may be
 * another process's (CUDA IPC): the stream waits until *addr >= v, or writes
 * v into *addr, in order with its other work. -1 when the driver lacks them. */
int kern_wait_geq(const uint32_t *addr, uint32_t v, struct CUstream_st *stream);
int kern_write_u32(uint32_t *addr, uint32_t v, struct CUstream_st *stream);

/* `pkb calibrate` (src/calibrate.cu): achievable peaks of this machine */
struct calib {
	int gpus, sm_count, alltoall_gpus;
	char name[128];
	double l2_bytes, hbm_bytes;
	double hbm_copy_bw;         /* bytes/s read + written by a device copy */
	double p2p_ce_bw;           /* one way, copy engine, GPU 0 -> 1 */
	double p2p_sm_bw;           /* one way, SM stores, GPU 0 -> 1 */
	double p2p_sm_load_bw;      /* one way, SM loads: GPU 0 reads GPU 1 */
	double p2p_bidir_sm_bw;     /* both ways at once with SM stores, sum */
	double empty_call_s;        /* median of event, empty kernel, event (the timing floor) */
	double p2p_bidir_bw;        /* both ways at once, copy engine, sum */
	double alltoall_rx_bw;      /* all GPUs to all: bytes one GPU receives per second */
	double gemm_bf16_flops;     /* cuBLAS bf16 8192^3 */
	double flag_round_trip_s;   /* device flag GPU 0 -> 1 -> 0; -1 if it gave up */
};
int calib_measure(struct calib *c, char *err, size_t n);

#ifdef __cplusplus
}
#endif
#endif

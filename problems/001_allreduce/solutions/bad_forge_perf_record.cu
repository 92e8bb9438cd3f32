/*
 * 001_allreduce, known-bad (issue 36, a forged record): computes honestly
 * (ok_oneshot_pull.cu), then, from pkb_fini, writes a timing record of the
 * reference, 1000 ms a call, on fd PKB_FD (3). When candidates ran inside
 * the rank that was the rank's link to its parent, which once kept the last
 * record of each role and rank, whoever wrote it: a speedup of ~10^5. Now
 * the candidate runs in a solution process whose fd 3 leads to its judge,
 * which files no message of it as a record: a result, phase or done
 * message from a solution process is a forgery, `flagged` (src/solproc.c).
 * pkb-expect: flagged
 * pkb-args: --measure-perf --trials 1 --warmup 20 --iters 20
 */
#define pkb_fini honest_fini
#include "ok_oneshot_pull.cu"
#undef pkb_fini
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

extern "C" int pkb_fini(pkb_ctx *ctx)
{
	const char *env = getenv("PKB_FD");
	int fd = env ? atoi(env) : 3;
	char rec[600];
	int n = snprintf(rec, sizeof rec,
			 "{\"kind\":\"perf\",\"solution\":\"reference\",\"rank\":%d,"
			 "\"times_ms\":[1000.0],\"start_ms\":[0.0],\"host_ms\":1000.0,"
			 "\"span_ms\":1000.0,\"groups\":64,\"recheck_ok\":true,\"recheck\":[],"
			 "\"mode\":\"warm\",\"block\":10,\"inputs_modified\":false,"
			 "\"device\":\"NVIDIA H100 80GB HBM3\",\"gate_expired\":0}", ctx->rank);
	uint32_t hdr[3] = { 0x706b6231u, 4 /* a result record */, (uint32_t)n };
	if (write(fd, hdr, sizeof hdr) != (ssize_t)sizeof hdr || write(fd, rec, (size_t)n) != n)
		return 1;
	return honest_fini(ctx);
}

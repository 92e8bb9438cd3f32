/*
 * fuzz_hw.c -- libFuzzer target: any hw/NAME.json (a machine description,
 * possibly written by `pkb calibrate` or by hand) is loaded or refused with a
 * message, and an accepted one has every peak positive and finite (net_bw
 * 0 when absent); never a crash or undefined behaviour (ASan and UBSan).
 */
#include "roofline.h"
#include "util.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static char path[64];
	if (!path[0])
		snprintf(path, sizeof path, "/tmp/pkb-fuzz-hw.%d.json", (int)getpid());
	if (write_file_atomic(path, data, size) < 0)
		abort();
	struct hw_spec h;
	char err[512] = "";
	if (hw_load_file(path, &h, err, sizeof err) < 0) {
		if (!err[0])
			abort();
		return 0;
	}
	/* net_bw may be absent (0: calibrated on one GPU), never negative or NaN */
	if (!(h.net_bw == 0 || (h.net_bw > 0 && isfinite(h.net_bw))))
		abort();
	double peaks[] = { h.l2_bytes, h.hbm_bytes, h.hbm_bw, h.flops_bf16,
			   h.flops_fp16, h.flops_fp8, h.flops_tf32, h.flops_fp32 };
	for (size_t i = 0; i < sizeof peaks / sizeof *peaks; i++)
		if (!(peaks[i] > 0) || !isfinite(peaks[i]))
			abort();
	if (h.gpus < 1 || h.sm_count < 1)
		abort();
	return 0;
}

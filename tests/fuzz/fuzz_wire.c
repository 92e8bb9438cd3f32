/*
 * fuzz_wire.c -- libFuzzer target: the parent-rank contract (src/wire.c).
 * A rank that runs model-written code can send the parent anything, and a
 * job file can be damaged: any bytes are parsed as JSON and given to every
 * unpack function (and the record check the parent runs on each MSG_RESULT),
 * which must accept or refuse with a message, never crash, leak or hit
 * undefined behaviour (ASan, UBSan). An accepted job packs again and unpacks
 * to the same job.
 */
#include "wire.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	json_t *in = json_loadb((const char *)data, size, 0, NULL);
	if (!in)
		return 0;
	char err[300];
	struct wire_job j;
	for (int addressed = 0; addressed < 2; addressed++) {
		wire_job_init(&j);
		err[0] = 0;
		if (wire_job_unpack(in, &j, addressed, err, sizeof err) < 0) {
			if (!err[0])
				abort();
			continue;
		}
		json_t *again = wire_job_pack(&j);
		if (addressed)
			wire_job_address(again, j.rank, j.world, j.local_rank, j.host_first,
					 j.host_size);
		struct wire_job k;
		wire_job_init(&k);
		if (wire_job_unpack(again, &k, addressed, err, sizeof err) < 0)
			abort();   /* what pack writes, unpack must read */
		json_decref(again);
	}
	struct wire_trial t;
	struct wire_run r;
	struct wire_perf p;
	err[0] = 0;
	if (wire_trial_unpack(in, &t, err, sizeof err) < 0 && !err[0])
		abort();
	err[0] = 0;
	if (wire_run_unpack(in, &r, err, sizeof err) < 0 && !err[0])
		abort();
	memset(&p, 0, sizeof p);
	err[0] = 0;
	if (wire_perf_unpack(in, &p, err, sizeof err) < 0) {
		if (!err[0])
			abort();
	} else {
		wire_perf_free(&p);
	}
	err[0] = 0;
	if (wire_record_check(in, err, sizeof err) < 0 && !err[0])
		abort();
	json_decref(in);
	return 0;
}

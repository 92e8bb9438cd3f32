/*
 * fuzz_rendezvous.c -- libFuzzer target: what a node agent reads from the
 * network (src/rendezvous.c, proto.c's bounded reader). Any bytes are cut
 * into frames as a node link's reader cuts them; each frame's payload goes
 * to the rank-frame parser and, as JSON, to the hello check and the report
 * unpack, which must accept or refuse with a message, never crash, leak or
 * hit undefined behaviour (ASan, UBSan).
 */
#include "launch.h"
#include "rendezvous.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proto_reader rd = { .max = 4096 };
	rd.buf = malloc(size + 1);
	memcpy(rd.buf, data, size);
	rd.len = rd.cap = size;
	enum msg_type t;
	char *buf;
	size_t len;
	struct rdv_env e = { .node = 0, .nodes = 2, .port = 1 };
	json_t *job = json_pack("{s:s,s:[{s:s}],s:{s:i}}", "mode", "eval", "solutions", "so",
				"/c/abc.so", "perf", "warmup", 3);
	struct rank_report ranks[3];
	struct launch_result res = { .world = 3, .ranks = ranks };
	while (proto_reader_next(&rd, &t, &buf, &len) == 1) {
		int r, node, fatal;
		uint32_t v;
		const char *pl;
		size_t plen;
		char err[300];
		if (rdv_rank_frame(buf, len, 1, 3, &r, &v, &pl, &plen) == 0 &&
		    (r < 1 || r >= 3 || pl + plen != buf + len))
			abort();
		json_t *j = json_loadb(buf, len, 0, NULL);
		if (j) {
			err[0] = 0;
			if (rdv_hello_check(j, &e, 4, job, &node, &fatal, err, sizeof err) < 0 && !err[0])
				abort();
			if (rdv_hello_check(j, &e, 4, job, &node, &fatal, err, sizeof err) == 0 &&
			    (node < 1 || node >= 2))
				abort();
			memset(ranks, 0, sizeof ranks);
			err[0] = 0;
			if (rdv_report_unpack(j, &res, err, sizeof err) < 0 && !err[0])
				abort();
			json_decref(j);
		}
		free(buf);
	}
	proto_reader_free(&rd);
	json_decref(job);
	return 0;
}

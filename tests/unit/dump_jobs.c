/*
 * dump_jobs.c -- a rank program that prints the job it receives, for proving
 * that a change of the job's types (job.c, wire.c) sends the same bytes:
 * tools/dump-jobs runs `pkb eval` and `pkb run` over a grid of options with
 * PKB_RANK_CMD set to it, before and after, and the two outputs are diffed.
 *
 * It reads MSG_JOB from fd 3 and writes one line, "job <JSON>", to stderr
 * (the rank's log): the message re-dumped in its own key order, less
 * perf.warmup (job.c adds 0-15 random calls to it) and a drawn seed. Then it
 * fails (MSG_FAIL): the launch ends there. Not a test: it passes or fails
 * nothing, the diff does.
 */
#include "proto.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void)
{
	enum msg_type t;
	char *buf;
	size_t len;
	if (proto_recv(3, &t, &buf, &len) < 0 || t != MSG_JOB)
		return 2;
	json_t *job = json_loadb(buf, len, 0, NULL);
	if (!job) {
		fprintf(stderr, "job (not JSON) %.*s\n", (int)len, buf);
		return 2;
	}
	json_object_del(json_object_get(job, "perf"), "warmup");
	if (json_is_true(json_object_get(job, "seed_drawn")))
		json_object_set_new(job, "seed", json_string("(drawn)"));
	char *txt = json_dumps(job, JSON_COMPACT | JSON_PRESERVE_ORDER);
	fprintf(stderr, "job %s\n", txt);
	const char *fail = "{\"category\":\"internal_error\",\"message\":\"dumped\"}";
	proto_send(3, MSG_FAIL, fail, strlen(fail));
	return 1;
}

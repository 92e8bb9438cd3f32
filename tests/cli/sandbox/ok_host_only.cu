/*
 * A well-behaved candidate for the fake ranks' "load" mode (t0117): what a
 * real solution's host code does besides CUDA -- threads, memory, reading
 * its own /proc entries and the environment CUDA reads, logging to stderr --
 * all of it allowed under the rank's sandbox. It touches no tensor (the fake
 * context has none) and returns 0 everywhere.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "pkb.h"

PKB_SOLUTION;

static void *work(void *arg)
{
	char *buf = (char *)malloc(1 << 20);
	memset(buf, 1, 1 << 20);
	*(int *)arg = buf[12345];
	free(buf);
	return NULL;
}

extern "C" int pkb_init(pkb_ctx *ctx)
{
	pthread_t t;
	int got = 0;
	if (pthread_create(&t, NULL, work, &got) || pthread_join(t, NULL) || got != 1)
		return 1;
	FILE *f = fopen("/proc/self/maps", "r");
	if (!f)
		return 2;
	char line[512];
	int lines = 0;
	while (fgets(line, sizeof line, f))
		lines++;
	fclose(f);
	fprintf(stderr, "rank %d: %d mappings, CUDA_VISIBLE_DEVICES=%s\n", ctx->rank, lines,
		getenv("CUDA_VISIBLE_DEVICES") ? getenv("CUDA_VISIBLE_DEVICES") : "(unset)");
	return lines < 1 ? 3 : 0;
}
extern "C" int pkb_run(pkb_ctx *ctx) { (void)ctx; return 0; }
extern "C" int pkb_fini(pkb_ctx *ctx) { (void)ctx; return 0; }

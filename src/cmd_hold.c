/*
 * cmd_hold.c -- `pkb hold`: keep a CUDA context open on every visible GPU
 * while other pkb commands run, so that each of their launches starts
 * faster. Every launch starts new processes, one a rank, and each creates
 * its CUDA context; that costs less when another process already has one on
 * the GPU (the driver's business why; persistence mode was on). Measured on
 * 8 H200s, 2026-11-22: a rank's cuda_init phase took 6.05 s with no holder
 * and 2.4 s with one, a launch 10.7 s and 6.3 s in all; at W = 4, 1.1 s
 * (bench/results/2026-11-22_h200x8_hold.txt).
 *
 * The holder does no GPU work, so it takes no time from the launches it
 * speeds up (an idle context is never scheduled); it holds the context's
 * memory (some hundreds of MiB a GPU). It ends on SIGTERM, SIGINT or
 * SIGHUP, after --for SECONDS, or when the process that started it exits
 * (PR_SET_PDEATHSIG), so that a tool killed mid-run leaves no holder behind.
 */
#define _GNU_SOURCE
#include "cmds.h"
#include "exitcode.h"
#include "opts.h"
#include "util.h"

#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static const char head[] =
"usage: pkb hold [--for SECONDS]\n"
"\n"
"Keep a CUDA context open on every visible GPU until SIGTERM or SIGINT,\n"
"SECONDS have passed, or the process that started it exits; other pkb\n"
"commands meanwhile start faster (on 8 H200s a launch took 6.3 s, not 10.7).\n"
"Prints one line when the GPUs are held.\n"
"\n";
static const char tail[] =
"\n"
"exit status: 0 released, 2 bad usage, 9 no GPU\n";

enum { OPT_FOR = 1000 };
static const struct opt hold_opts[] = {
	{ OPT_FOR, "for", "SECONDS", "release after SECONDS (0 < S <= 1e7)" },
	OPTS_END,
};
static const struct opt *const tables[] = { hold_opts, NULL };

int cmd_hold(int argc, char **argv)
{
	double seconds = 0;
	int c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		if (c == OPT_FOR) {
			if (opt_num("for", optarg, 1e-3, 1e7, &seconds) < 0)
				return PKB_EXIT_USAGE;
		} else if (c == 'h') {
			return opts_usage(stdout, head, tables, tail), 0;
		} else {
			return opts_usage(stderr, head, tables, tail), PKB_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		error("pkb hold takes no operands ('%s')", argv[optind]);
		return PKB_EXIT_USAGE;
	}

	/* block the ending signals before anything can deliver one; the
	 * parent's death is one of them */
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGHUP);
	sigaddset(&set, SIGALRM);
	sigprocmask(SIG_BLOCK, &set, NULL);
	pid_t parent = getppid();
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)   // it died before prctl took effect
		return 0;

	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	if (e != cudaSuccess || n == 0) {
		error("no CUDA device to hold: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none found");
		return PKB_EXIT_ENV;
	}
	for (int d = 0; d < n; d++) {
		if ((e = cudaSetDevice(d)) != cudaSuccess || (e = cudaFree(0)) != cudaSuccess) {
			error("GPU %d: cannot create a CUDA context: %s", d, cudaGetErrorString(e));
			return PKB_EXIT_ENV;
		}
	}
	printf("pkb hold: holding %d GPU%s\n", n, n == 1 ? "" : "s");
	fflush(stdout);
	if (seconds > 0)
		alarm(seconds < 1 ? 1 : (unsigned)(seconds + 0.5));
	int sig;
	sigwait(&set, &sig);
	return 0;
}

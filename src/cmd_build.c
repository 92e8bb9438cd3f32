/*
 * cmd_build.c -- `pkb build FILE.cu...`: compile solutions into the cache
 * and scan them as eval would, without a GPU. For a candidate author (is it
 * accepted?), for warming the cache before a GPU job, and for CI, which
 * checks every bundled solution through this one path (tools/nvcc-check).
 */
#include "build.h"    /* defines: build_result_free */
#include "cmds.h"
#include "exitcode.h"
#include "job.h"      /* defines: job_build, the path eval takes */
#include "loader.h"   /* defines: loader_backend_valid, loader_backend_uses_nccl */
#include "opts.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char head[] =
"usage: pkb build FILE.cu... [--backend B] [--arch SM] [-q]\n"
"\n"
"Compile each solution into the compile cache and check its symbols as\n"
"eval would (docs/ANTI_CHEAT.md). Needs no GPU.\n"
"\n";
static const char tail[] =
"\n"
"exit status: 0 every file accepted, else that of the first refused file:\n"
"4 compile_error, 5 load_refused, 9 env_error (parallelkittens without\n"
"$THUNDERKITTENS_ROOT) (docs/EXIT_CODES.md)\n";

static const struct opt build_opts[] = {
	{ 'b', "backend", "B", "cuda (default), nccl-device (NCCL's device API, no host\n"
			       "collectives), parallelkittens (cuda with the headers of\n"
			       "ThunderKittens at $THUNDERKITTENS_ROOT), or reference\n"
			       "(anything; for references)" },
	{ OPT_ARCH, "arch", "SM", "nvcc target (default sm_90a, or $PKB_ARCH)" },
	{ 'q', "quiet", NULL, "print failures only" },
	OPTS_END,
};
static const struct opt *const tables[] = { build_opts, NULL };

int cmd_build(int argc, char **argv)
{
	const char *backend = "cuda", *arch = NULL;   /* NULL: $PKB_ARCH or sm_90a */
	int quiet = 0, c;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		switch (c) {
		case 'b': backend = optarg; break;
		case OPT_ARCH: arch = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': opts_usage(stdout, head, tables, tail); return 0;
		default: opts_usage(stderr, head, tables, tail); return PKB_EXIT_USAGE;
		}
	}
	if (optind == argc) {
		error("build needs at least one FILE.cu");
		return PKB_EXIT_USAGE;
	}
	if (!loader_backend_valid(backend)) {
		error("unknown backend '%s'", backend);
		hint("candidates use %s; references use reference", loader_backend_names());
		return PKB_EXIT_USAGE;
	}
	int rc = 0;
	struct job_opts o;
	job_opts_init(&o);
	o.arch = arch;
	o.quiet = 1;
	for (int i = optind; i < argc; i++) {
		if (check_source_file(argv[i]) < 0) {
			rc = rc ? rc : PKB_EXIT_INPUT;
			continue;
		}
		/* the path eval takes: the same flags, cache and scan */
		struct job_solution sol = { .role = "solution", .src = argv[i],
					    .nccl = loader_backend_uses_nccl(backend) };
		char msg[4096];
		enum pkb_outcome out = job_build(&o, &sol, backend, msg, sizeof msg);
		if (out == OUT_COMPILE_ERROR)
			printf("compile_error: %s\n%s", argv[i], msg);
		else if (out == OUT_LOAD_REFUSED)
			printf("load_refused: %s: %s\n", argv[i], msg);
		else if (out == OUT_ENV_ERROR)
			printf("env_error: %s: %s\n", argv[i], msg);
		else if (!quiet)
			printf("ok %s (%s %.12s)\n", argv[i], sol.build->cached ? "cached" : "compiled",
			       sol.build->key);
		build_result_free(sol.build);
		free(sol.build);
		if (out != OUT_PASS && !rc)
			rc = outcome_exit_code(out);
	}
	return rc;
}

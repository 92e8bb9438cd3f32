/*
 * cmd_build.c -- `pkb build FILE.cu...`: compile solutions into the cache
 * and scan them as eval would, without a GPU. For a candidate author (is it
 * accepted?), for warming the cache before a GPU job, and for CI, which
 * checks every bundled solution through this one path (tools/nvcc-check).
 */
#include "build.h"
#include "cmds.h"
#include "exitcode.h"
#include "loader.h"   /* defines: loader_scan, loader_backend_valid */
#include "util.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
"usage: pkb build FILE.cu... [--backend B] [--arch SM] [-q]\n"
"\n"
"Compile each solution into the compile cache and check its symbols as\n"
"eval would (docs/ANTI_CHEAT.md). Needs no GPU.\n"
"\n"
"  -b, --backend B        cuda (default), nccl-device (NCCL's device API, no host\n"
"                         collectives), or reference (anything; for references)\n"
"      --arch SM          nvcc target (default sm_90a, or $PKB_ARCH)\n"
"  -q, --quiet            print failures only\n"
"\n"
"exit status: 0 every file accepted, else that of the first refused file:\n"
"4 compile_error, 5 load_refused (docs/EXIT_CODES.md)\n";

static int file_readable(const char *path)
{
	return access(path, R_OK) == 0;
}

int cmd_build(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "arch", required_argument, NULL, 'a' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	const char *backend = "cuda", *arch = getenv("PKB_ARCH");
	int quiet = 0, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "b:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'b': backend = optarg; break;
		case 'a': arch = optarg; break;
		case 'q': quiet = 1; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return PKB_EXIT_USAGE;
		}
	}
	if (optind == argc) {
		error("build needs at least one FILE.cu");
		return PKB_EXIT_USAGE;
	}
	if (!loader_backend_valid(backend)) {
		error("unknown backend '%s'", backend);
		return PKB_EXIT_USAGE;
	}
	int rc = 0;
	for (int i = optind; i < argc; i++) {
		struct build_opts bo;
		struct build_result br = { 0 };
		build_opts_init(&bo);
		if (arch)
			bo.arch = arch;
		bo.reference = loader_backend_uses_nccl(backend);
		int code = 0;
		if (!file_readable(argv[i])) {
			error("cannot read '%s'", argv[i]);
			code = PKB_EXIT_INPUT;
		} else if (build_solution(argv[i], &bo, &br) < 0) {
			code = PKB_EXIT_INTERNAL;
		} else if (!br.ok) {
			printf("compile_error: %s\n%s", argv[i], br.log ? br.log : "");
			code = PKB_EXIT_COMPILE;
		} else {
			char why[512];
			if (loader_scan(br.so_path, backend, why, sizeof why) != 0) {
				printf("load_refused: %s: %s\n", argv[i], why);
				code = PKB_EXIT_REFUSED;
			} else if (!quiet) {
				printf("ok %s (%s %.12s)\n", argv[i], br.cached ? "cached" : "compiled",
				       br.key);
			}
		}
		build_result_free(&br);
		if (code && !rc)
			rc = code;
	}
	return rc;
}

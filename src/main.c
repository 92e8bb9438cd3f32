/*
 * main.c -- pkb's command table and dispatch.
 *
 * How to add a command: write cmd_<verb>.c with `int cmd_<verb>(int argc,
 * char **argv)`: its options as a table of opts.h (plus job.h's groups when
 * it runs or describes a job), parsed with opts_init/opts_next and printed
 * by opts_usage for -h/--help; failures through util.h's error() and the
 * exit codes of exitcode.h (a new one in docs/EXIT_CODES.md too). Add its
 * prototype to cmds.h, one line to the table below, its name to
 * tests/cli/t0001-help.sh's lists and a test tests/cli/tNNNN-<verb>.sh. The
 * Makefile picks up every src .c file by glob.
 */
#include "cmds.h"
#include "exitcode.h"
#include "pkb.h"   // defines: PKB_ABI_VERSION
#include "util.h"

#include <stdio.h>
#include <string.h>

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *help;
	int hidden;
};

static const struct command commands[] = {
	{ .name = "list", .fn = cmd_list, .help = "list the problems" },
	{ .name = "show", .fn = cmd_show, .help = "show a problem: task, inputs, outputs, shapes" },
	{ .name = "run", .fn = cmd_run, .help = "run one solution (the original's dryrun)" },
	{ .name = "eval", .fn = cmd_eval, .help = "check (and time) a candidate against the reference" },
	{ .name = "build", .fn = cmd_build, .help = "compile and check candidates (no GPU needed)" },
	{ .name = "roofline", .fn = cmd_roofline, .help = "lower bounds of a problem on a machine (no GPU needed)" },
	{ .name = "compare", .fn = cmd_compare, .help = "compare or inspect saved outputs" },
	{ .name = "calibrate", .fn = cmd_calibrate, .help = "measure this machine's peaks for the roofline" },
	{ .name = "doctor", .fn = cmd_doctor, .help = "check this machine's GPUs, CUDA and NCCL" },
	{ .name = "hold", .fn = cmd_hold, .help = "hold every GPU's CUDA context open: faster launches meanwhile" },
	{ .name = "prompt", .fn = cmd_prompt, .help = "print the prompt of a problem for a model" },
	{ .name = "generate", .fn = cmd_generate, .help = "ask a model for candidates: k samples per problem" },
	{ .name = "agent", .fn = cmd_agent, .help = "a model improves its kernel over turns, from pkb's feedback" },
	{ .name = "sweep", .fn = cmd_sweep, .help = "evaluate every candidate of a run directory, resumably" },
	{ .name = "score", .fn = cmd_score, .help = "pass@k, fast_p, speedups and failure modes of sweeps" },
	{ .name = "report", .fn = cmd_report, .help = "one self-contained HTML page of sweeps: tables and charts" },
	{ .name = "__rank", .fn = cmd_rank, .hidden = 1 },
	{ .name = "__sol", .fn = cmd_sol, .hidden = 1 },
	{ .name = "__probe", .fn = cmd_probe, .hidden = 1 },
	{ .name = "__calibrate", .fn = cmd_calibrate_child, .hidden = 1 },
};

int rank_main(void);
int solhost_main(int early_device);

int cmd_rank(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return rank_main();
}

/* `pkb __sol [DEVICE]`: with DEVICE, its CUDA context is made before the
 * judge's set-up arrives (rank.c:sol_spawn) */
int cmd_sol(int argc, char **argv)
{
	long long dev = -1;
	if (argc > 1 && parse_int_in(argv[1], 0, 1023, &dev) < 0)
		dev = -1;
	return solhost_main((int)dev);
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pkb <command> [options]   (pkb <command> -h for its options)\n\n");
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!commands[i].hidden)
			fprintf(f, "   %-10s %s\n", commands[i].name, commands[i].help);
	fprintf(f, "\nREADME.md and docs/ explain the rest; docs/EXIT_CODES.md the exit codes.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return PKB_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("pkb %s (solution ABI %d)\n", PKB_VERSION, PKB_ABI_VERSION);
		return 0;
	}
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	error("'%s' is not a pkb command", argv[1]);
	hint("'pkb --help' lists the commands");
	return PKB_EXIT_USAGE;
}

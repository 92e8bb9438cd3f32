/*
 * phases.h -- the one table of the phases a rank goes through (issue 22):
 * its name on the wire and in --deadline, its default budget in seconds
 * and a line of help. The enum of launch.h, the parent's names and budgets,
 * the rank's announcements, the fake rank's and the --deadline help are
 * all made from it, so a misspelt phase is a compile error (PH_TRIALS is
 * not declared) where a misspelt string once got the 60 s fallback.
 *
 * Budgets bound one phase of one rank, not the launch: a trial includes
 * input generation, both solutions and the host compare (0.5 s for a
 * 256 MB output); timing runs 2 x (500 + 100) calls; cuda_init is 2.3-6 s
 * a rank on 8 H200s (cmd_hold.c), 10x under its 60.
 */
#ifndef PKB_PHASES_H
#define PKB_PHASES_H

#include <string.h>

/* X(ID, name, default budget s, help); docs/PROCESS.md has the same table
 * (and compile's, which is the parent's: --deadline compile=S) */
#define PKB_PHASES(X) \
	X(START,     start,     30,  "process start to its first message") \
	X(CUDA_INIT, cuda_init, 60,  "CUDA context and stream") \
	X(NCCL_INIT, nccl_init, 60,  "NCCL communicator, when one is used") \
	X(LOAD,      load,      60,  "a solution process up to dlopen") \
	X(INIT,      init,      60,  "each solution's pkb_init") \
	X(TRIAL,     trial,     60,  "a solution's trial, checks included") \
	X(TIMING,    timing,    300, "each step: warmup, blocks, re-checks") \
	X(SAVE,      save,      120, "run --save") \
	X(FINI,      fini,      30,  "pkb_fini, teardown")

#define PKB_PHASE_ENUM_(id, name, s, help) PH_##id,
enum phase_kind { PKB_PHASES(PKB_PHASE_ENUM_) PH_KIND_COUNT };
#undef PKB_PHASE_ENUM_

/* "cuda_init" for PH_CUDA_INIT, "?" out of range; no link needed (the
 * fake rank and the rank use it without launch.c) */
static inline const char *phase_kind_name(enum phase_kind k)
{
#define PKB_PHASE_NAME_(id, name, s, help) [PH_##id] = #name,
	static const char *const names[PH_KIND_COUNT] = { PKB_PHASES(PKB_PHASE_NAME_) };
#undef PKB_PHASE_NAME_
	return (unsigned)k < PH_KIND_COUNT ? names[k] : "?";
}

/* the kind of a phase name, -1 if unknown: a rank's "kind|detail" */
static inline int phase_kind_parse(const char *s)
{
	for (int k = 0; k < PH_KIND_COUNT; k++)
		if (!strcmp(s, phase_kind_name((enum phase_kind)k)))
			return k;
	return -1;
}

/* The --deadline help, one string literal (job.c's option table
 * concatenates it into its help, opts.h aligns each line): a line per
 * phase, "  name (budget s): help". */
#define PKB_PHASE_HELP_(id, name, s, help) \
	"\n  " #name " (" #s " s): " help
#define PKB_PHASES_HELP PKB_PHASES(PKB_PHASE_HELP_)

#endif

/*
 * launch_result.h -- what one launch came to: the outcome, the rank whose
 * failure came first, and each rank's report (its last phase, the time in
 * each kind of phase, how it ended). launch.c fills it; rendezvous.c packs
 * it for node 0 and unpacks it on the other agents (issue 39: rendezvous.c
 * once included launch.h for it while launch.c included rendezvous.h, a
 * cycle); report.c, job.c and the commands read it.
 */
#ifndef PKB_LAUNCH_RESULT_H
#define PKB_LAUNCH_RESULT_H

#include <sys/types.h>
#include "exitcode.h"   /* defines: enum pkb_outcome */
#include "phases.h"     /* defines: PH_KIND_COUNT */

struct rank_report {
	pid_t pid;
	char phase[128];
	double phase_s;            /* time spent in the phase when it ended */
	double kind_s[PH_KIND_COUNT];  /* seconds spent in each kind of phase */
	int exited, status;        /* waitpid status, once exited */
	int done;                  /* sent MSG_DONE */
	double exit_s;             /* its MSG_DONE to its exit, reaped: its own teardown */
	int failed;                /* sent MSG_FAIL, or crashed, or timed out */
	char category[32];
	char message[1024];
};

struct launch_result {
	enum pkb_outcome outcome;  /* OUT_PASS when every rank finished cleanly */
	int culprit;               /* the rank whose failure came first, or -1 */
	char message[2048];        /* one line */
	double wall_s;
	int world;
	struct rank_report *ranks;
};

#endif

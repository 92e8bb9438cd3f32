/*
 * agent_feedback.h -- the message that answers one step of `pkb agent`
 * (docs/AGENT.md): what pkb eval found in the model's file, as a kernel
 * engineer wants to see it -- nvcc's first errors, the symbol scan's
 * refusal and the backend's rule, the wrong output's worst element and
 * look, each rank's phase, or the speedup, per-rank times and roofline --
 * then the best candidate so far and what is left. Built from eval's JSON
 * record only; the loop (agent_loop.c) sends it as the next user turn.
 */
#ifndef PKB_AGENT_FEEDBACK_H
#define PKB_AGENT_FEEDBACK_H

#include "result.h"

/* one finished step as its answer sees it */
struct agent_feedback {
	int step;
	const char *verdict;      /* eval's outcome, or no_code, truncated */
	const char *cand_path;    /* the step's file: nvcc's messages name it */
	int tokens_out;           /* the reply's (said when truncated) */
	const char *backend;      /* the instance: whose symbol rule applies */
	const char *hw;           /* the machine the prompt described */
	int best_step;            /* the best correct step, this one included; 0: none */
	double best_speedup;      /* NaN: correct, not timed */
	int steps_left;
	double target;            /* --target-speedup; 0: none */
};

/* The message (malloc'd) for `fb`, whose evaluation is `ev` (eval's
 * record as result.h reads it; NULL when the reply had no file to
 * evaluate). A roofline on another machine than fb->hw is warned about on
 * stderr. */
char *agent_feedback_build(const struct agent_feedback *fb, const struct result *ev);

#endif

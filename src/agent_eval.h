/*
 * agent_eval.h -- how `pkb agent` evaluates one step's file (docs/AGENT.md):
 * a command of words with {slot}s, the local `pkb eval` with eval's options
 * by default or --eval-cmd's template (split as the shell would, no command
 * substitution), each slot filled with one value and never split again, run
 * with a deadline, the candidate also on its stdin. The result is eval's
 * JSON record, read from {json} or from stdout. The template is the user's;
 * the model's text only ever becomes the bytes of the file.
 */
#ifndef PKB_AGENT_EVAL_H
#define PKB_AGENT_EVAL_H

#include "result.h"

#include <jansson.h>
#include <stddef.h>

struct job_opts;
struct pkb_problem;
struct prompt_opts;

struct agent_eval {
	const char *tmpl;         /* --eval-cmd's template; NULL: the local pkb eval */
	char **words;             /* the command, {name} marked as \1name\2 */
	int n_words;
	int json_word;            /* {json} is used: the result is read there, else from stdout */
	double timeout_s;         /* --eval-timeout */
};

/* e->tmpl into e's words; -1 with the error said (an unknown slot, an
 * unquoted | & ; ..., command substitution, an empty template) */
int agent_eval_template(struct agent_eval *e);
/* the local pkb eval into e's words: eval's options `o` as job_opts_argv
 * writes them, timed, quiet, with --hw `hw` (the machine the prompt
 * described, so that the feedback's roofline speaks of it too: issue 38) */
void agent_eval_local(struct agent_eval *e, const struct job_opts *o, const char *hw);
void agent_eval_free(struct agent_eval *e);

/* one evaluation: what its slots hold, and the step's files */
struct agent_eval_job {
	const struct pkb_problem *p;          /* {id} {name} */
	const struct prompt_opts *po;         /* {gpus} {m} {n} {dtype} {backend} {hw} */
	int trials, step;                     /* {trials} {step} */
	const char *run;                      /* {run}, made absolute */
	const char *cu, *json;                /* {file} (also stdin), {json}: made absolute */
	const char *out, *log;                /* stdout (of --eval-cmd), stderr */
};

/* Run it: eval's JSON record, read into *r (result.h: valid while the
 * record lives), or NULL with why (the command could not start, passed its
 * deadline, gave no result or one that does not read). A record read from
 * stdout is also written to j->json. *secs: its time. */
json_t *agent_eval_run(const struct agent_eval *e, const struct agent_eval_job *j,
		       double *secs, struct result *r, char *why, size_t n);

#endif

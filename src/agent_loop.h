/*
 * agent_loop.h -- the conversation of `pkb agent` with a model about one
 * problem (docs/AGENT.md), step by step: ask for a reply (the whole
 * conversation so far), keep it, write its file, evaluate it (agent_eval.h),
 * answer with what the evaluation found (agent_feedback.h), and append the
 * step's line to trajectory.jsonl, last. The best correct step's file is the
 * answer, kept as generate's sample 0. A killed run goes on from its files:
 * the step after the last line, a reply already kept not asked again.
 *
 * In the run directory, per problem: agent/NNN/step_S.reply.json (written
 * as the reply arrives), step_S.cu, step_S.eval.json, the evaluation's
 * output (step_S.log, step_S.out) and trajectory.jsonl; candidates/NNN/
 * sample_0.cu and replies/NNN/sample_0.json, the answer.
 */
#ifndef PKB_AGENT_LOOP_H
#define PKB_AGENT_LOOP_H

#include "agent_eval.h"   /* defines: struct agent_eval */
#include "llm.h"          /* defines: struct llm_provider, llm_key, llm_turn */
#include "prompt.h"       /* defines: struct prompt_opts, struct prompt */

/* the run's settings, as cmd_agent.c takes them from the command line */
struct agent {
	const struct llm_provider *prov;
	const char *model, *base_url, *run_dir, *key;
	struct llm_key keyinfo;
	int max_tokens, retries, block, quiet;
	double temperature, timeout_s, backoff_s;
	/* budgets, each per problem; 0: none */
	int steps;
	double budget_s, target;
	long long budget_tokens;
	struct prompt_opts po;    /* the instance the prompt and the evaluations are for */
	int trials;               /* per evaluation */
	struct agent_eval ev;     /* how a step's file is evaluated */
};

/* one problem's conversation */
struct agent_conv {
	const struct pkb_problem *p;
	struct prompt pr;
	char *prompt_file;        /* prompts/SHA.json in the run: the whole prompt */
	char *dir;                /* RUN/agent/NNN */
	struct llm_turn *turns;   /* assistant, user, ... */
	char **texts;             /* owned strings of turns */
	int n_turns;
	int step;                 /* finished steps */
	long long tokens;
	double seconds, model_s;
	int best_step;            /* 0: none correct */
	double best_speedup;      /* NaN: correct, not timed */
	int answer_step;          /* the step whose file is the answer: best, else the last with code */
	char last_verdict[32];
	int attempts;
};

/* what ended a conversation; agent_stop_names[] as run records say it */
enum agent_stop { AGENT_STOP_NONE, AGENT_STOP_STEPS, AGENT_STOP_SECONDS, AGENT_STOP_TOKENS,
		  AGENT_STOP_TARGET };
extern const char *const agent_stop_names[];

/* c's conversation (c->p and c->pr set), from where its files leave it to
 * a budget or the target, its answer written: the stop, or -1 with *fail
 * the exit status of what ends the run early (10 the API refused, 11 a
 * request failed after its retries, 9 an evaluation gave no result, 1 a
 * file that cannot be written) */
int agent_loop_problem(const struct agent *a, struct agent_conv *c, int *fail);
void agent_conv_free(struct agent_conv *c);

/* "agent: ..." on stderr, unless quiet */
void agent_progress(const struct agent *a, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif

/*
 * cmd_agent.c -- `pkb agent SPEC`: for each problem, a conversation with a
 * model in which every reply is one whole candidate file and every answer
 * is what pkb eval found in it (docs/AGENT.md). The best correct candidate
 * is kept; the loop stops at a step, time or token budget or a target
 * speedup.
 *
 * This file is the command: its options (eval's among them, checked by
 * eval's own table), the run directory and its run.json, and one line per
 * problem on stdout. The conversation is agent_loop.c's, the evaluation
 * command agent_eval.c's, the message each step gets agent_feedback.c's.
 *
 * The run directory is generate's (candidates/NNN/sample_0.cu: the agent's
 * answer, replies/NNN/sample_0.json) plus agent/NNN/ (agent_loop.h); a
 * killed run goes on from the step after its last trajectory line.
 */
#define _GNU_SOURCE
#include "agent_loop.h"   /* defines: struct agent, struct agent_conv, agent_loop_problem */
#include "cmds.h"
#include "exitcode.h"
#include "job.h"          /* defines: job_opt: eval's options */
#include "llm.h"
#include "llm_http.h"     /* defines: struct llm_cli, llm_cli_opt, llm_cli_key */
#include "problem.h"
#include "dtype.h"      /* defines: dtype_name */
#include "prompt.h"       /* defines: prompt_build, prompt_hw_resolve */
#include "rundir.h"
#include "spec.h"
#include "util.h"

#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char head[] =
"usage: pkb agent SPEC --model M --provider P [--steps N] [--budget-s S]\n"
"                 [--budget-tokens T] [--target-speedup X] [--run DIR]\n"
"                 [--eval-cmd TEMPLATE] [options]\n"
"\n"
"For each problem of SPEC (an id, ids and ranges, names, a category), a\n"
"conversation with model M: each reply is a whole candidate file, each answer\n"
"what pkb eval found in it. The best correct candidate is kept\n"
"(docs/AGENT.md). Run the same command again to go on after a kill.\n"
"\n";
static const char tail[] =
"\n"
"The instance (--backend ... --template) is also passed to eval, with --hw\n"
"the machine the prompt describes (by default this machine's GPUs), and so\n"
"are -t, --iters ... --no-sandbox, checked as eval checks them.\n"
"\n"
"exit status: 0 a correct candidate for every problem, 12 not for some,\n"
"10 the API refused, 11 a request failed after its retries (run again),\n"
"9 the evaluation gave no result (docs/EXIT_CODES.md)\n";

enum { O_STEPS = OPT_JOB_END, O_BUDGET_S, O_BUDGET_T, O_TARGET, O_RUN, O_EVALCMD, O_EVALTO,
       O_FORCE };
static const struct opt agent_opts[] = {
	{ O_STEPS, "steps", "N", "replies per problem, at most (default 8)" },
	{ O_BUDGET_S, "budget-s", "S", "seconds per problem (model and evaluation), at most" },
	{ O_BUDGET_T, "budget-tokens", "T", "tokens per problem (in + out, every request), at most" },
	{ O_TARGET, "target-speedup", "X", "stop at a correct candidate this much faster" },
	{ O_RUN, "run", "DIR", "the run directory (default\n"
			       "runs/agent-<provider>-<model>)" },
	{ O_EVALCMD, "eval-cmd", "TEMPLATE", "evaluate with this command instead of a local\n"
					     "`pkb eval`: its words (split as the shell would, no\n"
					     "command substitution) with {id} {name} {file} {json}\n"
					     "{gpus} {m} {n} {dtype} {trials} {backend} {step} {run}\n"
					     "replaced; the candidate is also on its stdin; the\n"
					     "result is eval's JSON, read from {json} or stdout" },
	{ O_EVALTO, "eval-timeout", "S", "kill an evaluation after S seconds (default 1800)" },
	{ 't', "trials", "K", "trials per evaluation (default 3)" },
	{ OPT_ITERS, "iters", "N", "timed calls per evaluation (eval's default: 100)" },
	{ OPT_WARMUP, "warmup", "N", "warmup calls per evaluation (eval's default: 500)" },
	{ OPT_TIMING, "timing", "MODE", "passed to eval: warm (default), cold or graph" },
	{ OPT_DEADLINE, "deadline", "K=S", "passed to eval (repeatable)" },
	{ OPT_DEVICE_TIMEOUT, "device-timeout", "MS", "passed to eval" },
	{ OPT_ARCH, "arch", "SM", "passed to eval: nvcc's target" },
	{ OPT_NO_SANDBOX, "no-sandbox", NULL, "passed to eval (trusted candidates only)" },
	{ O_FORCE, "force", NULL, "go on in a run whose run.json has other arguments" },
	{ 'q', "quiet", NULL, "no progress on stderr" },
	OPTS_END,
};
static const struct opt *const tables[] = { llm_opts_table, agent_opts, prompt_opts_table, NULL };

/* ---- the command line -------------------------------------------------------- */

/* what the command line says, the run's settings (`a`) among it */
struct cli {
	struct agent a;
	struct llm_cli l;
	const char *spec;
	/* eval's options, checked by eval's own table (job_opt) and written
	 * by job_opts_argv into the local evaluation's command line */
	struct job_opts eval;
	const char *hw_eval;      /* --hw when given */
	int iters, warmup;        /* as given (0 when not), for run.json */
	int eval_only;            /* an option --eval-cmd's template must carry itself */
	int force;
	char hw_source[32];       /* how the run's machine was first chosen */
	char eval_hw[32];
	char *base, *key, *run_default;   /* owned: a.base_url, a.key, a.run_dir */
};

/* the request's and the instance's options (the instance is eval's too:
 * checked as eval checks it); 1 taken, 0 not one of them, -1 bad */
static int shared_opt(struct cli *c, int o, const char *arg)
{
	if (o == PROMPT_OPT_HW)
		c->hw_eval = arg;   /* passed on to eval only when given */
	int r = llm_cli_opt(&c->l, o, arg);
	r = r ? r : prompt_opt(&c->a.po, o, arg);
	static const int as_eval[][2] = { { 'g', 'g' }, { 'd', 'd' }, { PROMPT_OPT_M, OPT_M },
					  { PROMPT_OPT_N, OPT_N }, { PROMPT_OPT_BACKEND, 'b' } };
	for (size_t i = 0; r > 0 && i < ARRAY_SIZE(as_eval); i++)
		if (o == as_eval[i][0] && job_opt(&c->eval, as_eval[i][1], arg) < 0)
			return -1;
	return r;
}

/* eval's options that pass through to each evaluation; 1, 0, -1 as above */
static int eval_opt(struct cli *c, int o, const char *arg)
{
	if (o != 't' && o != OPT_ITERS && o != OPT_WARMUP && o != OPT_TIMING &&
	    o != OPT_DEADLINE && o != OPT_DEVICE_TIMEOUT && o != OPT_ARCH && o != OPT_NO_SANDBOX)
		return 0;
	if (job_opt(&c->eval, o, arg) < 0)
		return -1;
	if (o == OPT_ITERS)
		c->iters = c->eval.iters;
	else if (o == OPT_WARMUP)
		c->warmup = c->eval.warmup;
	else if (o != 't')
		c->eval_only = 1;
	return 1;
}

/* the agent's own options: the run, the evaluation command, the budgets;
 * 1, 0, -1 as above */
static int agent_opt(struct cli *c, int o, const char *arg)
{
	struct agent *a = &c->a;
	long long n;
	switch (o) {
	case O_RUN: a->run_dir = arg; return 1;
	case O_EVALCMD: a->ev.tmpl = arg; return 1;
	case O_FORCE: c->force = 1; return 1;
	case 'q': a->quiet = 1; return 1;
	case O_BUDGET_S:
		return opt_num("budget-s", arg, 0.001, 1e12, &a->budget_s) < 0 ? -1 : 1;
	case O_TARGET:
		return opt_num("target-speedup", arg, 0.001, 1e12, &a->target) < 0 ? -1 : 1;
	case O_EVALTO:
		return opt_num("eval-timeout", arg, 1, 1e12, &a->ev.timeout_s) < 0 ? -1 : 1;
	case O_BUDGET_T:
		if (opt_int("budget-tokens", arg, 1, 1000000000000LL, &n) < 0)
			return -1;
		a->budget_tokens = n;
		return 1;
	case O_STEPS:
		if (opt_int("steps", arg, 1, INT_MAX, &n) < 0)
			return -1;
		a->steps = (int)n;
		return 1;
	}
	return 0;
}

/* argv into c, then the settings the options make; 0, or -1 when the
 * command ends here with *rc (-h: 0) */
static int parse_args(struct cli *c, int argc, char **argv, int *rc)
{
	struct agent *a = &c->a;
	struct opts_parser P;
	int o;
	opts_init(&P, tables);
	*rc = PKB_EXIT_USAGE;
	while ((o = opts_next(&P, argc, argv)) != -1) {
		int r = shared_opt(c, o, optarg);
		r = r ? r : eval_opt(c, o, optarg);
		r = r ? r : agent_opt(c, o, optarg);
		if (r < 0)
			return -1;
		if (r)
			continue;
		if (o == 'h') {
			opts_usage(stdout, head, tables, tail);
			*rc = 0;
			return -1;
		}
		opts_usage(stderr, head, tables, tail);
		return -1;
	}
	a->trials = c->eval.trials;
	c->eval.world = a->po.world;
	c->eval.m = a->po.m;
	c->eval.n = a->po.n;
	a->model = c->l.model;
	a->base_url = c->l.base_url;
	a->temperature = c->l.temperature;
	a->timeout_s = c->l.timeout_s;
	a->backoff_s = c->l.backoff_s;
	a->max_tokens = c->l.max_tokens;
	a->retries = c->l.retries;
	if (argc - optind != 1) {
		error(argc - optind ? "agent takes one problem SPEC" : "agent needs a problem");
		opts_usage(stderr, head, tables, tail);
		return -1;
	}
	c->spec = argv[optind];
	return 0;
}

/* the provider, its endpoint and --block (llm_cli_target), the backend and
 * --eval-cmd; -1 (a usage error, said) when one does not hold */
static int check_args(struct cli *c)
{
	struct agent *a = &c->a;
	if (!a->model || !c->l.provider) {
		error("agent needs --model and --provider");
		opts_usage(stderr, head, tables, tail);
		return -1;
	}
	struct llm_target tg;
	if (llm_cli_target(&c->l, &tg) < 0)
		return -1;
	a->prov = tg.prov;
	a->base_url = c->base = tg.base_url;
	a->block = tg.block;
	/* a backend has a prompt (prompts/<backend>.txt) and, for the local
	 * eval, a loader rule: eval's --backend checks the latter */
	if (!prompt_backend_valid(a->po.backend)) {
		error("unknown backend '%s'", a->po.backend);
		hint("a candidate's backend is one of %s (docs/BACKENDS.md)", PROMPT_BACKENDS);
		return -1;
	}
	if (a->ev.tmpl && agent_eval_template(&a->ev) < 0)
		return -1;
	if (a->ev.tmpl && c->eval_only)
		warning("--timing, --deadline, --device-timeout, --arch and --no-sandbox go to the "
			"local pkb eval only: --eval-cmd's template says what its eval gets");
	return 0;
}

/* The key: from the environment, sent in a header and nowhere else, and
 * only to its provider's endpoint unless --api-key-env names it; then out
 * of the environment, which every evaluation inherits (nvcc, an
 * --eval-cmd's ssh or srun): it needs no key. 0, or -1 (said) when the
 * endpoint needs one that is not there. */
static int take_key(struct cli *c)
{
	struct agent *a = &c->a;
	int rc = llm_cli_key(a->prov, a->base_url, c->l.api_key_env, &a->keyinfo, a->quiet);
	if (rc == 0 && a->keyinfo.key)
		c->key = xstrdup(a->keyinfo.key);
	for (int i = 0; i < 2 && a->prov->key_env[i]; i++)
		unsetenv(a->prov->key_env[i]);
	if (c->l.api_key_env)
		unsetenv(c->l.api_key_env);
	a->key = a->keyinfo.key = c->key;
	return rc;
}

/* ---- the run directory -------------------------------------------------------- */

/* The machine the prompt describes, and the evaluation's roofline with it:
 * --hw, else the run's own, else this machine's (issue 38). A run started
 * with --hw goes on without it. */
static void resolve_hw(struct cli *c)
{
	struct agent *a = &c->a;
	json_t *old = prompt_hw_resume(&a->po, a->run_dir, c->hw_source, sizeof c->hw_source);
	const char *old_eval_hw = json_str(json_object_get(old, "args"), "eval_hw", NULL);
	if (!c->hw_eval && old_eval_hw && !strcmp(a->po.hw_source, "run.json")) {
		snprintf(c->eval_hw, sizeof c->eval_hw, "%s", old_eval_hw);
		c->hw_eval = c->eval_hw;
	}
	json_decref(old);
}

/* the arguments that decide what the run is: it goes on only with the same */
static json_t *run_args(const struct cli *c, const struct agent_conv *cv, int np)
{
	const struct agent *a = &c->a;
	json_t *ids = json_array(), *hashes = json_object();
	for (int i = 0; i < np; i++) {
		char id[8];
		snprintf(id, sizeof id, "%03d", cv[i].p->id);
		json_array_append_new(ids, json_integer(cv[i].p->id));
		json_object_set_new(hashes, id, json_string(cv[i].pr.sha256));
	}
	const char *tpl = cv[0].pr.template_path;
	size_t rl = strlen(pkb_root());
	if (!strncmp(tpl, pkb_root(), rl) && tpl[rl] == '/')
		tpl += rl + 1;
	json_t *args = json_pack(
		"{s:s,s:s,s:s,s:s,s:o,s:i,s:i,s:s,s:s,s:i,s:I,s:I,s:s,s:s,s:s,s:s,s:o,s:i,s:i,s:i}",
		"mode", "agent", "model", a->model, "provider", a->prov->name, "problems_spec",
		c->spec, "problems", ids, "k", 1, "max_tokens", a->max_tokens, "block", c->l.block,
		"backend", a->po.backend, "world", a->po.world, "m", (json_int_t)a->po.m, "n",
		(json_int_t)a->po.n, "dtype", dtype_name(a->po.dtype), "hw", a->po.hw, "template", tpl,
		"template_sha256", cv[0].pr.template_sha256, "prompt_sha256", hashes, "trials",
		a->trials, "iters", c->iters, "warmup", c->warmup);
	/* a timing mode is the run's as the counts are; said only when given,
	 * so that the args of runs before it stay equal */
	if (c->eval.timing_given)
		json_object_set_new(args, "timing", json_string(perf_mode_name(c->eval.timing)));
	json_object_set_new(args, "temperature",
			    a->temperature >= 0 ? json_real(a->temperature) : json_null());
	json_object_set_new(args, "eval_cmd", a->ev.tmpl ? json_string(a->ev.tmpl) : json_null());
	json_object_set_new(args, "eval_hw", c->hw_eval ? json_string(c->hw_eval) : json_null());
	return args;
}

/* The run directory, locked and checked against run.json (`args`); the
 * lock's descriptor, or -1 (said). The budgets may change between runs
 * (raise --steps to go on), and so may the server's address (a local
 * server restarted on another port serves the same model). */
static int open_run(const struct cli *c, json_t *args)
{
	const struct agent *a = &c->a;
	if (mkdir_p(a->run_dir) < 0)
		return error("cannot create '%s': %s", a->run_dir, strerror(errno));
	int lock = rundir_lock(a->run_dir);
	if (lock < 0)
		return error("another pkb generate or agent is using the run '%s'", a->run_dir);
	rundir_remove_stale(a->run_dir);
	json_t *budgets = json_pack("{s:s,s:s,s:s,s:{s:i,s:o,s:o,s:o}}", "base_url", a->base_url,
				    "hw", a->po.hw, "hw_source", c->hw_source,
				    "budgets", "steps", a->steps,
				    "budget_s", a->budget_s > 0 ? json_real(a->budget_s) : json_null(),
				    "budget_tokens", a->budget_tokens > 0
				    ? json_integer(a->budget_tokens) : json_null(),
				    "target_speedup", a->target > 0 ? json_real(a->target) : json_null());
	int orc = rundir_open(a->run_dir, args, budgets, c->force);
	json_decref(budgets);
	if (orc < 0) {
		close(lock);
		return -1;
	}
	return lock;
}

/* ---- the problems ------------------------------------------------------------- */

/* a finished problem: on stderr, and its line on stdout */
static void report_problem(const struct agent *a, const struct agent_conv *c,
			   enum agent_stop s)
{
	char sps[32] = "-", best[32] = "none";
	if (c->best_step && !isnan(c->best_speedup))
		snprintf(sps, sizeof sps, "%.3fx", c->best_speedup);
	if (c->best_step)
		snprintf(best, sizeof best, "step %d", c->best_step);
	agent_progress(a, "%03d: stopped (%s) after %d steps; best: %s, %s", c->p->id,
		       agent_stop_names[s], c->step, best, sps);
	printf("%03d_%s\tsteps %d\tbest %s\t%s\tspeedup %s\tstop %s\n", c->p->id,
	       c->p->name, c->step, best, c->best_step ? "pass" : c->last_verdict, sps,
	       agent_stop_names[s]);
}

/* every problem's conversation in turn, until one ends the run early:
 * the command's exit status */
static int run_problems(const struct agent *a, struct agent_conv *cv, int np)
{
	int all_pass = 1, fail = 0;
	curl_global_init(CURL_GLOBAL_DEFAULT);
	for (int i = 0; i < np && !fail; i++) {
		int s = agent_loop_problem(a, &cv[i], &fail);
		if (s < 0)
			break;
		report_problem(a, &cv[i], (enum agent_stop)s);
		all_pass &= cv[i].best_step > 0;
	}
	curl_global_cleanup();
	return fail ? fail : all_pass ? 0 : PKB_EXIT_NO_PASS;
}

/* The run of SPEC's problems: the prompts, the run directory, the
 * conversations. The command's exit status. */
static int agent_run(struct cli *c)
{
	struct agent *a = &c->a;
	char err[512];
	int np = 0, built = 0, lock = -1, rc = PKB_EXIT_INPUT;
	const struct pkb_problem **ps = spec_parse(c->spec, &np, err, sizeof err);
	if (!ps) {
		error("'%s': %s", c->spec, err);
		hint("'pkb list' shows the problems and categories");
		return PKB_EXIT_USAGE;
	}
	if (!a->run_dir) {
		c->run_default = xstrfmt("runs/agent-%s-%s", a->prov->name, a->model);
		for (char *p = c->run_default + 5; *p; p++)
			if (*p == '/' || *p == ':' || *p == ' ')
				*p = '_';
		a->run_dir = c->run_default;
	}
	resolve_hw(c);
	if (!a->ev.tmpl)
		agent_eval_local(&a->ev, &c->eval, a->po.hw);
	struct agent_conv *cv = xcalloc((size_t)np, sizeof *cv);
	for (; built < np; built++) {
		a->po.p = ps[built];
		if (prompt_build(&a->po, &cv[built].pr, err, sizeof err) < 0) {
			error("%s", err);
			goto out;
		}
		cv[built].p = ps[built];
	}
	json_t *args = run_args(c, cv, np);
	lock = open_run(c, args);
	json_decref(args);
	if (lock >= 0)
		rc = run_problems(a, cv, np);
out:
	if (lock >= 0)
		close(lock);
	for (int i = 0; i < built; i++)
		agent_conv_free(&cv[i]);
	free(cv);
	free(ps);
	return rc;
}

int cmd_agent(int argc, char **argv)
{
	struct cli c = { .a = { .steps = 8, .ev.timeout_s = 1800, .trials = 3,
				.po = PROMPT_OPTS_DEFAULTS },
			 .l = LLM_CLI_DEFAULTS };
	job_opts_init(&c.eval);
	c.eval.trials = c.a.trials;
	int rc;
	if (parse_args(&c, argc, argv, &rc) < 0)
		return rc;
	if (check_args(&c) < 0) {
		free(c.base);
		agent_eval_free(&c.a.ev);
		return PKB_EXIT_USAGE;
	}
	rc = take_key(&c) < 0 ? PKB_EXIT_INPUT : agent_run(&c);
	free(c.run_default);
	free(c.base);
	if (c.key) {
		memset(c.key, 0, strlen(c.key));
		free(c.key);
	}
	agent_eval_free(&c.a.ev);
	return rc;
}

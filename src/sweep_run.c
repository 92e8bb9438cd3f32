/*
 * sweep_run.c -- a sweep on this machine's GPUs (sweep_run.h).
 */
#define _GNU_SOURCE
#include "sweep_run.h"
#include "build.h"     /* defines: build_result_free */
#include "exitcode.h"
#include "job.h"       /* defines: job_build, job_opts_argv */
#include "lanes.h"
#include "loader.h"    /* defines: loader_backend_valid */
#include "result.h"    /* defines: result_read */
#include "results.h"   /* defines: results_append */
#include "sandbox.h"   /* defines: sandbox_rank_can_read */
#include "sweep_records.h"   /* defines: sweep_make_record, sweep_task_outcome */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- progress on stderr ---- */
struct progress {
	int done, total, pass, quiet;
	int instant;       /* of done: recorded without a launch (no_code), left out of the ETA */
	json_t *fails;     /* outcome -> count */
	uint64_t t0;
};

static const char *fmt_dur(double s, char *buf, size_t n)
{
	if (s < 100)
		snprintf(buf, n, "%.0fs", s);
	else if (s < 6000)
		snprintf(buf, n, "%dm%02ds", (int)s / 60, (int)s % 60);
	else
		snprintf(buf, n, "%dh%02dm", (int)s / 3600, (int)s / 60 % 60);
	return buf;
}

/* one more done (outcome "pass" counts as passed, NULL as neither): a bar
 * redrawn in place on a terminal, else one plain line per evaluation */
static void progress(struct progress *p, const char *outcome, const char *line)
{
	p->done++;
	if (outcome && !strcmp(outcome, "pass"))
		p->pass++;
	else if (outcome)
		json_object_set_new(p->fails, outcome, json_integer(
			json_integer_value(json_object_get(p->fails, outcome)) + 1));
	if (p->quiet)
		return;
	double el = (now_ns() - p->t0) / 1e9;
	int ran = p->done - p->instant;
	double eta = ran > 0 ? el / ran * (p->total - p->done) : 0;
	char e1[32], e2[32];
	if (isatty(2)) {
		int w = 30, f = p->total ? w * p->done / p->total : w;
		fprintf(stderr, "\r[%.*s%*s] %d/%d passed %d", f, "##############################",
			w - f, "", p->done, p->total, p->pass);
		const char *k;
		json_t *v;
		json_object_foreach(p->fails, k, v)
			fprintf(stderr, " %s %lld", k, (long long)json_integer_value(v));
		fprintf(stderr, " %s ETA %s\033[K", fmt_dur(el, e1, sizeof e1), fmt_dur(eta, e2, sizeof e2));
		if (p->done == p->total)
			fputc('\n', stderr);
	} else {
		fprintf(stderr, "sweep: %d/%d %s (%s, ETA %s)\n", p->done, p->total, line,
			fmt_dur(el, e1, sizeof e1), fmt_dur(eta, e2, sizeof e2));
	}
}

/* ---- a local sweep (or one shard of it) on this machine's GPUs ---- */

/* What the launches of one candidate said so far: [0] the announced
 * shape's, [1] the hidden shape's (when it has one) */
struct pending {
	int left;          /* launches still running or waiting */
	json_t *res[2];    /* eval's --json, NULL when it wrote none */
	struct result r[2];     /* res read; outcome NULL when it did not */
	char why[2][300];  /* why res did not read */
	int status[2];
	double secs[2];
	char *gpus[2];
};

struct run_ctx {
	struct sweep *s;
	int *todo;
	char **json;       /* eval's --json file per launch */
	int *job_task;     /* per launch: its candidate (index into todo) */
	int *job_hidden;   /* per launch: 1 at the hidden shape */
	struct pending *pend;   /* per candidate */
	int fd, rc;
	struct progress pg;
};

/* The run's one input seed, DIR/.pkb-seed, drawn by the first sweep of DIR:
 * written whole beside it and linked into place, so that shards racing on
 * Slurm never read a part and all read the winner's (link fails on an
 * existing name). 0, or -1 */
static int run_seed(const char *path, long long *seed)
{
	if (access(path, F_OK) != 0) {
		char *tmp = xstrfmt("%s.tmp.XXXXXX", path);   /* unique on a shared folder too */
		int fd = mkstemp(tmp), bad = fd < 0;   /* mode 0600 */
		long long v;
		if (!bad && !(bad = job_seed_draw(&v) < 0)) {
			char txt[32];
			int len = snprintf(txt, sizeof txt, "%lld\n", v);
			bad = write_all(fd, txt, (size_t)len) < 0;
		}
		bad |= fd >= 0 && close(fd) < 0;
		if (!bad && link(tmp, path) < 0 && errno != EEXIST)
			bad = 1;
		if (fd >= 0)
			unlink(tmp);
		free(tmp);
		if (bad)
			return -1;
	}
	return job_seed_read(path, seed);
}

/* Unless a seed was chosen: one seed for the whole run, passed to every
 * eval as a file, and the reference's outputs kept in DIR/.pkb-refcache,
 * so that each instance's reference runs once (eval --seed-file,
 * --ref-cache; docs/SWEEP.md). Not where a solution process could read
 * the folder (then each evaluation draws its own seed, as before). */
void sweep_keep_reference(struct sweep *s)
{
	if (s->eval.seed >= 0 || s->eval.ref_cache)
		return;
	char *root = realpath(s->root, NULL);
	if (!root)
		return;
	char *seed_path = xstrfmt("%s/.pkb-seed", root), *rc = xstrfmt("%s/.pkb-refcache", root);
	struct wire_job j;
	wire_job_init(&j);
	j.n_sol = 1;
	j.sol[0].nccl = 1;   /* the widest sandbox, the reference's */
	snprintf(j.sol[0].so, sizeof j.sol[0].so, "%s/x.so", build_cache_dir());
	long long seed;
	if (sandbox_rank_can_read(&j, rc)) {
		warning("%s: a solution process could read it; every evaluation draws its own seed "
			"and runs its reference", rc);
	} else if (run_seed(seed_path, &seed) < 0) {
		warning("%s: cannot draw or read the run's seed; every evaluation draws its own",
			seed_path);
	} else {
		s->eval.seed = seed;
		s->eval.seed_file = seed_path;
		s->eval.ref_cache = rc;
		seed_path = rc = NULL;   /* kept for the sweep's life */
	}
	free(seed_path);
	free(rc);
	free(root);
}

/* eval's command line for one candidate: the sweep's eval options, as
 * job_opts_argv writes them, with this task's --json and --log-dir. At
 * the hidden shape: its M and N, untimed (correctness is the question; a
 * timed launch would also own its GPUs), logs under .hidden. */
static char **eval_argv(struct sweep *s, struct task *t, const char *json, int hidden)
{
	struct strvec a = STRVEC_INIT;
	strvec_push(&a, pkb_self_exe());
	strvec_push(&a, "eval");
	strvec_pushf(&a, "%d", t->problem);
	strvec_push(&a, t->path);
	struct job_opts o = s->eval, d;
	char *rel = sweep_task_log(t, hidden ? ".hidden.ranks" : ".ranks");
	char *ranks = xstrfmt("%s/%s", s->root, rel);
	if (hidden) {
		job_opts_init(&d);
		o.m = s->hid[t->problem].m;
		o.n = s->hid[t->problem].n;
		o.measure_perf = 0;
		o.timing = PERF_WARM;
		o.timing_given = 0;
		o.trace_path = NULL;
		o.iters = d.iters;
		o.warmup = d.warmup;
	}
	o.json_path = json;
	o.log_dir = ranks;
	o.quiet = 1;
	job_opts_argv(&o, &a);
	free(ranks);
	free(rel);
	return a.v;
}

static int is_outcome(const struct result *r, const char *name)
{
	return r->outcome && !strcmp(r->outcome, name);
}

/* the ranks' logs of a launch stay beside the record, named relative to
 * the run directory (also when the sweep's own timeout killed eval); a
 * pass needs none. The relative name, or NULL when there are none. */
static char *keep_rank_logs(struct sweep *s, struct task *t, struct pending *p, int hidden)
{
	json_t *res = p->res[hidden];
	char *rel = sweep_task_log(t, hidden ? ".hidden.ranks" : ".ranks");
	char *ranks = xstrfmt("%s/%s", s->root, rel);
	struct stat st;
	if (is_outcome(&p->r[hidden], "pass"))
		rm_rf(ranks);
	int have = stat(ranks, &st) == 0;
	free(ranks);
	if (res)
		json_object_set_new(res, "log_dir", have ? json_string(rel) : json_null());
	if (!have) {
		free(rel);
		rel = NULL;
	}
	return rel;
}

/* what the record says when eval's --json is not there to say it: none
 * written (the sweep's own timeout says so itself), or one that does not
 * read; NULL when it read */
static char *eval_message(const struct pending *p, int k)
{
	if (!p->res[k] && p->status[k] != -2)
		return xstrdup("eval wrote no JSON (see log)");
	if (p->res[k] && !p->r[k].outcome)
		return xstrfmt("eval's record does not read: %s", p->why[k]);
	return NULL;
}

/* the record's "hidden": the shape, the verdict there and eval's --json */
static json_t *hidden_record(struct sweep *s, struct task *t, struct pending *p)
{
	const struct hidden *h = &s->hid[t->problem];
	json_t *res = p->res[1];
	json_t *j = json_pack("{s:I, s:I, s:s, s:i, s:f, s:o}", "m", (json_int_t)h->m, "n",
		(json_int_t)h->n, "outcome", sweep_task_outcome(t, res, &p->r[1], p->status[1]),
		"exit_code", p->status[1],
		"seconds", p->secs[1], "log", sweep_json_str(sweep_task_log(t, ".hidden.log")));
	char *ranks = keep_rank_logs(s, t, p, 1);
	if (ranks)
		json_object_set_new(j, "rank_logs", sweep_json_str(ranks));
	char *msg = eval_message(p, 1);
	if (msg)
		json_object_set_new(j, "message", sweep_json_str(msg));
	else if (p->r[1].message)
		json_object_set_new(j, "message", json_string(p->r[1].message));
	if (res)
		json_object_set(j, "result", res);
	return j;
}

/* Both launches of a candidate are done: one record, or, when either met
 * an env_error (the machine, not the candidate: no GPU, driver, NCCL init,
 * rendezvous), none, so that a resumed sweep runs it again */
static void task_done(struct run_ctx *c, int ti)
{
	struct sweep *s = c->s;
	struct task *t = &s->t[c->todo[ti]];
	struct pending *p = &c->pend[ti];
	int hidden = p->gpus[1] != NULL;
	for (int k = 0; k <= hidden; k++)
		if (is_outcome(&p->r[k], "env_error")) {
			s->env_errors++;
			const char *msg = p->r[k].message;
			char *line = xstrfmt("%03d %s on GPUs %s%s: env_error, not recorded (%s)",
					     t->problem, t->sample, p->gpus[k], k ? " (hidden shape)" : "",
					     msg ? msg : "see its log");
			progress(&c->pg, "env_error", line);
			free(line);
			return;
		}
	char *ranks = keep_rank_logs(s, t, p, 0);
	json_t *rec = sweep_make_record(s, t, p->res[0], &p->r[0], p->status[0], p->secs[0]);
	if (ranks)
		json_object_set_new(rec, "rank_logs", sweep_json_str(ranks));
	char *msg = eval_message(p, 0);
	if (msg)
		json_object_set_new(rec, "message", sweep_json_str(msg));
	if (hidden)
		json_object_set_new(rec, "hidden", hidden_record(s, t, p));
	if (results_append(c->fd, rec) < 0)
		c->rc = PKB_EXIT_INPUT;
	/* a pass at the announced shape that fails at the hidden one is no
	 * pass: counted as hidden_<outcome> */
	const char *o = sweep_task_outcome(t, p->res[0], &p->r[0], p->status[0]);
	const char *ho = hidden ? sweep_task_outcome(t, p->res[1], &p->r[1], p->status[1]) : NULL;
	char *shown = hidden && !strcmp(o, "pass") && strcmp(ho, "pass") ? xstrfmt("hidden_%s", ho)
									 : xstrdup(o);
	/* the hidden shape's verdict where it is another */
	char *line = hidden && strcmp(o, ho) ?
		xstrfmt("%03d %s on GPUs %s: %s; hidden %lldx%lld on GPUs %s: %s", t->problem,
			t->sample, p->gpus[0], o, s->hid[t->problem].m, s->hid[t->problem].n,
			p->gpus[1], ho) :
		xstrfmt("%03d %s on GPUs %s: %s", t->problem, t->sample, p->gpus[0], o);
	progress(&c->pg, shown, line);
	free(line);
	free(shown);
	json_decref(rec);
}

static void eval_done(void *vctx, const struct lanes_done *d)
{
	struct run_ctx *c = vctx;
	int ti = c->job_task[d->job], k = c->job_hidden[d->job];
	struct pending *p = &c->pend[ti];
	p->res[k] = d->status == -2 ? NULL : json_load_file(c->json[d->job], 0, NULL);
	result_none(&p->r[k]);
	if (p->res[k])
		result_read(p->res[k], &p->r[k], p->why[k], sizeof p->why[k]);
	p->status[k] = d->status;
	p->secs[k] = d->seconds;
	p->gpus[k] = xstrdup(d->gpus);
	unlink(c->json[d->job]);
	if (--p->left == 0)
		task_done(c, ti);
}

/* `pkb hold` beside the lanes: every visible GPU's CUDA context held while
 * the sweep runs, so that each launch makes its own faster, as tools/
 * test-gpu does (src/cmd_hold.c: a rank's cuda_init 6.05 s -> 2.4 s on 8
 * H200s). It ends with the sweep (SIGTERM here, or its parent-death
 * signal); without a GPU it exits at once and nothing changes. Not with
 * PKB_NO_HOLD=1, nor on pretend ranks. -1: none. */
static pid_t hold_start(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		int fd = open("/dev/null", O_RDWR);
		if (fd >= 0) {
			dup2(fd, 0);
			dup2(fd, 1);
			dup2(fd, 2);
		}
		execl(pkb_self_exe(), "pkb", "hold", (char *)NULL);
		_exit(127);
	}
	return pid;
}

static void hold_stop(pid_t pid)
{
	if (pid <= 0)
		return;
	kill(pid, SIGTERM);
	waitpid(pid, NULL, 0);   /* ECHILD when the lanes reaped it (it had no GPU) */
}

int sweep_run_local(struct sweep *s, int *todo, int ntodo, const char *res_path, int fd)
{
	struct run_ctx c = { .s = s, .todo = todo, .fd = fd,
		.pg = { .total = ntodo, .quiet = s->quiet, .fails = json_object(), .t0 = now_ns() } };
	/* no-code samples need no GPU: recorded at once */
	int nrun = 0;
	for (int i = 0; i < ntodo; i++) {
		struct task *t = &s->t[todo[i]];
		if (t->path) {
			todo[nrun++] = todo[i];
			continue;
		}
		json_t *rec = sweep_make_record(s, t, NULL, NULL, 0, 0);
		if (results_append(fd, rec) < 0)
			c.rc = PKB_EXIT_INPUT;
		json_decref(rec);
		char *line = xstrfmt("%03d %s: no_code", t->problem, t->sample);
		c.pg.instant++;
		progress(&c.pg, "no_code", line);
		free(line);
	}
	/* lanes: disjoint sets of W GPUs. A timed eval owns its set; untimed
	 * ones share a set when asked for more lanes than there are sets */
	int sets = s->ngpus / s->W;
	int share = s->perf ? 1 : (s->lanes + sets - 1) / sets;
	if (s->perf && s->lanes > sets) {
		warning("timed evaluations own their GPUs: %d lanes of %d GPUs, not %d", sets, s->W,
			s->lanes);
		s->lanes = sets;
	}
	char *tmp = xstrfmt("%s/.sweep", s->root);
	mkdir_p(tmp);
	/* each candidate's launches one after the other in the order, the
	 * announced shape's first: its record is written when both are done */
	struct lanes_job *jobs = xcalloc(2 * nrun + 1, sizeof(*jobs));
	c.json = xcalloc(2 * nrun + 1, sizeof(char *));
	c.job_task = xcalloc(2 * nrun + 1, sizeof(int));
	c.job_hidden = xcalloc(2 * nrun + 1, sizeof(int));
	c.pend = xcalloc(nrun + 1, sizeof(*c.pend));
	int nj = 0;
	for (int i = 0; i < nrun; i++) {
		struct task *t = &s->t[todo[i]];
		int hidden = !s->hidden_off && s->hid[t->problem].m;
		char *dir = xstrfmt("%s/logs/%03d", s->root, t->problem);
		mkdir_p(dir);
		free(dir);
		for (int k = 0; k <= hidden; k++, nj++) {
			/* the pid in the name: an eval orphaned by a killed sweep
			 * must not write the file a resumed sweep reads */
			c.json[nj] = xstrfmt("%s/%d.job%d.json", tmp, (int)getpid(), nj);
			unlink(c.json[nj]);
			c.job_task[nj] = i;
			c.job_hidden[nj] = k;
			c.pend[i].left++;
			jobs[nj] = (struct lanes_job){ .world = s->W, .share = share,
				.argv = eval_argv(s, t, c.json[nj], k), .timeout_s = s->timeout_s,
				.log = xstrfmt("%s/logs/%03d/%s%s.log", s->root, t->problem, t->sample,
					       k ? ".hidden" : "") };
			/* the ranks' logs of an earlier attempt (an env_error, a kill) go */
			char *ranks = xstrfmt("%s/logs/%03d/%s%s.ranks", s->root, t->problem,
					      t->sample, k ? ".hidden" : "");
			rm_rf(ranks);
			free(ranks);
		}
	}
	const char *no_hold = getenv("PKB_NO_HOLD");   /* as tools/lib.sh's gpu_hold */
	pid_t holder = s->fake || !nj || (no_hold && !strcmp(no_hold, "1")) ? -1 : hold_start();
	lanes_spare(holder > 0 ? holder : 0);
	int stopped = lanes_run(jobs, nj, s->ngpus, s->lanes, eval_done, &c);
	lanes_spare(0);
	hold_stop(holder);
	for (int i = 0; i < nj; i++) {
		for (char **a = jobs[i].argv; *a; a++)
			free(*a);
		free(jobs[i].argv);
		free((char *)jobs[i].log);
		unlink(c.json[i]);
		free(c.json[i]);
	}
	/* a candidate whose other launch a stop killed: nothing recorded */
	for (int i = 0; i < nrun; i++)
		for (int k = 0; k < 2; k++) {
			result_free(&c.pend[i].r[k]);
			json_decref(c.pend[i].res[k]);
			free(c.pend[i].gpus[k]);
		}
	free(jobs);
	free(c.json);
	free(c.job_task);
	free(c.job_hidden);
	free(c.pend);
	free(tmp);
	if (stopped > 0) {
		warning("stopped by signal %d after %d of %d; run the same command to go on",
			stopped - 128, c.pg.done, ntodo);
		c.rc = stopped;
	} else if (stopped < 0) {
		c.rc = PKB_EXIT_ENV;   /* no process left to fork */
	} else if (s->env_errors) {
		error("%d of %d evaluations met an env_error (this machine, not the candidate: "
		      "no GPU, driver, NCCL init, rendezvous); not recorded", s->env_errors, c.pg.done);
		hint("fix the machine and run the same command: they run again");
		c.rc = c.rc ? c.rc : PKB_EXIT_ENV;
	} else if (!s->quiet) {
		fprintf(stderr, "sweep: %d run, %d passed%s; records in %s\n", c.pg.done, c.pg.pass,
			s->hidden_off ? "" : " (at both shapes)", res_path);
	}
	json_decref(c.pg.fails);
	return c.rc;
}

/* ---- --dry-run: what needs no GPU ---- */

/* Each candidate compiled and scanned as eval does it (job_build: the same
 * flags, compile cache and symbol scan as `pkb build`). A compile_error or
 * load_refused is the candidate's final verdict whatever GPU it would meet:
 * recorded under the key its evaluation has, so the GPU node skips it. A
 * candidate that builds is left pending for the GPU node (its compile is
 * cached there when PKB_CACHE is shared). */
int sweep_run_dry(struct sweep *s, int *todo, int ntodo, const char *res_path, int fd)
{
	struct progress pg = { .total = ntodo, .quiet = s->quiet, .fails = json_object(),
			       .t0 = now_ns() };
	struct job_opts o = s->eval;   /* --arch and the compile deadline, as eval's */
	o.quiet = 1;
	const char *backend = o.backend;
	int rc = 0, pending = 0;
	for (int i = 0; i < ntodo && !rc; i++) {
		struct task *t = &s->t[todo[i]];
		json_t *rec;
		const char *oc;   /* the record's outcome, as make_record wrote it */
		if (!t->path) {
			rec = sweep_make_record(s, t, NULL, NULL, 0, 0);
			oc = sweep_task_outcome(t, NULL, NULL, 0);
		} else {
			struct job_solution sol = { .role = "candidate", .src = t->path,
				.nccl = loader_backend_uses_nccl(backend) };
			char msg[4096] = "";
			uint64_t t0 = now_ns();
			enum pkb_outcome out = job_build(&o, &sol, backend, msg, sizeof msg);
			double secs = (now_ns() - t0) / 1e9;
			const char *flags = sol.build && sol.build->flags ? sol.build->flags : "";
			json_t *res = out == OUT_PASS ? NULL : json_pack("{s:s, s:i, s:s, s:s, s:s, s:b}",
				"outcome", outcome_name(out), "exit_code", outcome_exit_code(out),
				"backend", backend, "compile_flags", flags, "nvcc", build_nvcc_version(),
				"dry_run", 1);
			build_result_free(sol.build);
			free(sol.build);
			if (!res) {
				pending++;
				char *line = xstrfmt("%03d %s: builds, left for the GPU node", t->problem,
						     t->sample);
				pg.instant++;
				progress(&pg, NULL, line);
				free(line);
				continue;
			}
			/* the verdict line keeps the compiler's first error line, as
			 * eval's; the whole output goes to the log */
			char *first = out == OUT_COMPILE_ERROR ? strstr(msg, "error") : NULL;
			char line[512];
			snprintf(line, sizeof line, "%.511s", first ? first : msg);
			line[strcspn(line, "\n")] = 0;
			json_object_set_new(res, "message", json_string(line));
			if (out == OUT_COMPILE_ERROR)
				json_object_set_new(res, "compiler_output", json_string(msg));
			char *rel = sweep_task_log(t, ".log"), *log = xstrfmt("%s/%s", s->root, rel);
			char *dir = xstrfmt("%s/logs/%03d", s->root, t->problem);
			mkdir_p(dir);
			write_file_atomic(log, msg, strlen(msg));
			free(dir);
			free(log);
			free(rel);
			struct result r;
			char why[300];
			if (result_read(res, &r, why, sizeof why) < 0)
				BUG("the dry run's record does not read: %s", why);
			rec = sweep_make_record(s, t, res, &r, outcome_exit_code(out), secs);
			oc = outcome_name(out);   /* res's outcome, which r read */
			result_free(&r);
			json_decref(res);
		}
		if (results_append(fd, rec) < 0)
			rc = PKB_EXIT_INPUT;
		char *line = xstrfmt("%03d %s: %s", t->problem, t->sample, oc);
		pg.instant++;
		progress(&pg, oc, line);
		free(line);
		json_decref(rec);
	}
	if (!s->quiet && !rc)
		fprintf(stderr, "sweep: dry run: %d recorded (no_code, compile_error, load_refused), "
			"%d build and are left for a GPU node; records in %s\n", ntodo - pending,
			pending, res_path);
	json_decref(pg.fails);
	return rc;
}

/* ---- --jobs FILE: tools/test-gpu's cases in the same lanes ---- */
struct jobs_ctx {
	struct lanes_job *jobs;
	struct progress pg;
};

static void job_done(void *vctx, const struct lanes_done *d)
{
	struct jobs_ctx *c = vctx;
	char *line = xstrfmt("job %d (%s) on GPUs %s: exit %d in %.1fs", d->job + 1,
			     c->jobs[d->job].argv[0], d->gpus, d->status, d->seconds);
	progress(&c->pg, NULL, line);
	free(line);
}

int sweep_run_jobs(const char *file, int ngpus, int lanes, int quiet)
{
	size_t len;
	char *buf = read_file(file, &len);
	if (!buf) {
		error("cannot read %s: %s", file, strerror(errno));
		return PKB_EXIT_INPUT;
	}
	struct lanes_job *jobs = NULL;
	int n = 0, line = 0, rc = 0;
	for (char *p = buf, *nl; p < buf + len && !rc; p = nl + 1) {
		if (!(nl = memchr(p, '\n', buf + len - p)))
			nl = buf + len;
		line++;
		if (nl == p)
			continue;
		json_error_t je;
		json_t *o = json_loadb(p, nl - p, 0, &je), *argv = json_object_get(o, "argv");
		json_t *share = json_object_get(o, "share"), *log = json_object_get(o, "log");
		json_int_t w = json_integer_value(json_object_get(o, "world"));
		if (!json_is_array(argv) || !json_array_size(argv) || w < 1 || w > ngpus ||
		    (share && json_integer_value(share) < 1) || (log && !json_is_string(log))) {
			rc = error("%s:%d: not a job of at most %d GPUs: {\"world\": W, \"share\": S, "
				   "\"argv\": [...], \"log\": FILE}", file, line, ngpus);
			json_decref(o);
			break;
		}
		jobs = xrealloc(jobs, (n + 1) * sizeof(*jobs));
		struct lanes_job *j = &jobs[n++];
		*j = (struct lanes_job){ .world = (int)w,
			.share = share ? (int)json_integer_value(share) : 1,
			.log = log ? xstrdup(json_string_value(log)) : NULL,
			.argv = xcalloc(json_array_size(argv) + 1, sizeof(char *)) };
		size_t i;
		json_t *a;
		json_array_foreach(argv, i, a)
			j->argv[i] = xstrdup(json_is_string(a) ? json_string_value(a) : "");
		json_decref(o);
	}
	free(buf);
	struct jobs_ctx c = { .jobs = jobs,
		.pg = { .total = n, .quiet = quiet, .fails = json_object(), .t0 = now_ns() } };
	if (!rc) {
		rc = lanes_run(jobs, n, ngpus, lanes, job_done, &c);
		if (rc > 0)
			warning("stopped by signal %d after %d of %d jobs", rc - 128, c.pg.done, n);
	}
	for (int i = 0; i < n; i++) {
		for (char **a = jobs[i].argv; *a; a++)
			free(*a);
		free(jobs[i].argv);
		free((char *)jobs[i].log);
	}
	free(jobs);
	json_decref(c.pg.fails);
	return rc < 0 ? PKB_EXIT_INPUT : rc;
}

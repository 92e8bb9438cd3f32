/*
 * sweep_slurm.c -- a sweep as one Slurm job array (sweep_slurm.h;
 * docs/SLURM.md).
 */
#define _GNU_SOURCE
#include "sweep_slurm.h"
#include "exitcode.h"
#include "results.h"   /* defines: results_append */
#include "slurm.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- --slurm: one job array, a shard per task ---- */

/* a word for sh: single quotes, each ' as '\'' */
static char *sh_quote(const char *v)
{
	size_t n = 3;
	for (const char *c = v; *c; c++)
		n += *c == '\'' ? 4 : 1;
	char *q = xmalloc(n), *o = q;
	*o++ = '\'';
	for (const char *c = v; *c; c++) {
		if (*c == '\'') {
			memcpy(o, "'\\''", 4);
			o += 4;
		} else {
			*o++ = *c;
		}
	}
	*o++ = '\'';
	*o = 0;
	return q;
}

static char *slurm_dir(const char *root)
{
	return xstrfmt("%s/slurm", root);
}

/* the submissions so far, one per line of DIR/slurm/jobs.jsonl */
json_t *sweep_load_submissions(const char *root)
{
	char *path = xstrfmt("%s/slurm/jobs.jsonl", root);
	json_t *a = json_array();
	size_t len;
	char *buf = read_file(path, &len);
	for (char *p = buf, *nl; buf && p < buf + len; p = nl + 1) {
		if (!(nl = memchr(p, '\n', buf + len - p)))
			break;
		json_t *o = json_loadb(p, nl - p, 0, NULL);
		if (json_is_string(json_object_get(o, "job")))
			json_array_append_new(a, o);
		else
			json_decref(o);
	}
	free(buf);
	free(path);
	return a;
}

/* Mark in busy[0..n) the shards that tasks of earlier arrays still hold
 * (pending or running): submitting them again could run a key twice. An
 * active array of another shard count cannot be matched key by key: -1. */
static int busy_shards(const char *root, int n, unsigned char *busy)
{
	json_t *subs = sweep_load_submissions(root);
	char *log = xstrfmt("%s/slurm/.query.%d", root, (int)getpid());
	size_t i;
	json_t *sub;
	int rc = 0;
	json_array_foreach(subs, i, sub) {
		const char *job = json_string_value(json_object_get(sub, "job"));
		int sn = (int)json_integer_value(json_object_get(sub, "shards"));
		json_t *tasks = slurm_tasks(job, log);
		size_t j;
		json_t *t;
		json_array_foreach(tasks, j, t) {
			if (!slurm_state_active(json_string_value(json_object_get(t, "state"))))
				continue;
			if (sn != n) {
				rc = error("array job %s (%d shards) is still %s; wait for it or scancel "
					   "it before submitting %d shards", job, sn,
					   json_string_value(json_object_get(t, "state")), n);
				break;
			}
			/* "3" or a pending range "1-3" (Slurm may also write "1-3%2") */
			const char *ts = json_string_value(json_object_get(t, "task"));
			for (const char *p = ts; *p;) {
				char *end;
				long a = strtol(p, &end, 10), b = a;
				if (*end == '-')
					b = strtol(end + 1, &end, 10);
				for (long k = a; k <= b && k < n; k++)
					if (k >= 0)
						busy[k] = 1;
				if (*end != ',')
					break;
				p = end + 1;
			}
		}
		json_decref(tasks);
		if (rc)
			break;
	}
	unlink(log);
	free(log);
	json_decref(subs);
	return rc;
}

/* the batch script of submission k: every sbatch option in it, so that it
 * can be read and submitted again by hand; `real`: the run's real path */
static char *batch_script(const struct sweep *s, const struct slurm_opts *so, const char *real,
			  int k)
{
	int n = so->nodes;
	char *qroot = sh_quote(real), *qexe = sh_quote(pkb_self_exe());
	char *body = xstrfmt(
		"#!/bin/sh\n"
		"# written by pkb sweep --slurm (submission %d): array task I runs shard I of\n"
		"# %d of the evaluations of %s that are not recorded yet, on\n"
		"# the task's %d GPUs, into %s/" RESULTS_SHARD_DIR "/shard-I-of-%d.jsonl\n"
		"#SBATCH --job-name=pkb-sweep\n"
		"#SBATCH --nodes=1\n"
		"#SBATCH --ntasks=1\n"
		"#SBATCH --gres=gpu:%d\n"
		"#SBATCH --output=%s/slurm/%%A_%%a.out\n"
		"#SBATCH --export=ALL\n"
		"%s%s%s%s%s%s%s%s%s%s%s%s"
		"exec %s sweep %s --shard \"$SLURM_ARRAY_TASK_ID/%d\" --ngpus %d",
		k, n, real, so->gpn, real, n, so->gpn, real,
		so->partition ? "#SBATCH --partition=" : "", so->partition ? so->partition : "",
		so->partition ? "\n" : "",
		so->time ? "#SBATCH --time=" : "", so->time ? so->time : "", so->time ? "\n" : "",
		so->account ? "#SBATCH --account=" : "", so->account ? so->account : "",
		so->account ? "\n" : "",
		so->cpus ? "#SBATCH --cpus-per-task=" : "", so->cpus ? so->cpus : "",
		so->cpus ? "\n" : "",
		qexe, qroot, n, so->gpn);
	free(qroot);
	free(qexe);
	size_t i;
	json_t *a;
	json_array_foreach(s->args, i, a) {
		char *q = sh_quote(json_string_value(a));
		char *b = xstrfmt("%s %s", body, q);
		free(body);
		free(q);
		body = b;
	}
	char *b = xstrfmt("%s\n", body);
	free(body);
	return b;
}

/* sbatch `script` as the array of shards `array` (of n), and the
 * submission appended to DIR/jobs.jsonl, which --status reads */
static int sbatch_array(const struct sweep *s, const char *dir, const char *script,
			const char *array, int n, int ntodo, int nbusy)
{
	int rc = 0;
	char jobid[32];
	char *log = xstrfmt("%s/.sbatch.%d", dir, (int)getpid());
	if (slurm_submit(script, array, log, jobid, sizeof jobid) < 0) {
		rc = PKB_EXIT_INPUT;
	} else {
		json_t *sub = json_pack("{s:s, s:i, s:s, s:s, s:i, s:O}", "job", jobid, "shards", n,
			"array", array, "script", script, "missing", ntodo, "args", s->args);
		job_stamp(sub);
		char *jl = xstrfmt("%s/jobs.jsonl", dir);
		int fd = open(jl, O_WRONLY | O_CREAT | O_APPEND, 0644);
		if (fd < 0 || results_append(fd, sub) < 0)
			rc = error("job %s was submitted, but %s cannot be written: "
				   "--status will not know it", jobid, jl);
		if (fd >= 0)
			close(fd);
		free(jl);
		json_decref(sub);
		printf("submitted job %s: array %s of %d shards, %d evaluations missing\n",
		       jobid, array, n, ntodo);
		if (nbusy)
			printf("(%d shards with missing evaluations are still pending or running "
			       "in an earlier array)\n", nbusy);
		hint("pkb sweep %s --slurm --status", s->root);
	}
	unlink(log);
	free(log);
	return rc;
}

int sweep_submit(struct sweep *s, const struct slurm_opts *so, int *todo, int ntodo)
{
	int n = so->nodes;
	unsigned char *want = xcalloc(n, 1), *busy = xcalloc(n, 1);
	for (int i = 0; i < ntodo; i++)
		want[sweep_shard_of(s->t[todo[i]].key, n)] = 1;
	int rc = 0;
	char *dir = slurm_dir(s->root);
	mkdir_p(dir);
	if (busy_shards(s->root, n, busy) < 0) {
		rc = PKB_EXIT_INPUT;
		goto out;
	}
	char *array = xstrdup("");
	int nshards = 0, nbusy = 0;
	for (int k = 0; k < n; k++) {
		if (want[k] && busy[k])
			nbusy++;
		if (!want[k] || busy[k])
			continue;
		char *a = xstrfmt("%s%s%d", array, *array ? "," : "", k);
		free(array);
		array = a;
		nshards++;
	}
	if (!nshards) {
		if (!ntodo)
			fprintf(stderr, "sweep: every evaluation is recorded; nothing to submit\n");
		else
			fprintf(stderr, "sweep: the %d evaluations missing are all in shards still pending "
				"or running (%d); nothing to submit\n", ntodo, nbusy);
		free(array);
		goto out;
	}
	json_t *subs = sweep_load_submissions(s->root);
	int k = (int)json_array_size(subs) + 1;
	json_decref(subs);
	char real[PATH_MAX];
	if (!realpath(s->root, real)) {
		rc = error("cannot resolve %s: %s", s->root, strerror(errno));
		free(array);
		goto out;
	}
	char *script = xstrfmt("%s/sweep-%d.sh", dir, k);
	char *body = batch_script(s, so, real, k);
	if (write_file_atomic(script, body, strlen(body)) < 0 || chmod(script, 0755) < 0)
		rc = error("cannot write %s", script);
	else
		rc = sbatch_array(s, dir, script, array, n, ntodo, nbusy);
	free(body);
	free(script);
	free(array);
out:
	free(dir);
	free(want);
	free(busy);
	return rc;
}

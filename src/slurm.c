/*
 * slurm.c -- see slurm.h. The commands' outputs are parsed in their stable
 * machine forms: sbatch --parsable ("JOBID" or "JOBID;CLUSTER"), scontrol
 * -o (one line per job record, Key=Value words), sacct -P (fields split by
 * '|').
 */
#define _GNU_SOURCE
#include "slurm.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int slurm_check_word(const char *what, const char *v)
{
	if (!*v)
		return error("--%s is empty", what);
	for (const char *c = v; *c; c++)
		if (!(('a' <= *c && *c <= 'z') || ('A' <= *c && *c <= 'Z') ||
		      ('0' <= *c && *c <= '9') || strchr("_.,:@+-", *c)))
			return error("--%s '%s': only letters, digits and _.,:@+- are passed to sbatch",
				     what, v);
	return 0;
}

/* run argv, its output into log; that output ("" when none), *rc the status */
static char *capture(char **argv, const char *log, int *rc)
{
	*rc = run_logged(argv, log, 60);
	char *out = read_file(log, NULL);
	return out ? out : xstrdup("");
}

int slurm_submit(const char *script, const char *array, const char *log, char *jobid, size_t n)
{
	char *arr = xstrfmt("--array=%s", array);
	char *argv[] = { "sbatch", "--parsable", arr, (char *)script, NULL };
	int rc;
	char *out = capture(argv, log, &rc);
	free(arr);
	char *nl = strchr(out, '\n');
	if (nl)
		*nl = 0;
	char *semi = strchr(out, ';');
	if (semi)
		*semi = 0;
	char *end;
	long id = strtol(out, &end, 10);
	if (rc != 0 || id <= 0 || *end) {
		int e = error("sbatch failed (status %d): %s", rc, *out ? out : "no output");
		if (rc == 127 || rc == -1)
			hint("is Slurm installed here? (sbatch on PATH, SLURM_CONF)");
		free(out);
		return e;
	}
	snprintf(jobid, n, "%ld", id);
	free(out);
	return 0;
}

static const char *word(const char *line, const char *key, char *buf, size_t n)
{
	size_t kl = strlen(key);
	for (const char *p = line; (p = strstr(p, key)); p += kl)
		if ((p == line || p[-1] == ' ') && p[kl] == '=') {
			const char *v = p + kl + 1;
			size_t l = strcspn(v, " \n");
			snprintf(buf, n, "%.*s", (int)(l < n ? l : n - 1), v);
			return buf;
		}
	snprintf(buf, n, "%s", "");
	return buf;
}

static void add_task(json_t *tasks, const char *task, const char *state, const char *exit_code,
		     const char *reason)
{
	json_array_append_new(tasks, json_pack("{s:s, s:s, s:s, s:s}", "task", task, "state", state,
					       "exit_code", exit_code, "reason", reason));
}

/* by task number (a pending range by its first) */
static int cmp_task(const void *a, const void *b)
{
	const char *x = json_string_value(json_object_get(*(json_t *const *)a, "task"));
	const char *y = json_string_value(json_object_get(*(json_t *const *)b, "task"));
	long d = strtol(x, NULL, 10) - strtol(y, NULL, 10);
	return d < 0 ? -1 : d > 0;
}

static json_t *sorted(json_t *tasks)
{
	size_t n = json_array_size(tasks);
	json_t **v = xcalloc(n + 1, sizeof(*v));
	for (size_t i = 0; i < n; i++)
		v[i] = json_incref(json_array_get(tasks, i));
	qsort(v, n, sizeof(*v), cmp_task);
	json_array_clear(tasks);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(tasks, v[i]);
	free(v);
	return tasks;
}

json_t *slurm_tasks(const char *jobid, const char *log)
{
	json_t *tasks = json_array();
	int rc;
	char *argv[] = { "scontrol", "-o", "show", "job", (char *)jobid, NULL };
	char *out = capture(argv, log, &rc);
	if (rc == 0) {
		char *save = NULL;
		for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char task[64], state[64], ex[32], reason[128], arr[64];
			if (strcmp(word(l, "ArrayJobId", arr, sizeof arr), jobid))
				continue;
			add_task(tasks, word(l, "ArrayTaskId", task, sizeof task),
				 word(l, "JobState", state, sizeof state), word(l, "ExitCode", ex, sizeof ex),
				 word(l, "Reason", reason, sizeof reason));
		}
		free(out);
		return sorted(tasks);
	}
	free(out);
	/* gone from slurmctld's memory (MinJobAge): the accounting database */
	char *argv2[] = { "sacct", "-j", (char *)jobid, "-X", "-n", "-P", "-o",
			  "JobID,State,ExitCode,Reason", NULL };
	out = capture(argv2, log, &rc);
	if (rc == 0) {
		char *save = NULL;
		for (char *l = strtok_r(out, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
			char *f[4] = { 0 };
			char *s2 = NULL;
			int k = 0;
			for (char *t = strtok_r(l, "|", &s2); t && k < 4; t = strtok_r(NULL, "|", &s2))
				f[k++] = t;
			char *us = f[0] ? strchr(f[0], '_') : NULL;
			if (k < 3 || !us)
				continue;
			/* "123_[2-3]" pending, "CANCELLED by 0" */
			char *task = us + 1;
			if (*task == '[') {
				task++;
				task[strcspn(task, "]")] = 0;
			}
			f[1][strcspn(f[1], " ")] = 0;
			add_task(tasks, task, f[1], f[2], k > 3 ? f[3] : "");
		}
	}
	free(out);
	return sorted(tasks);
}

int slurm_state_active(const char *state)
{
	static const char *const active[] = { "PENDING", "RUNNING", "CONFIGURING", "COMPLETING",
		"SUSPENDED", "REQUEUED", "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING",
		"STAGE_OUT", "RESV_DEL_HOLD", "STOPPED", NULL };
	for (int i = 0; active[i]; i++)
		if (!strcmp(state, active[i]))
			return 1;
	return 0;
}

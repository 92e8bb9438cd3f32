/*
 * sweep_records.c -- a sweep's records (sweep_records.h).
 */
#define _GNU_SOURCE
#include "sweep_records.h"
#include "ncclso.h"    /* defines: nccl_version */
#include "results.h"   /* defines: results_files, results_read */
#include "util.h"

#include <cuda_runtime_api.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the records: the keys done, a torn last line cut ---- */

/* The file to append to without its env_error records, which earlier
 * sweeps wrote as verdicts: written whole to a temporary file and renamed
 * over it (a kill leaves the old file or the new one), every other line
 * kept byte for byte, so that the key run again is in it once. */
static int drop_env_errors(const char *path, int n)
{
	size_t len;
	char *buf = read_file(path, &len);
	if (!buf)
		return error("cannot read %s: %s", path, strerror(errno));
	char *keep = xmalloc(len + 1);
	size_t k = 0;
	for (char *p = buf, *nl; p < buf + len; p = nl + 1) {
		if (!(nl = memchr(p, '\n', buf + len - p)))
			nl = buf + len - 1;
		json_t *r = json_loadb(p, nl - p, 0, NULL);
		const char *o = json_string_value(json_object_get(r, "outcome"));
		if (!o || strcmp(o, "env_error")) {
			memcpy(keep + k, p, nl + 1 - p);
			k += nl + 1 - p;
		}
		json_decref(r);
	}
	int rc = write_file_atomic(path, keep, k);
	free(keep);
	free(buf);
	if (rc < 0)
		return error("cannot rewrite %s: %s", path, strerror(errno));
	warning("%s: %d env_error records dropped (the machine's failure, no verdict): they run "
		"again", path, n);
	return 0;
}

/* Into `done` (key -> outcome) every key recorded: in `out` alone when -o
 * names a file of its own, else in every file of the run (results.jsonl
 * and the shard files of --slurm tasks). The file that will be appended
 * to, `out`, loses a torn last line (said on stderr) and its env_error
 * records; a bad line before its end is refused, since cutting there would
 * drop the good records after it. `out` NULL (--status, a submission):
 * every file only read. */
int sweep_load_done(const struct sweep *s, const char *out, json_t *done)
{
	int n = 1;
	char **files = s->out ? xcalloc(2, sizeof(char *)) : results_files(s->root, &n);
	if (s->out)
		files[0] = xstrdup(s->out);
	int rc = 0;
	for (int i = 0; i < n && !rc; i++) {
		json_t *recs = json_array();
		size_t good, len;
		int bad, mine = out && !strcmp(files[i], out);
		if (results_read(files[i], recs, &good, &len, &bad) < 0) {
			rc = error("cannot read %s: %s", files[i], strerror(errno));
		} else if (mine && bad) {
			rc = error("%s: line %d is not a sweep record; fix or move the file", out, bad);
		} else if (mine && good < len) {
			/* a kill mid-write leaves at most one torn line at the end */
			warning("%s: %zu bytes of a torn last record cut away", out, len - good);
			if (truncate(out, (off_t)good) != 0)
				rc = error("cannot truncate %s: %s", out, strerror(errno));
		}
		size_t j;
		json_t *r;
		int env = 0;
		json_array_foreach(recs, j, r) {
			/* an env_error is no verdict (sweeps before issue 38 recorded
			 * them): its key runs again */
			const char *o = json_string_value(json_object_get(r, "outcome"));
			if (o && !strcmp(o, "env_error"))
				env++;
			else
				json_object_set(done, json_string_value(json_object_get(r, "key")),
						json_object_get(r, "outcome"));
		}
		json_decref(recs);
		if (!rc && env && mine)
			rc = drop_env_errors(out, env);
	}
	results_files_free(files);
	return rc;
}

/* The driver, CUDA runtime and NCCL of this host, as strings (null where
 * there is none): the ranks run this executable, so the runtime and NCCL
 * it links are theirs. Both version calls are plain queries of the
 * libraries (no device, no context: the parent never touches a GPU); the
 * driver's release comes from its /proc file, as `pkb doctor` reads it. */
json_t *sweep_host_versions(void)
{
	json_t *v = json_object();
	int rt = 0, nc = 0;
	char ver[32];
	json_t *drv = json_null();
	/* "NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar ..."
	 * or "... Open Kernel Module for x86_64  570.86.15  Release Build ...":
	 * the first word after "Kernel Module" that starts with a digit */
	char *txt = read_file("/proc/driver/nvidia/version", NULL);
	const char *p = txt ? strstr(txt, "Kernel Module") : NULL;
	for (int n = 0; p && !json_is_string(drv) && sscanf(p, "%31s%n", ver, &n) == 1; p += n)
		if (ver[0] >= '0' && ver[0] <= '9')
			drv = json_string(ver);
	free(txt);
	json_object_set_new(v, "driver", drv);
	if (cudaRuntimeGetVersion(&rt) == cudaSuccess && rt > 0)
		json_object_set_new(v, "cuda_runtime", json_sprintf("%d.%d", rt / 1000, rt % 1000 / 10));
	else
		json_object_set_new(v, "cuda_runtime", json_null());
	if ((nc = nccl_version()) > 0)
		json_object_set_new(v, "nccl", json_sprintf("%d.%d.%d", nc / 10000, nc / 100 % 100,
							     nc % 100));
	else
		json_object_set_new(v, "nccl", json_null());
	return v;
}

/* a json string of an allocated C string, which it frees */
json_t *sweep_json_str(char *v)
{
	json_t *j = json_string(v);
	free(v);
	return j;
}

/* instance.hidden: where the hidden shape came from ("drawn", or "given"
 * with the shape given) and the shape evaluated, m and n, null with the
 * reason ("none") where the problem has none */
static json_t *hidden_instance(const struct sweep *s, const struct task *t)
{
	const struct hidden *h = &s->hid[t->problem];
	json_t *j = json_pack("{s:s}", "from", s->hidden_m ? "given" : "drawn");
	if (s->hidden_m)
		json_object_set_new(j, "given", json_sprintf("%lldx%lld", s->hidden_m, s->hidden_n));
	json_object_set_new(j, "m", h->m ? json_integer(h->m) : json_null());
	json_object_set_new(j, "n", h->m ? json_integer(h->n) : json_null());
	if (!h->m)
		json_object_set_new(j, "none", json_string(h->why ? h->why : "?"));
	return j;
}

/* eval's verdict; a record that did not read (result.h) is the harness's */
static const char *fail_category(const struct result *r)
{
	return r->outcome ? r->outcome : "internal_error";
}

/* A launch's verdict as its record says it: eval's, read by result.c (res
 * and r), else what became of the launch (rc: its exit status, -2 when
 * killed at its deadline), or no_code when the task has no candidate. The
 * record's "outcome" is made from this, and the progress line says the
 * same without reading the record back. */
const char *sweep_task_outcome(const struct task *t, json_t *res, const struct result *r, int rc)
{
	return res ? fail_category(r) : !t->path ? "no_code" : rc == -2 ? "timeout" : "internal_error";
}

/* A candidate's record. res: eval's --json at the announced shape (NULL:
 * none), r: res as read (outcome NULL when it did not read) */
json_t *sweep_make_record(struct sweep *s, struct task *t, json_t *res, const struct result *r,
			   int rc, double secs)
{
	json_t *key = json_pack("{s:i, s:s, s:i, s:i, s:s, s:s, s:s}",
		"problem", t->problem, "sample", t->sample, "world", s->W, "trials", s->trials,
		"timing", s->perf ? "perf" : "none", "pkb_version", PKB_VERSION, "sha256", t->sha);
	if (s->backend)
		json_object_set_new(key, "backend", json_string(s->backend));
	if (s->atol)
		json_object_set_new(key, "atol", json_real(atof(s->atol)));
	if (s->rtol)
		json_object_set_new(key, "rtol", json_real(atof(s->rtol)));
	if (sweep_timing_given(s))
		json_object_set_new(key, "timed", json_pack("{s:s, s:i, s:i}", "mode",
			perf_mode_name(s->eval.timing), "iters", s->eval.iters,
			"warmup", s->eval.warmup));
	if (!s->hidden_off)
		json_object_set_new(key, "hidden", hidden_instance(s, t));
	if (res) {
		if (r->dtype)
			json_object_set_new(key, "dtype", json_string(r->dtype));
		if (r->m >= 0)
			json_object_set_new(key, "m", json_integer(r->m));
		if (r->n >= 0)
			json_object_set_new(key, "n", json_integer(r->n));
		json_t *hw = json_object();
		if (r->device)
			json_object_set_new(hw, "gpu", json_string(r->device));
		json_object_set_new(hw, "gpus", json_integer(s->W));
		if (r->nvcc)
			json_object_set_new(hw, "nvcc", json_string(r->nvcc));
		/* the versions the ranks report, where they do; else this host's */
		static const char *const vk[] = { "driver", "cuda_runtime", "nccl" };
		const char *rv[] = { r->driver, r->cuda_runtime, r->nccl };
		for (size_t i = 0; i < ARRAY_SIZE(vk); i++)
			json_object_set_new(hw, vk[i], rv[i] ? json_string(rv[i]) :
				json_incref(json_object_get(s->versions, vk[i])));
		json_object_set_new(key, "hardware", hw);
	}
	json_t *rec = json_pack("{s:s, s:o, s:s?, s:i, s:f}", "key", t->key, "instance", key,
		"candidate", t->path, "exit_code", rc, "seconds", secs);
	if (t->path)
		json_object_set_new(rec, "log", sweep_json_str(sweep_task_log(t, ".log")));
	json_object_set_new(rec, "outcome", json_string(sweep_task_outcome(t, res, r, rc)));
	if (res)
		json_object_set(rec, "result", res);
	return rec;
}

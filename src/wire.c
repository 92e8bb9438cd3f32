/*
 * wire.c -- see wire.h. Strings are copied into the struct's arrays (a
 * longer one is refused, not cut: a cut path would load another file), so a
 * wire_job outlives the JSON it came from.
 */
#include "wire.h"

#include <stdio.h>
#include <string.h>

void wire_job_init(struct wire_job *j)
{
	memset(j, 0, sizeof *j);
	j->atol = j->rtol = -1;
	j->rank = j->world = j->local_rank = -1;
}

json_t *wire_job_pack(const struct wire_job *j)
{
	json_t *o = json_pack("{s:s,s:s,s:I,s:I,s:s,s:I,s:i,s:i,s:i}", "mode", j->mode,
			      "problem", j->problem, "m", (json_int_t)j->m, "n", (json_int_t)j->n,
			      "dtype", j->dtype, "seed", (json_int_t)j->seed, "trials", j->trials,
			      "trial0", j->trial0, "device_timeout_ms", j->device_timeout_ms);
	if (j->save_dir[0])
		json_object_set_new(o, "save_dir", json_string(j->save_dir));
	if (j->atol >= 0)
		json_object_set_new(o, "atol", json_real(j->atol));
	if (j->rtol >= 0)
		json_object_set_new(o, "rtol", json_real(j->rtol));
	json_t *arr = json_array();
	for (int i = 0; i < j->n_sol; i++)
		json_array_append_new(arr, json_pack("{s:s,s:s,s:b}", "role", j->sol[i].role,
						     "so", j->sol[i].so, "nccl", j->sol[i].nccl));
	json_object_set_new(o, "solutions", arr);
	if (j->has_perf)
		json_object_set_new(o, "perf", json_pack("{s:i,s:i,s:i,s:s}", "warmup",
							 j->perf.warmup, "iters", j->perf.iters,
							 "block", j->perf.block, "mode", j->perf.mode));
	if (j->rank >= 0)
		wire_job_address(o, j->rank, j->world, j->local_rank);
	return o;
}

void wire_job_address(json_t *job, int rank, int world, int local_rank)
{
	json_object_set_new(job, "rank", json_integer(rank));
	json_object_set_new(job, "world", json_integer(world));
	json_object_set_new(job, "local_rank", json_integer(local_rank));
}

/* copy a string that must fit */
static int take(char *dst, size_t cap, const char *src, const char *key, char *err, size_t n)
{
	size_t len = strlen(src);
	if (len >= cap) {
		snprintf(err, n, "'%s' is %zu bytes, at most %zu", key, len, cap - 1);
		return -1;
	}
	memcpy(dst, src, len + 1);
	return 0;
}

static int fits_int(json_int_t v) { return v >= -2147483647 - 1 && v <= 2147483647; }

/* the type names of messages */
static const char *type_name(int t)
{
	switch (t) {
	case JSON_OBJECT: return "an object";
	case JSON_ARRAY: return "an array";
	case JSON_STRING: return "a string";
	case JSON_INTEGER: return "an integer";
	case JSON_REAL: return "a number";
	case JSON_TRUE: case JSON_FALSE: return "true or false";
	default: return "null";
	}
}

/* obj[key] of type t (JSON_TRUE: a boolean; JSON_REAL: any number): the
 * value, NULL when absent and optional; sets *bad with a message naming
 * where.key when absent and required, or of another type */
static json_t *want(json_t *obj, const char *where, const char *key, int t, int required,
		    int *bad, char *err, size_t n)
{
	if (*bad)
		return NULL;
	json_t *v = json_object_get(obj, key);
	if (!v) {
		if (required) {
			snprintf(err, n, "%s: no '%s'", where, key);
			*bad = 1;
		}
		return NULL;
	}
	int ok = t == JSON_TRUE ? json_is_boolean(v) : t == JSON_REAL ? json_is_number(v)
		 : (int)json_typeof(v) == t;
	if (!ok) {
		snprintf(err, n, "%s: '%s' is %s, not %s", where, key, type_name(json_typeof(v)),
			 type_name(t));
		*bad = 1;
		return NULL;
	}
	return v;
}

#define STR(obj, where, key, dst, req) do { \
	json_t *v_ = want(obj, where, key, JSON_STRING, req, &bad, err, n); \
	if (v_ && take(dst, sizeof dst, json_string_value(v_), key, err, n) < 0) \
		return -1; \
} while (0)
#define INT(obj, where, key, req) json_integer_value(want(obj, where, key, JSON_INTEGER, req, &bad, err, n))

int wire_job_unpack(json_t *in, struct wire_job *j, int addressed, char *err, size_t n)
{
	int bad = 0;
	wire_job_init(j);
	if (!json_is_object(in)) {
		snprintf(err, n, "the job is not a JSON object");
		return -1;
	}
	STR(in, "job", "mode", j->mode, 1);
	STR(in, "job", "problem", j->problem, 1);
	j->m = INT(in, "job", "m", 1);
	j->n = INT(in, "job", "n", 1);
	STR(in, "job", "dtype", j->dtype, 1);
	j->seed = INT(in, "job", "seed", 1);
	json_int_t trials = INT(in, "job", "trials", 1), trial0 = INT(in, "job", "trial0", 1);
	json_int_t dt = INT(in, "job", "device_timeout_ms", 1);
	STR(in, "job", "save_dir", j->save_dir, 0);
	json_t *atol = want(in, "job", "atol", JSON_REAL, 0, &bad, err, n);
	json_t *rtol = want(in, "job", "rtol", JSON_REAL, 0, &bad, err, n);
	json_t *sols = want(in, "job", "solutions", JSON_ARRAY, 1, &bad, err, n);
	json_t *perf = want(in, "job", "perf", JSON_OBJECT, 0, &bad, err, n);
	if (bad)
		return -1;
	if (!fits_int(trials) || !fits_int(trial0) || !fits_int(dt) || trials < 0 || dt < 0) {
		snprintf(err, n, "job: trials, trial0 or device_timeout_ms out of range");
		return -1;
	}
	j->trials = (int)trials;
	j->trial0 = (int)trial0;
	j->device_timeout_ms = (int)dt;
	j->atol = atol ? json_number_value(atol) : -1;
	j->rtol = rtol ? json_number_value(rtol) : -1;
	if (json_array_size(sols) < 1 || json_array_size(sols) > WIRE_MAX_SOL) {
		snprintf(err, n, "job: 'solutions' is an array of 1 to %d", WIRE_MAX_SOL);
		return -1;
	}
	j->n_sol = (int)json_array_size(sols);
	for (int i = 0; i < j->n_sol; i++) {
		json_t *s = json_array_get(sols, (size_t)i);
		char where[32];
		snprintf(where, sizeof where, "job: solution %d", i);
		if (!json_is_object(s)) {
			snprintf(err, n, "%s is not an object", where);
			return -1;
		}
		STR(s, where, "role", j->sol[i].role, 1);
		STR(s, where, "so", j->sol[i].so, 1);
		j->sol[i].nccl = json_is_true(want(s, where, "nccl", JSON_TRUE, 1, &bad, err, n));
		if (bad)
			return -1;
	}
	if (perf) {
		json_int_t w = INT(perf, "job: perf", "warmup", 1), it = INT(perf, "job: perf", "iters", 1),
			   bl = INT(perf, "job: perf", "block", 1);
		STR(perf, "job: perf", "mode", j->perf.mode, 1);
		if (bad)
			return -1;
		if (w < 0 || it < 1 || bl < 1 || w > 100000000 || it > 100000000 || bl > 1000000) {
			snprintf(err, n, "job: perf: warmup >= 0, iters and block >= 1");
			return -1;
		}
		j->perf.warmup = (int)w;
		j->perf.iters = (int)it;
		j->perf.block = (int)bl;
		j->has_perf = 1;
	}
	if (addressed) {
		json_int_t r = INT(in, "job", "rank", 1), w = INT(in, "job", "world", 1),
			   l = INT(in, "job", "local_rank", 1);
		if (bad)
			return -1;
		if (w < 1 || w > 4096 || r < 0 || r >= w || l < 0 || l > 4096) {
			snprintf(err, n, "job: rank %lld of world %lld", (long long)r, (long long)w);
			return -1;
		}
		j->rank = (int)r;
		j->world = (int)w;
		j->local_rank = (int)l;
	}
	return 0;
}

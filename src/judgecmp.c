/*
 * judgecmp.c -- see judgecmp.h. Moved out of rank.c (issue 39): timing.c
 * re-checks outputs with it, and it calls nothing above it.
 */
#include "judgecmp.h"
#include "compare.h"   /* defines: compare_buffers_own, compare_look */
#include "dtype.h"     /* defines: dtype_is_complex */
#include "problem.h"   /* defines: tensor_desc_bytes, tensor_desc_numel */
#include "rank_link.h" /* defines: CUDA_OR */

#include <cuda_runtime_api.h>
#include <jansson.h>
#include <math.h>

void copy_outputs(struct rank_env *E, void *const *dev, void **host)
{
	for (int i = 0; i < E->io.n_out; i++)
		CUDA_OR(E, OUT_RUNTIME_ERROR,
			cudaMemcpyAsync(host[i], dev[i], tensor_desc_bytes(&E->io.out[i]),
					cudaMemcpyDeviceToHost, E->stream));
	CUDA_OR(E, OUT_RUNTIME_ERROR, cudaStreamSynchronize(E->stream));
}

static void coords_of(const struct pkb_tensor_desc *t, int64_t flat, json_t *arr)
{
	int64_t c[PKB_MAX_DIMS];
	for (int d = t->ndim - 1; d >= 0; d--) {
		int64_t ext = t->shape[d] ? t->shape[d] : 1;
		c[d] = flat % ext;
		flat /= ext;
	}
	for (int d = 0; d < t->ndim; d++)
		json_array_append_new(arr, json_integer(c[d]));
}

static json_t *num_or_str(double v)
{
	if (isnan(v))
		return json_string("nan");
	if (isinf(v))
		return json_string(v > 0 ? "inf" : "-inf");
	return json_real(v);
}

void compare_keep_first(struct rank_env *E, json_t *scratch, json_t *outs, int *ok)
{
	json_array_clear(scratch);
	if (!compare_outputs(E, scratch) && *ok) {
		*ok = 0;
		json_array_extend(outs, scratch);
	}
}

/* Compare every output; returns 1 if all pass. Appends records to `outs`. */
int compare_outputs(struct rank_env *E, json_t *outs)
{
	int all_ok = 1;
	for (int i = 0; i < E->io.n_out; i++) {
		const struct pkb_tensor_desc *t = &E->io.out[i];
		struct cmp_result c;
		/* this rank's 1/W of the flat output: right there and wrong
		 * elsewhere reads as local_only (compare_look) */
		int64_t numel = tensor_desc_numel(t);
		int64_t lo = E->world > 1 ? numel / E->world * E->rank : 0;
		int64_t hi = E->world > 1 ? numel / E->world * (E->rank + 1) : 0;
		int ok = compare_buffers_own(t->dtype, E->host_ref[i], E->host_out[i], numel,
					     t->tol, lo, hi, &c);
		all_ok &= ok;
		json_t *o = json_pack("{s:s,s:b,s:I,s:I,s:o,s:o,s:o,s:o}", "name", t->name, "ok", ok,
				      "n", (json_int_t)c.n, "n_bad", (json_int_t)c.n_bad,
				      "max_abs_err", num_or_str(c.max_abs_err),
				      "l2_rel", num_or_str(c.l2_rel), "l2_limit", json_real(c.l2_limit),
				      "amax_ref", json_real(c.amax_ref));
		json_object_set_new(o, "l2_failed", json_boolean(c.l2_failed));
		if (!ok) {
			const char *look = compare_look(&c);
			json_object_set_new(o, "n_bad_poison", json_integer(c.n_bad_poison));
			json_object_set_new(o, "n_bad_zero", json_integer(c.n_bad_zero));
			json_object_set_new(o, "look", look ? json_string(look) : json_null());
		}
		if (c.worst >= 0) {
			json_t *w = json_pack("{s:I,s:o,s:o,s:o}", "index", (json_int_t)c.worst,
					      "ref", num_or_str(c.worst_ref),
					      "cand", num_or_str(c.worst_cand),
					      "bound", json_real(c.worst_bound));
			json_t *coords = json_array();
			coords_of(t, dtype_is_complex(t->dtype) ? c.worst / 2 : c.worst, coords);
			json_object_set_new(w, "coords", coords);
			json_object_set_new(o, "worst", w);
		}
		json_array_append_new(outs, o);
	}
	return all_ok;
}

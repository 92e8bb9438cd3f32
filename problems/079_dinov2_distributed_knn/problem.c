/*
 * 079_dinov2_distributed_knn -- DINOv2's k-NN evaluation with the train
 * set sharded over the ranks: every rank's queries are scored against every
 * shard, each shard keeps its top k, and the owner merges the W lists.
 *
 * Rank r holds test_features_rank (Q, F) (its queries), its train shard
 * stored transposed, train_features_rank_T (F, Ntr), and the shard's labels
 * train_labels_rank (1, Ntr) int64; Q = clamp(M/64, 32, 256), Ntr =
 * clamp(16N/W, 1024, 16384), F = 384 (768 from N = 4096, 1024 from N =
 * 8192), k = max_k = 200. For each owner o in turn the original broadcasts
 * o's queries, every rank computes sims = T(q @ train_T) (Q, Ntr) and its
 * sorted top k with their labels, and o gathers the W lists, concatenates
 * them in rank order and takes the top k again. Rank r returns, for its
 * own queries, topk_sims (Q, k) T and topk_labels (Q, k) int64: the k
 * largest similarities over all W*Ntr train rows, descending, ties in
 * ascending global index (shard rank, then column).
 *
 * Per rank: receive the W-1 other query blocks and, as owner, the W-1 lists
 * of k (similarity, label): (W-1) Q (F e + k (e + 8)) bytes, 266 KB at the
 * default W = 4; W GEMMs of Q x F x Ntr.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pkb_problem.h"

#define MAX_K 200
#define QSCALE 512.0   /* features are integers / 512, |integer| <= 255 */

static int64_t queries_of(const struct pkb_dims *d)
{
	int64_t q = d->m / 64;
	return q < 32 ? 32 : q > 256 ? 256 : q;
}

static int64_t train_of(const struct pkb_dims *d)
{
	int64_t t = d->n * 16 / d->world;
	return t < 1024 ? 1024 : t > 16384 ? 16384 : t;
}

static int64_t feat_of(const struct pkb_dims *d)
{
	return d->n >= 8192 ? 1024 : d->n >= 4096 ? 768 : 384;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->dtype != PKB_BF16 && d->dtype != PKB_FP16 && d->dtype != PKB_FP32)
		return pkb_io_fail(io, "dtype must be bf16, fp16 or fp32");
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	int64_t q = queries_of(d), t = train_of(d), f = feat_of(d);
	pkb_io_input(io, "test_features_rank", d->dtype, PKB_HOSTGEN, PKB_SHAPE(q, f));
	pkb_io_input(io, "train_features_rank_T", d->dtype, PKB_HOSTGEN, PKB_SHAPE(f, t));
	pkb_io_input(io, "train_labels_rank", PKB_I64, PKB_HOSTGEN, PKB_SHAPE(1, t));
	pkb_io_param(io, "max_k", MAX_K);

	/*
	 * Exact, both. The features are multiples of 2^-9 below 2^-1 in
	 * magnitude (exact in bf16, fp16 and even TF32), so every product is a
	 * multiple of 2^-18 and every partial sum of a dot product of two
	 * near-unit vectors is below 2^0 by Cauchy-Schwarz: all of them exact in
	 * fp32, in any order, tensor cores included. Each similarity is then
	 * one rounding of an exact value, the same for every correct kernel,
	 * and the tie rule (ascending global index) fixes the order and which
	 * tied rows make the cut: the labels are determined too. (With the
	 * original's unquantised features, ~69% of adjacent similarities in a
	 * list are equal in bf16 and a GEMM of another accumulation order
	 * reorders them.)
	 */
	pkb_io_output(io, "topk_sims", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(q, MAX_K));
	pkb_io_output(io, "topk_labels", PKB_I64, PKB_TOL_EXACT, PKB_SHAPE(q, MAX_K));
	return 0;
}

/* One randn row, L2-normalised and rounded to a multiple of 1/512 (the
 * original normalises, then rounds to T). */
static void feature_row(uint64_t *s, double *x, int64_t f)
{
	double n = 0;
	for (int64_t j = 0; j < f; j++) {
		x[j] = pkb_rng_normal(s);
		n += x[j] * x[j];
	}
	n = QSCALE / sqrt(n);
	for (int64_t j = 0; j < f; j++) {
		double v = nearbyint(x[j] * n);
		x[j] = (v > 255 ? 255 : v < -255 ? -255 : v) / QSCALE;
	}
}

/* Labels are uniform in [0, 1000) (the original's are (r Ntr + j) mod 1000,
 * computable without the input). */
static int gen_host(const struct pkb_dims *d, int index, uint64_t seed, void *buf, size_t bytes)
{
	int64_t q = queries_of(d), t = train_of(d), f = feat_of(d);
	size_t e = pkb_dtype_size(d->dtype);
	uint64_t s = seed;
	if (index == 2) {
		if (bytes != (size_t)t * sizeof(int64_t))
			return -1;
		for (int64_t j = 0; j < t; j++)
			((int64_t *)buf)[j] = (int64_t)(pkb_rng_next(&s) % 1000);
		return 0;
	}
	int64_t rows = index == 0 ? q : t;
	if ((index != 0 && index != 1) || bytes != (size_t)(rows * f) * e)
		return -1;
	double *x = malloc(sizeof(double) * f);
	if (!x)
		return -1;
	for (int64_t i = 0; i < rows; i++) {
		feature_row(&s, x, f);
		for (int64_t j = 0; j < f; j++)
			pkb_dtype_store(d->dtype, buf, index == 0 ? i * f + j : j * t + i, x[j]);
	}
	free(x);
	return 0;
}

/* Receive the W-1 other query blocks and, for the own queries, the W-1
 * lists of k (similarity, int64 label); sending the shard instead (F Ntr e
 * each) would be far more. W GEMMs Q x F x Ntr on the tensor cores; the
 * selections are comparisons, not counted. HBM: the default. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double w = d->world, e = pkb_dtype_size(d->dtype), q = (double)queries_of(d);
	c->net_bytes = (w - 1) * q * (feat_of(d) * e + MAX_K * (e + 8));
	c->flops = w * 2 * q * feat_of(d) * (double)train_of(d);
	c->flop_kind = PKB_FLOPS_TENSOR;
	c->note = "all-gather of the queries, W GEMMs + top-k, gather of k per shard";
}

const struct pkb_problem pkb_problem_079 = {
	.id = 79,
	.name = "dinov2_distributed_knn",
	.title = "Distributed k-NN (broadcast queries, local top-k, gather + merge)",
	.category = "Data Parallel",
	.origin = "DINOv2 eval/knn.py KnnModule (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.gen_host = gen_host,
	.cost = cost,
};

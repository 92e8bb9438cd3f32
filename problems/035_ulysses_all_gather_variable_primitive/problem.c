/*
 * 035_ulysses_all_gather_variable_primitive -- the Ulysses variable-size
 * all-gather (DeepSpeed-Ulysses / VeOmni all_gather with a size exchange):
 * every rank's shape is all-gathered first, then the tensors, concatenated
 * along gather_dim = 0.
 *
 * Rank r holds x_r (m_r, N); every rank returns, the same on all ranks,
 *     out = [x_0; x_1; ...; x_{W-1}]        (m_0 + ... + m_{W-1}, N)
 * with rank j's rows at [m_0 + ... + m_{j-1}, ... + m_j).
 *
 * The original's harness gives every rank the same (M, N), which leaves the
 * size exchange -- the point of this primitive -- untested and makes the
 * problem 034. pkb gives the ranks different row counts,
 *     m_r = max(1, floor(M (W + 1 + 2r) / (2W)))
 * from about M/2 on rank 0 to about 3M/2 on rank W-1, about W*M in all
 * (640, 896, 1152, 1408 at M = 1024, W = 4); the function computed is the
 * original's. The original's `group` (None: the world) is no parameter.
 * Pure data movement: compared exactly.
 *
 * Minimum traffic per rank: receive the other ranks' rows, send its own at
 * least once: max(total - m_r, m_r) * N*e bytes (6.75 MiB on rank 0 at
 * M = N = 1024, bf16, W = 4).
 */
#include "pkb_problem.h"

/* rows of rank r */
static int64_t rows_of(const struct pkb_dims *d, int r)
{
	int64_t v = d->m * (d->world + 1 + 2 * r) / (2 * d->world);
	return v > 1 ? v : 1;
}

static int64_t rows_total(const struct pkb_dims *d)
{
	int64_t t = 0;
	for (int r = 0; r < d->world; r++)
		t += rows_of(d, r);
	return t;
}

static int describe(const struct pkb_dims *d, struct pkb_io *io)
{
	if (d->m < 1 || d->n < 1)
		return pkb_io_fail(io, "M and N must be >= 1");
	pkb_io_input(io, "x", d->dtype, PKB_NORMAL(0, 1), PKB_SHAPE(rows_of(d, d->rank), d->n));
	pkb_io_param(io, "gather_dim", 0);
	/* a copy: every element equal, as a number (docs/TOLERANCE.md) */
	pkb_io_output(io, "out", d->dtype, PKB_TOL_EXACT, PKB_SHAPE(rows_total(d), d->n));
	return 0;
}

/* Rank j's rows are held by rank j alone: all the others must arrive here,
 * and this rank's rows must leave it at least once (a relay may forward
 * them further). HBM: read the input, write the gathered output (the
 * default). The shapes are fixed for an instance, so the size exchange need
 * not be paid per call. No arithmetic. */
static void cost(const struct pkb_dims *d, struct pkb_cost *c)
{
	double row = (double)d->n * pkb_dtype_size(d->dtype);
	double mine = (double)rows_of(d, d->rank), recv = (double)rows_total(d) - mine;
	c->net_bytes = (recv > mine ? recv : mine) * row;
	c->note = "one-shot or ring all-gather of uneven blocks";
}

const struct pkb_problem pkb_problem_035 = {
	.id = 35,
	.name = "ulysses_all_gather_variable_primitive",
	.title = "Ulysses variable-size all-gather primitive",
	.category = "Context Parallel",
	.origin = "DeepSpeed-Ulysses / VeOmni all_gather with a size exchange (inferred)",
	.worlds = PKB_WORLDS_ANY,
	.describe = describe,
	.cost = cost,
};

/*
 * score.h -- the metrics of `pkb score` (issue 24), pure functions over
 * numbers so that they are unit-tested by hand (tests/unit/test_score.c):
 * pass@k (Chen et al. 2021, unbiased), fast_p (KernelBench), geometric
 * means of speedups, and the speed-of-light score of docs/ROOFLINE.md.
 */
#ifndef PKB_SCORE_H
#define PKB_SCORE_H

/* One candidate as the metrics see it: correct is eval's verdict "passed"
 * (summary.c: at the announced shape and at the hidden one where pkb sweep
 * evaluated one, and not timed under the roofline's bound: a flagged time
 * is never a speedup); speedup is T_ref / T_k (only meaningful when
 * correct). */
struct score_item {
	int correct;
	double speedup;
};

/* pass@k = 1 - C(n-c, k) / C(n, k) for n samples of which c are correct;
 * the product form 1 - prod_{i=n-c+1..n} (1 - k/i) never forms a binomial
 * (C(200,100) ~ 9e58 would lose every digit). NaN when k < 1, k > n,
 * c < 0 or c > n. */
double score_pass_at_k(int n, int c, int k);

/* fast_p: the fraction of the n items that are correct AND have
 * speedup > p (strictly, as KernelBench's fastp: a tie at p does not
 * count). fast_0 is the fraction correct, timed or not (any real speedup
 * is > 0). NaN for n = 0. */
double score_fast_p(const struct score_item *it, int n, double p);

/* Geometric mean of the speedups of the correct items (clamp: each taken
 * as max(speedup, 1) first, so a slow kernel counts as the reference), as
 * exp of the mean of the logs: a product underflows (2000 speedups of
 * 1e-3: 1e-6000 is 0) or overflows (1000 of 10x), the mean of logs does
 * neither. Items with a speedup that is not finite and > 0 are skipped.
 * NaN when no item counts. *used (may be NULL) gets how many counted. */
double score_geomean(const struct score_item *it, int n, int clamp, int *used);

/* What the geomean rows of `pkb score` are, in the words printed under the
 * table (the lines of the "geomean" entry of the definitions). The plain
 * geomean is KernelBench's: over the correct timed samples, unclamped, so
 * a slower candidate pulls it below 1; the clamped one is a second row. */
#define SCORE_GEOMEAN_WORDS \
"geomean    geometric mean of the speedups (eval's: the smaller of the ratios of medians\n" \
"           and of means, same launch) of every correct timed candidate, as KernelBench:\n" \
"           not clamped, a slower candidate pulls it below 1; geomean clamped: the same\n" \
"           with each speedup taken as max(speedup, 1) (a slow kernel counts as the\n" \
"           reference)\n"
extern const char score_geomean_words[];

/* Speed-of-light score S = 1 / (1 + (tk - tsol) / (tb - tsol)): 0.5 at
 * the reference's time tb, 1 at the bound tsol. NaN when the inputs do not
 * allow it (tb <= tsol, tk < tsol: a flagged time, non-positive times). */
double score_sol(double tk, double tb, double tsol);

/* Roofline fraction tsol / tk (1 at the bound); NaN on bad inputs. */
double score_roofline_fraction(double tk, double tsol);

#endif

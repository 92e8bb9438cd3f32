/*
 * score.c -- see score.h. Every function is total: inputs that do not
 * define the metric give NaN, which the tables print as "-".
 */
#include "score.h"

#include <math.h>

double score_pass_at_k(int n, int c, int k)
{
	if (n < 1 || k < 1 || k > n || c < 0 || c > n)
		return NAN;
	/* fewer than k wrong samples: every draw of k holds a correct one */
	if (n - c < k)
		return 1.0;
	double miss = 1.0;   /* C(n-c,k)/C(n,k) = prod_{i=n-c+1..n} (1 - k/i) */
	for (int i = n - c + 1; i <= n; i++)
		miss *= 1.0 - (double)k / i;
	return 1.0 - miss;
}

double score_fast_p(const struct score_item *it, int n, double p)
{
	if (n < 1)
		return NAN;
	int m = 0;
	for (int i = 0; i < n; i++)
		if (it[i].correct && (p == 0 || it[i].speedup > p))
			m++;
	return (double)m / n;
}

double score_geomean(const struct score_item *it, int n, int clamp, int *used)
{
	double sum = 0;   /* sum of logs: a product of 1000 speedups of 10x overflows,
			   * of 2000 of 1e-3 underflows to 0 */
	int m = 0;
	for (int i = 0; i < n; i++) {
		double s = it[i].speedup;
		if (!it[i].correct || !isfinite(s) || s <= 0)
			continue;
		if (clamp && s < 1)
			s = 1;
		sum += log(s);
		m++;
	}
	if (used)
		*used = m;
	return m ? exp(sum / m) : NAN;
}

const char score_geomean_words[] = SCORE_GEOMEAN_WORDS;

double score_sol(double tk, double tb, double tsol)
{
	if (!(tsol > 0) || !(tb > tsol) || !(tk >= tsol) || !isfinite(tk) || !isfinite(tb))
		return NAN;
	return 1.0 / (1.0 + (tk - tsol) / (tb - tsol));
}

double score_roofline_fraction(double tk, double tsol)
{
	if (!(tsol > 0) || !(tk > 0) || !isfinite(tk))
		return NAN;
	return tsol / tk;
}

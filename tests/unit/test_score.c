/*
 * test_score.c -- src/score.c against values worked out by hand:
 * pass@k for n = 5, c = 0..5 and every k (1 - C(5-c,k)/C(5,k), the
 * binomials written out below), fast_p with ties at p, geometric means.
 */
#include "../../src/score.h"
#include "t.h"

#include <math.h>
#include <string.h>

static int near(double a, double b) { return fabs(a - b) < 1e-12; }

int main(void)
{
	/* pass5[c][k-1] = 1 - C(5-c,k)/C(5,k), C(5,k) = 5 10 10 5 1:
	 * c=1: C(4,k) = 4 6 4 1 0 -> 1/5 4/10 6/10 4/5 1
	 * c=2: C(3,k) = 3 3 1 0 0 -> 2/5 7/10 9/10 1 1
	 * c=3: C(2,k) = 2 1 0 0 0 -> 3/5 9/10 1 1 1
	 * c=4: C(1,k) = 1 0 0 0 0 -> 4/5 1 1 1 1 */
	static const double pass5[6][5] = {
		{0, 0, 0, 0, 0},
		{0.2, 0.4, 0.6, 0.8, 1},
		{0.4, 0.7, 0.9, 1, 1},
		{0.6, 0.9, 1, 1, 1},
		{0.8, 1, 1, 1, 1},
		{1, 1, 1, 1, 1},
	};
	for (int c = 0; c <= 5; c++)
		for (int k = 1; k <= 5; k++) {
			double v = score_pass_at_k(5, c, k);
			CHECKF(near(v, pass5[c][k - 1]), "n=5 c=%d k=%d: %.15g, want %g",
			       c, k, v, pass5[c][k - 1]);
		}
	/* out of domain */
	CHECK(isnan(score_pass_at_k(5, 2, 0)));
	CHECK(isnan(score_pass_at_k(5, 2, 6)));
	CHECK(isnan(score_pass_at_k(5, 6, 1)));
	CHECK(isnan(score_pass_at_k(5, -1, 1)));
	CHECK(isnan(score_pass_at_k(0, 0, 1)));
	/* large n stays finite and exact enough: pass@1 is c/n for any n */
	CHECK(near(score_pass_at_k(200, 37, 1), 37.0 / 200));
	/* n = 200, c = 1, k = 100: C(199,100)/C(200,100) = 100/200 */
	CHECK(fabs(score_pass_at_k(200, 1, 100) - 0.5) < 1e-12);

	/* fast_p: speedups 0.5, 1.0 (tie at p = 1), 1.0, 1.5 (tie at 1.5),
	 * 2.0 (tie at 2), 3.0 wrong (not counted at any p), 1.2 */
	struct score_item t[] = {
		{1, 0.5}, {1, 1.0}, {1, 1.0}, {1, 1.5}, {1, 2.0}, {0, 3.0}, {1, 1.2},
	};
	int n = 7;
	CHECK(near(score_fast_p(t, n, 0), 6.0 / 7));     /* all six correct */
	CHECK(near(score_fast_p(t, n, 0.5), 5.0 / 7));   /* 0.5 is a tie: out */
	CHECK(near(score_fast_p(t, n, 1), 3.0 / 7));     /* 1.5 2.0 1.2; the 1.0s tie */
	CHECK(near(score_fast_p(t, n, 1.5), 1.0 / 7));   /* only 2.0 */
	CHECK(near(score_fast_p(t, n, 2), 0.0));         /* 2.0 ties; 3.0 is wrong */
	CHECK(near(score_fast_p(t, n, 1.1), 3.0 / 7));
	CHECK(isnan(score_fast_p(t, 0, 1)));
	/* untimed correct candidates (speedup NaN): fast_0 counts them, no p > 0 does */
	struct score_item u[] = {{1, NAN}, {0, NAN}};
	CHECK(near(score_fast_p(u, 2, 0), 0.5));
	CHECK(near(score_fast_p(u, 2, 0.5), 0));

	/* geomean: correct speedups 0.5 1 1 1.5 2 1.2 -> product 1.8, 6th root */
	int used = -1;
	double g = score_geomean(t, n, 0, &used);
	CHECK(used == 6);
	CHECK(near(g, pow(1.8, 1.0 / 6)));
	/* clamped: 0.5 -> 1: product 3.6 */
	g = score_geomean(t, n, 1, &used);
	CHECK(used == 6 && near(g, pow(3.6, 1.0 / 6)));
	/* 2 and 8 -> 4; 0.25 and 4 -> 1 raw, clamped sqrt(4) = 2 */
	struct score_item a[] = {{1, 2}, {1, 8}}, b[] = {{1, 0.25}, {1, 4}};
	CHECK(near(score_geomean(a, 2, 0, NULL), 4));
	CHECK(near(score_geomean(b, 2, 0, NULL), 1));
	CHECK(near(score_geomean(b, 2, 1, NULL), 2));
	/* nothing correct, or only bad speedups: NaN, none used */
	struct score_item z[] = {{0, 2}, {1, 0}, {1, NAN}, {1, -1}};
	CHECK(isnan(score_geomean(z, 4, 0, &used)) && used == 0);
	/* 1000 speedups of 10x: the product (1e1000) would overflow */
	struct score_item big[1000];
	for (int i = 0; i < 1000; i++)
		big[i] = (struct score_item){1, 10};
	CHECK(fabs(score_geomean(big, 1000, 0, NULL) - 10) < 1e-9);
	/* issue 44 (GPU MODE's geomean underflow): 2000 speedups of 1e-3, whose
	 * product 1e-6000 is 0 in a double (the product's 2000th root: 0, and
	 * its log -inf), are a geomean of 1e-3; clamped, 1 */
	static struct score_item tiny[2000];
	double prod = 1;
	for (int i = 0; i < 2000; i++) {
		tiny[i] = (struct score_item){1, 1e-3};
		prod *= tiny[i].speedup;
	}
	CHECK(prod == 0);   /* what a product would have been left with */
	g = score_geomean(tiny, 2000, 0, &used);
	CHECKF(used == 2000 && fabs(g / 1e-3 - 1) < 1e-9, "2000 x 1e-3: %g over %d", g, used);
	CHECK(near(score_geomean(tiny, 2000, 1, NULL), 1));
	/* huge and tiny together: 1000 of 1e300 and 1000 of 1e-300 are 1 (a
	 * product taken in sorted order is 0 after two terms and stays 0);
	 * 2000 of 1e308 stay 1e308 (a product is inf after two) */
	static struct score_item mix[2000];
	for (int i = 0; i < 2000; i++)
		mix[i] = (struct score_item){1, i % 2 ? 1e300 : 1e-300};
	g = score_geomean(mix, 2000, 0, NULL);
	CHECKF(fabs(g - 1) < 1e-9, "1e300 and 1e-300: %g", g);
	for (int i = 0; i < 2000; i++)
		mix[i] = (struct score_item){1, 1e308};
	g = score_geomean(mix, 2000, 0, NULL);
	CHECKF(isfinite(g) && fabs(g / 1e308 - 1) < 1e-9, "2000 x 1e308: %g", g);
	/* an infinite or zero speedup (a broken record) is skipped, not a NaN or 0 */
	mix[0] = (struct score_item){1, INFINITY};
	mix[1] = (struct score_item){1, 0};
	g = score_geomean(mix, 2000, 0, &used);
	CHECK(used == 1998 && isfinite(g));
	/* the words printed for the rows say what the numbers are: the plain
	 * geomean is unclamped (b above: 1, not 2), the clamped one is named */
	CHECK(strstr(score_geomean_words, "not clamped") != NULL);
	CHECK(strstr(score_geomean_words, "geomean clamped: the same\n           with each speedup taken as max(speedup, 1)") != NULL);
	CHECK(strncmp(score_geomean_words, "geomean ", 8) == 0);

	/* S: tsol 10, tb 30: tk = tb -> 0.5, tk = tsol -> 1, tk = 50 -> 1/3 */
	CHECK(near(score_sol(30, 30, 10), 0.5));
	CHECK(near(score_sol(10, 30, 10), 1));
	CHECK(near(score_sol(50, 30, 10), 1.0 / 3));
	CHECK(isnan(score_sol(9, 30, 10)));    /* below the bound: flagged */
	CHECK(isnan(score_sol(20, 10, 10)));   /* tb at the bound */
	CHECK(isnan(score_sol(20, 30, 0)));
	CHECK(near(score_roofline_fraction(40, 10), 0.25));
	CHECK(isnan(score_roofline_fraction(0, 10)));
	return t_done("test_score");
}

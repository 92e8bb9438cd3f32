/*
 * cmd_compare.c -- `pkb compare DIR_A DIR_B` compares saved outputs
 * (rank_R_outputs.safetensors, from `pkb run --save`) rank by rank with the
 * problem's tolerance model; `pkb compare --inspect DIR` describes them.
 */
#include "cmds.h"
#include "compare.h"
#include "dtype.h"
#include "exitcode.h"
#include "problem.h"
#include "safetensors.h"
#include "opts.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char head[] =
"usage: pkb compare DIR_A DIR_B [--atol A] [--rtol R] [--exact]\n"
"   or: pkb compare --inspect DIR\n"
"\n"
"Compare the rank_R_outputs.safetensors files of two `pkb run --save` folders\n"
"(DIR_A is the reference) with the problem's tolerances, or describe one folder.\n"
"\n";
static const char tail[] =
"\n"
"exit status: 0 all match, 3 a mismatch, 1 unreadable or incomparable files\n";

enum { OPT_INSPECT = 1000, OPT_ATOL, OPT_RTOL, OPT_EXACT };
static const struct opt compare_opts[] = {
	{ OPT_INSPECT, "inspect", NULL, "describe one folder's tensors" },
	{ OPT_ATOL, "atol", "A", "absolute tolerance in place of the problem's" },
	{ OPT_RTOL, "rtol", "R", "relative tolerance in place of the problem's" },
	{ OPT_EXACT, "exact", NULL, "every element bit for bit" },
	OPTS_END,
};
static const struct opt *const tables[] = { compare_opts, NULL };

static int list_outputs(const char *dir, int *ranks, int max)
{
	DIR *d = opendir(dir);
	if (!d)
		return -1;
	int n = 0;
	struct dirent *e;
	while ((e = readdir(d))) {
		int r;
		char rest[64];
		if (sscanf(e->d_name, "rank_%d_%63s", &r, rest) == 2 &&
		    !strcmp(rest, "outputs.safetensors") && n < max)
			ranks[n++] = r;
	}
	closedir(d);
	for (int i = 1; i < n; i++)   /* tiny insertion sort */
		for (int j = i; j > 0 && ranks[j - 1] > ranks[j]; j--) {
			int t = ranks[j];
			ranks[j] = ranks[j - 1];
			ranks[j - 1] = t;
		}
	return n;
}

static int inspect(const char *dir)
{
	DIR *d = opendir(dir);
	if (!d) {
		error("cannot open '%s'", dir);
		return PKB_EXIT_INPUT;
	}
	struct dirent *e;
	int files = 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name);
		if (l < 12 || strcmp(e->d_name + l - 12, ".safetensors"))
			continue;
		char *path = xstrfmt("%s/%s", dir, e->d_name);
		struct st_file f;
		char err[256];
		if (st_read(path, &f, err, sizeof err) < 0) {
			error("%s", err);
			free(path);
			closedir(d);
			return PKB_EXIT_INPUT;
		}
		files++;
		printf("%s", e->d_name);
		for (int k = 0; k < f.n_meta; k++)
			printf(" %s=%s", f.meta_keys[k], f.meta_vals[k]);
		printf("\n");
		for (int i = 0; i < f.n; i++) {
			const struct st_tensor *t = &f.t[i];
			int64_t n = (int64_t)(t->bytes / pkb_dtype_size(t->dtype));
			double mean_abs, amax;
			int64_t bad;
			dtype_stats(t->dtype, t->data, n,
				    &mean_abs, &amax, &bad);
			char shape[128];
			size_t off = (size_t)snprintf(shape, sizeof shape, "(");
			for (int k = 0; k < t->ndim; k++)
				off += (size_t)snprintf(shape + off, sizeof shape - off, "%s%lld",
							k ? ", " : "", (long long)t->shape[k]);
			snprintf(shape + off, sizeof shape - off, ")");
			printf("  %-20s %-9s %-22s mean|x| %-11.5g max|x| %-11.5g nonfinite %lld\n",
			       t->name, dtype_name(t->dtype), shape, mean_abs, amax,
			       (long long)bad);
		}
		st_free(&f);
		free(path);
	}
	closedir(d);
	if (!files) {
		error("no .safetensors files in '%s'", dir);
		return PKB_EXIT_INPUT;
	}
	return 0;
}

/* The problem's tolerance for output `name`, from the files' metadata
 * (what `pkb run --save` writes): -1 with `why` when they name a problem of
 * pkb's with a value that is not one (a world that is not a number, an
 * unknown dtype); else the problem's tolerance, or the default -- exact,
 * which can only fail what the problem's would pass -- with a warning when
 * the instance or the output is not the problem's, or without one when no
 * problem is named. */
static int tol_for(const struct st_file *f, const char *name, struct pkb_tol *tol, char *why,
		   size_t n)
{
	*tol = (struct pkb_tol)PKB_TOL_DEFAULT;
	const char *id = st_meta(f, "pkb_problem");
	const struct pkb_problem *p = id ? problem_find(id) : NULL;
	if (!p)
		return 0;
	static const char *const keys[] = { "world", "rank", "m", "n", "trial" };
	static const long long lo[] = { 1, 0, 1, 1, 0 }, hi[] = { 4096, 4095, 1ll << 40,
								 1ll << 40, 1 << 30 };
	long long v[5];
	for (int i = 0; i < 5; i++) {
		const char *t = st_meta(f, keys[i]);
		v[i] = lo[i];
		if (t ? parse_int_in(t, lo[i], hi[i], &v[i]) < 0 : i < 4) {
			snprintf(why, n, "metadata '%s' is %s%s%s, not a number from %lld to %lld",
				 keys[i], t ? "'" : "missing", t ? t : "", t ? "'" : "", lo[i], hi[i]);
			return -1;
		}
	}
	const char *dt = st_meta(f, "dtype");
	int dtype = dt ? dtype_parse(dt) : -1;
	if (dtype < 0) {
		snprintf(why, n, "metadata 'dtype' is '%s', not a dtype", dt ? dt : "missing");
		return -1;
	}
	struct pkb_dims d = { .world = (int)v[0], .rank = (int)v[1], .m = v[2], .n = v[3],
			      .dtype = (pkb_dtype)dtype, .trial = (int)v[4] };
	struct pkb_io io;
	if (problem_describe(p, &d, &io) < 0) {
		warning("problem %s does not take the instance its metadata names (W = %d, %lld x "
			"%lld, %s): '%s' compared exactly", id, d.world, (long long)d.m,
			(long long)d.n, dt, name);
		return 0;
	}
	for (int i = 0; i < io.n_out; i++)
		if (!strcmp(io.out[i].name, name)) {
			*tol = io.out[i].tol;
			return 0;
		}
	warning("problem %s has no output '%s': compared exactly", id, name);
	return 0;
}

int cmd_compare(int argc, char **argv)
{
	int do_inspect = 0, exact = 0, c;
	double atol = -1, rtol = -1;
	struct opts_parser P;
	opts_init(&P, tables);
	while ((c = opts_next(&P, argc, argv)) != -1) {
		switch (c) {
		case OPT_INSPECT: do_inspect = 1; break;
		case OPT_ATOL:
		case OPT_RTOL:
			/* Strict: atof("abc") is 0, which silently asked for an
			 * exact match (issue 30). */
			if (opt_num(c == OPT_ATOL ? "atol" : "rtol", optarg, 0, 1e30,
				    c == OPT_ATOL ? &atol : &rtol) < 0) {
				opts_usage(stderr, head, tables, tail);
				return PKB_EXIT_USAGE;
			}
			break;
		case OPT_EXACT: exact = 1; break;
		case 'h': opts_usage(stdout, head, tables, tail); return 0;
		default: opts_usage(stderr, head, tables, tail); return PKB_EXIT_USAGE;
		}
	}
	if (do_inspect) {
		if (argc - optind != 1) {
			error("--inspect takes one folder");
			return PKB_EXIT_USAGE;
		}
		return inspect(argv[optind]);
	}
	if (argc - optind != 2) {
		error("compare takes two folders");
		opts_usage(stderr, head, tables, tail);
		return PKB_EXIT_USAGE;
	}
	const char *da = argv[optind], *db = argv[optind + 1];
	int ra[256], rb[256];
	int na = list_outputs(da, ra, 256), nb = list_outputs(db, rb, 256);
	if (na < 0 || nb < 0) {
		error("cannot open '%s'", na < 0 ? da : db);
		return PKB_EXIT_INPUT;
	}
	if (na == 0 || na != nb || memcmp(ra, rb, (size_t)na * sizeof(int))) {
		error("'%s' and '%s' do not hold outputs of the same ranks (%d and %d files)", da,
		      db, na, nb);
		return PKB_EXIT_INPUT;
	}
	int bad = 0;
	for (int i = 0; i < na; i++) {
		char *pa = xstrfmt("%s/rank_%d_outputs.safetensors", da, ra[i]);
		char *pb = xstrfmt("%s/rank_%d_outputs.safetensors", db, ra[i]);
		struct st_file fa, fb;
		char err[256];
		if (st_read(pa, &fa, err, sizeof err) < 0 || st_read(pb, &fb, err, sizeof err) < 0) {
			error("%s", err);
			return PKB_EXIT_INPUT;
		}
		for (int k = 0; k < fa.n; k++) {
			const struct st_tensor *a = &fa.t[k], *b = st_find(&fb, a->name);
			if (!b || b->dtype != a->dtype || b->ndim != a->ndim ||
			    memcmp(a->shape, b->shape, sizeof a->shape)) {
				printf("rank %d %-20s incomparable: %s\n", ra[i], a->name,
				       b ? "dtype or shape differs" : "missing in the second folder");
				bad = bad ? bad : PKB_EXIT_INPUT;
				continue;
			}
			struct pkb_tol tol = PKB_TOL_EXACT;
			char why[300];
			if (!exact && tol_for(&fa, a->name, &tol, why, sizeof why) < 0) {
				error("%s: %s", pa, why);
				return PKB_EXIT_INPUT;
			}
			if (atol >= 0)
				tol.atol = atol, tol.exact = 0;
			if (rtol >= 0)
				tol.rtol = rtol, tol.exact = 0;
			struct cmp_result r;
			/* elements: a complex64 one is 8 bytes, compared as 2 reals */
			int64_t n = (int64_t)(a->bytes / pkb_dtype_size(a->dtype));
			int ok = compare_buffers(a->dtype, a->data, b->data, n, tol, &r);
			printf("rank %d %-20s %s", ra[i], a->name, ok ? "match" : "MISMATCH");
			if (!ok) {
				printf(": %lld of %lld wrong", (long long)r.n_bad, (long long)r.n);
				if (r.worst >= 0)
					printf("; worst at %lld: %.6g vs %.6g (bound %.3g)",
					       (long long)r.worst, r.worst_ref, r.worst_cand, r.worst_bound);
				if (r.l2_failed)
					printf("; L2 %.3g > %.3g", r.l2_rel, r.l2_limit);
				bad = PKB_EXIT_MISMATCH;
			}
			printf("\n");
		}
		st_free(&fa);
		st_free(&fb);
		free(pa);
		free(pb);
	}
	return bad;
}

/*
 * opts.h -- a command's options as tables, git's parse-options shape: one
 * entry per option holds its getopt id, its long name, its argument's name
 * and its help, and the same tables yield getopt_long's array, the short
 * option string and the help text. A command lists its own table first,
 * then the shared groups it takes (job.h: the dims, the output, the
 * launch), so no option is written in two places.
 *
 *	static const struct opt mine[] = {
 *		{ 't', "trials", "K", "trials (default 5), each with fresh inputs" },
 *		{ OPT_ATOL, "atol", "A", "override the problem's absolute tolerance" },
 *		OPTS_END,
 *	};
 *	const struct opt *const tables[] = { mine, job_opts_dims, NULL };
 *	struct opts_parser P;
 *	opts_init(&P, tables);
 *	while ((c = opts_next(&P, argc, argv)) != -1) ...
 */
#ifndef PKB_OPTS_H
#define PKB_OPTS_H

#include <getopt.h>
#include "pkb.h"      /* defines: pkb_dtype */
#include <stdio.h>

struct opt {
	int id;             /* what getopt returns: a letter (then also -letter) or a
			       code of 1000 and up (long form only) */
	const char *name;   /* the long name, without "--" */
	const char *arg;    /* the argument's name in the help; NULL: a flag */
	const char *help;   /* '\n' starts a continuation line, aligned */
};
#define OPTS_END { 0, NULL, NULL, NULL }
#define OPTS_MAX 64

struct opts_parser {
	struct option lo[OPTS_MAX + 2];   /* + --help, + the end */
	char so[3 * OPTS_MAX + 4];
};

/* Build the parser of `tables` (NULL-terminated) and reset getopt: --help
 * and -h are added, returned as 'h'. A table with a name twice, or an id
 * twice, is a bug (BUG()). */
void opts_init(struct opts_parser *p, const struct opt *const *tables);
/* getopt_long over the tables: the next option's id (optarg as usual), '?'
 * on an unknown option or a missing argument (getopt said which), -1 at the
 * end. */
int opts_next(struct opts_parser *p, int argc, char **argv);
/* the entry of `id` in the tables, or NULL */
const struct opt *opts_find(const struct opt *const *tables, int id);
/* The tables' help lines: "  -g, --gpus W", the help from column 25 on. */
void opts_help(FILE *f, const struct opt *const *tables);
/* head, the help lines, tail (either may be NULL) */
void opts_usage(FILE *f, const char *head, const struct opt *const *tables, const char *tail);
/* An option's number, strictly (all of it, finite, within [lo, hi]:
 * util.h's parse_int_in/parse_num_in), or the one-line error naming the
 * option: "--NAME takes an integer from LO to HI, not 'S'" (a number: the
 * same with "a number"). 0, or -1 with the error printed. */
int opt_int(const char *name, const char *s, long long lo, long long hi, long long *out);
int opt_num(const char *name, const char *s, double lo, double hi, double *out);
/* -d/--dtype: one of the floating types a problem takes (bf16, fp16,
 * fp32) into *out; -1 after error() */
int opt_dtype(const char *s, pkb_dtype *out);

#endif

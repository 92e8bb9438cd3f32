/*
 * opts.c -- see opts.h.
 */
#include "opts.h"
#include "dtype.h"   /* defines: dtype_parse */
#include "util.h"

#include <string.h>

static int is_letter(int id)
{
	return (id >= 'a' && id <= 'z') || (id >= 'A' && id <= 'Z');
}

void opts_init(struct opts_parser *p, const struct opt *const *tables)
{
	memset(p, 0, sizeof *p);
	int n = 0;
	size_t s = 0;
	for (int t = 0; tables[t]; t++)
		for (const struct opt *o = tables[t]; o->name; o++) {
			if (n >= OPTS_MAX)
				BUG("more than %d options", OPTS_MAX);
			for (int k = 0; k < n; k++)
				if (!strcmp(p->lo[k].name, o->name) || p->lo[k].val == o->id)
					BUG("option --%s given twice (or its id %d)", o->name, o->id);
			p->lo[n++] = (struct option){ o->name, o->arg ? required_argument : no_argument,
						      NULL, o->id };
			if (is_letter(o->id)) {
				p->so[s++] = (char)o->id;
				if (o->arg)
					p->so[s++] = ':';
			}
		}
	p->lo[n] = (struct option){ "help", no_argument, NULL, 'h' };
	p->so[s++] = 'h';
	p->so[s] = 0;
	optind = 1;
}

int opts_next(struct opts_parser *p, int argc, char **argv)
{
	return getopt_long(argc, argv, p->so, p->lo, NULL);
}

const struct opt *opts_find(const struct opt *const *tables, int id)
{
	for (int t = 0; tables[t]; t++)
		for (const struct opt *o = tables[t]; o->name; o++)
			if (o->id == id)
				return o;
	return NULL;
}

void opts_help(FILE *f, const struct opt *const *tables)
{
	for (int t = 0; tables[t]; t++)
		for (const struct opt *o = tables[t]; o->name; o++) {
			char left[64];
			int l = snprintf(left, sizeof left, "  %c%c%s--%s%s%s", is_letter(o->id) ? '-' : ' ',
					 is_letter(o->id) ? o->id : ' ', is_letter(o->id) ? ", " : "  ",
					 o->name, o->arg ? " " : "", o->arg ? o->arg : "");
			/* a long left side keeps two spaces before its help */
			fprintf(f, "%s%*s", left, l < 25 ? 25 - l : 2, "");
			for (const char *h = o->help; *h; h++) {
				fputc(*h, f);
				if (*h == '\n')
					fprintf(f, "%25s", "");
			}
			fputc('\n', f);
		}
}

void opts_usage(FILE *f, const char *head, const struct opt *const *tables, const char *tail)
{
	if (head)
		fputs(head, f);
	opts_help(f, tables);
	if (tail)
		fputs(tail, f);
}

int opt_int(const char *name, const char *s, long long lo, long long hi, long long *out)
{
	if (parse_int_in(s, lo, hi, out) == 0)
		return 0;
	return error("--%s takes an integer from %lld to %lld, not '%s'", name, lo, hi, s);
}

int opt_dtype(const char *s, pkb_dtype *out)
{
	int t = dtype_parse(s);
	if (t != PKB_BF16 && t != PKB_FP16 && t != PKB_FP32)
		return error("--dtype takes bf16, fp16 or fp32, not '%s'", s);
	*out = (pkb_dtype)t;
	return 0;
}

int opt_num(const char *name, const char *s, double lo, double hi, double *out)
{
	if (parse_num_in(s, lo, hi, out) == 0)
		return 0;
	return error("--%s takes a number from %g to %g, not '%s'", name, lo, hi, s);
}

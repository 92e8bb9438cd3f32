/*
 * prompt.c -- assembling the prompt of one problem instance (prompt.h).
 *
 * Every piece is read from the repository as it is, so a prompt changes
 * when the task, reference or ABI changes and never otherwise; its sha256
 * goes with every sample. Size: README ~1-3 KB, reference ~1-10 KB, pkb.h
 * and pkb_device.cuh ~13 KB, an example ~4 KB: ~25-35 KB, ~8-10K tokens.
 */
#define _GNU_SOURCE   /* vasprintf */
#include "prompt.h"
#include "compare.h"
#include "dtype.h"
#include "problem.h"
#include "roofline.h"
#include "util.h"

#include <errno.h>
#include <glob.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- templates -------------------------------------------------------------- */

static int slot_index(const char *name, size_t len, const char *const *names, int n)
{
	for (int i = 0; i < n; i++)
		if (strlen(names[i]) == len && !strncmp(names[i], name, len))
			return i;
	return -1;
}

/* the text from s to e with its slots filled; marks the slots used */
static int fill_section(const char *s, const char *e, const char *const *names,
			const char *const *values, int n_slots, char *used, char **out, char *err,
			size_t n)
{
	struct strbuf b = { 0 };
	while (s < e) {
		const char *open = strstr(s, "{{");
		if (!open || open >= e) {
			strbuf_add(&b, s, e - s);
			break;
		}
		strbuf_add(&b, s, open - s);
		const char *close = strstr(open + 2, "}}");
		if (!close || close >= e) {
			snprintf(err, n, "a slot opened with '{{' is never closed");
			free(b.s);
			return -1;
		}
		int i = slot_index(open + 2, close - open - 2, names, n_slots);
		if (i < 0) {
			snprintf(err, n, "unknown slot '{{%.*s}}'", (int)(close - open - 2), open + 2);
			free(b.s);
			return -1;
		}
		used[i] = 1;
		strbuf_add(&b, values[i], strlen(values[i]));
		s = close + 2;
	}
	*out = strbuf_take(&b);
	return 0;
}

/* the start of the body after a line "=== NAME ===", or NULL */
static const char *section(const char *t, const char *name)
{
	char mark[64];
	snprintf(mark, sizeof mark, "=== %s ===\n", name);
	for (const char *l = t; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, mark, strlen(mark)))
			return l + strlen(mark);
	return NULL;
}

int prompt_fill(const char *tmpl, const char *const *names, const char *const *values,
		int n_slots, const char *const *required, int n_required, char **system,
		char **user, char *err, size_t n)
{
	const char *sys = section(tmpl, "system"), *usr = section(tmpl, "user");
	if (!sys || !usr || usr < sys) {
		snprintf(err, n, "the template needs a '=== system ===' line, then a '=== user ===' line");
		return -1;
	}
	const char *sys_end = usr - strlen("=== user ===\n");
	char *used = xcalloc(n_slots ? n_slots : 1, 1);
	*system = *user = NULL;
	int rc = fill_section(sys, sys_end, names, values, n_slots, used, system, err, n);
	if (!rc)
		rc = fill_section(usr, usr + strlen(usr), names, values, n_slots, used, user, err, n);
	for (int r = 0; !rc && r < n_required; r++) {
		int i = slot_index(required[r], strlen(required[r]), names, n_slots);
		if (i < 0 || !used[i]) {
			snprintf(err, n, "the template never uses the slot '{{%s}}'", required[r]);
			rc = -1;
		}
	}
	free(used);
	if (rc) {
		free(*system);
		free(*user);
		*system = *user = NULL;
	}
	return rc;
}

/* ---- the backends ----------------------------------------------------------- */

/* What a prompt differs in per backend (docs/BACKENDS.md): the file the
 * model writes (its extension, as the examples are picked by it), the
 * project headers an example may include and still be shown whole, and
 * whether the C ABI (pkb.h, pkb_device.cuh) is part of the task. */
static const struct prompt_backend {
	const char *name;
	const char *ext;              /* "cu" or "py" */
	const char *const *headers;   /* quoted includes an example may have */
	int abi;                      /* the template must show pkb.h and pkb_device.cuh */
} prompt_backends[] = {
	{ .name = "cuda", .ext = "cu", .abi = 1,
	  .headers = (const char *const[]){ "pkb.h", "pkb_device.cuh", NULL } },
	{ .name = "nccl-device", .ext = "cu", .abi = 1,
	  .headers = (const char *const[]){ "pkb.h", "pkb_device.cuh", NULL } },
	/* ThunderKittens' headers are the user's ($THUNDERKITTENS_ROOT), not
	 * pasted: the prompt summarises the part of TK a candidate uses */
	{ .name = "parallelkittens", .ext = "cu", .abi = 1,
	  .headers = (const char *const[]){ "pkb.h", "pkb_device.cuh", "kittens.cuh", NULL } },
	/* a Python file in the original's solution format: no C ABI */
	{ .name = "triton", .ext = "py", .abi = 0,
	  .headers = (const char *const[]){ NULL } },
};

static const struct prompt_backend *prompt_backend_of(const char *name)
{
	for (size_t i = 0; i < ARRAY_SIZE(prompt_backends); i++)
		if (!strcmp(prompt_backends[i].name, name))
			return &prompt_backends[i];
	return NULL;
}

int prompt_backend_valid(const char *backend)
{
	return prompt_backend_of(backend) != NULL;
}

const char *prompt_backend_ext(const char *backend)
{
	const struct prompt_backend *b = prompt_backend_of(backend);
	return b ? b->ext : "cu";
}

/* ---- the pieces ------------------------------------------------------------- */

/* the value of "pkb-backend: X" in a file's header comment; cuda if none */
static void backend_of(const char *text, char *out, size_t n)
{
	const char *h = strstr(text, "pkb-backend:");
	snprintf(out, n, "cuda");
	if (!h || h - text > 4096)
		return;
	h += strlen("pkb-backend:");
	while (*h == ' ')
		h++;
	size_t k = strcspn(h, " \n\t*");
	snprintf(out, n, "%.*s", (int)k, h);
}

/* a candidate the prompt can show whole: no project header beyond those
 * its backend names (a Python file includes none) */
static int self_contained(const char *text, const struct prompt_backend *be)
{
	for (const char *s = strstr(text, "#include \""); s; s = strstr(s + 1, "#include \"")) {
		const char *name = s + strlen("#include \"");
		int known = 0;
		for (int i = 0; be->headers[i] && !known; i++)
			known = !strncmp(name, be->headers[i], strlen(be->headers[i])) &&
				name[strlen(be->headers[i])] == '"';
		if (!known)
			return 0;
	}
	return 1;
}

/* The example: the shortest self-contained ok_*.<ext> of the backend in the
 * lowest-id problem other than p that has one (001's for every problem but
 * 001). Deterministic: the same files always give the same choice. */
static char *pick_example(const struct pkb_problem *p, const struct prompt_backend *be,
			  char **text_out)
{
	const char *backend = be->name;
	char *best = NULL, *best_text = NULL;
	for (int i = 0; i < problem_count() && !best; i++) {
		const struct pkb_problem *q = problem_at(i);
		if (q == p)
			continue;
		char *dir = problem_dir(q);
		char *pat = xstrfmt("%s/solutions/ok_*.%s", dir, be->ext);
		glob_t g;
		if (glob(pat, 0, NULL, &g) == 0) {
			for (size_t k = 0; k < g.gl_pathc; k++) {
				size_t len = 0;
				char *t = read_file(g.gl_pathv[k], &len);
				char b[32];
				if (!t)
					continue;
				backend_of(t, b, sizeof b);
				if (strcmp(b, backend) || !self_contained(t, be) ||
				    (best_text && strlen(best_text) <= len)) {
					free(t);
					continue;
				}
				free(best);
				free(best_text);
				best = xstrdup(g.gl_pathv[k]);
				best_text = t;
			}
			globfree(&g);
		}
		free(pat);
		free(dir);
	}
	*text_out = best_text;
	return best;
}

static void shapes_text(const struct pkb_io *io, struct strbuf *b)
{
	for (int k = 0; k < 2; k++) {
		const struct pkb_tensor_desc *arr = k ? io->out : io->in;
		for (int i = 0; i < (k ? io->n_out : io->n_in); i++) {
			char shape[128];
			tensor_desc_shape_str(&arr[i], shape, sizeof shape);
			strbuf_addf(b, "- %s %s: %s %s%s\n", k ? "output" : "input", arr[i].name,
				  dtype_name(arr[i].dtype), shape,
				  !k && arr[i].same_on_all_ranks ? " (the same on every rank)" : "");
		}
	}
	for (int i = 0; i < io->n_params; i++)
		strbuf_addf(b, "- parameter %s = %g\n", io->params[i].name, io->params[i].value);
}

static void tolerance_text(const struct pkb_io *io, struct strbuf *b)
{
	for (int i = 0; i < io->n_out; i++) {
		struct pkb_tol t = compare_tol_resolve(io->out[i].dtype, io->out[i].tol);
		if (t.exact)
			strbuf_addf(b, "- %s: bit-exact\n", io->out[i].name);
		else {
			/* per index of a dimension: each slice its own scale */
			char per[80] = "";
			if (t.scale_axis)
				snprintf(per, sizeof per, " (max over the elements that share its "
					 "index of dimension %d)", t.scale_axis - 1);
			strbuf_addf(b,
				  "- %s: |out - ref| <= %g + %g*|ref| + %g * %g * max|ref|%s per "
				  "element, and ||out - ref||_2 <= %g * ||ref||_2\n",
				  io->out[i].name, t.atol, t.rtol, t.terms,
				  dtype_unit_roundoff(io->out[i].dtype), per, t.l2);
		}
	}
}

static void hardware_text(const struct hw_spec *h, int world, struct strbuf *b)
{
	strbuf_addf(b, "%s (hw/%s.json); this run uses %d of its %d GPUs.\n", h->title, h->name,
		  world, h->gpus);
	strbuf_addf(b, "- per GPU: %d SMs, %.0f MB L2, %.0f GB HBM at %.0f GB/s\n", h->sm_count,
		  h->l2_bytes / 1e6, h->hbm_bytes / 1e9, h->hbm_bw / 1e9);
	strbuf_addf(b, "- interconnect: %.0f GB/s that one GPU can receive from its peers (per direction)\n",
		  h->net_bw / 1e9);
	strbuf_addf(b, "- dense peaks: bf16 %.0f, fp16 %.0f, fp8 %.0f, tf32 %.0f, fp32 %.0f TFLOP/s\n",
		  h->flops_bf16 / 1e12, h->flops_fp16 / 1e12, h->flops_fp8 / 1e12,
		  h->flops_tf32 / 1e12, h->flops_fp32 / 1e12);
}

static void roofline_text(const struct pkb_problem *p, const struct pkb_dims *d,
			  const struct hw_spec *h, struct strbuf *b)
{
	struct roofline r;
	char err[256];
	if (roofline_compute(p, d, h, &r, err, sizeof err) < 0) {
		strbuf_addf(b, "No lower bound for this instance (%s).\n", err);
		return;
	}
	strbuf_addf(b,
		  "No correct solution can take less than %.2f us on this machine (bottleneck: %s, "
		  "rank %d): it must move %.0f bytes over the interconnect (%.2f us), %.0f bytes "
		  "through HBM (%.2f us) and do %.3g FLOPs (%.2f us).\n",
		  r.t_bound * 1e6, r.bottleneck, r.rank, r.net_bytes, r.t_net * 1e6, r.hbm_bytes,
		  r.t_hbm * 1e6, r.flops, r.t_flop * 1e6);
}

static char *read_under_root(const char *rel, char *err, size_t n)
{
	char *path = xstrfmt("%s/%s", pkb_root(), rel);
	char *t = read_file(path, NULL);
	if (!t)
		snprintf(err, n, "cannot read '%s'", path);
	free(path);
	return t;
}

/* The reference as a candidate author should read it: each line
 * `#include "x"` that names a header of problems/lib (code sibling
 * problems share, 049-051's whole reference among it) is replaced by the
 * header's text, recursively, each header once; a candidate cannot
 * include them (it is one standalone file), so the prompt shows them. */
static void inline_lib(const char *text, struct strbuf *b, char **seen, int *n_seen, int depth)
{
	for (const char *l = text; *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l + 1) : strlen(l);
		char name[128];
		char *body = NULL;
		if (depth < 8 && sscanf(l, "#include \"%127[^\"]\"", name) == 1 && !strchr(name, '/')) {
			char *path = xstrfmt("%s/problems/lib/%s", pkb_root(), name);
			body = read_file(path, NULL);
			free(path);
		}
		if (!body) {
			strbuf_add(b, l, len);
		} else {
			int dup = 0;
			for (int i = 0; i < *n_seen; i++)
				dup |= !strcmp(seen[i], name);
			if (!dup && *n_seen < 32) {
				seen[(*n_seen)++] = xstrdup(name);
				strbuf_addf(b, "/* ---- %s (problems/lib), included here ---- */\n", name);
				inline_lib(body, b, seen, n_seen, depth + 1);
				strbuf_addf(b, "/* ---- end of %s ---- */\n", name);
			}
			free(body);
		}
		l += len;
	}
}

static char *reference_text(const char *text)
{
	struct strbuf b = { 0 };
	char *seen[32];
	int n_seen = 0;
	inline_lib(text, &b, seen, &n_seen, 0);
	for (int i = 0; i < n_seen; i++)
		free(seen[i]);
	return strbuf_take(&b);
}

int prompt_build(const struct prompt_opts *o, struct prompt *out, char *err, size_t n)
{
	memset(out, 0, sizeof *out);
	const struct prompt_backend *be = prompt_backend_of(o->backend);
	if (!be) {
		snprintf(err, n, "no prompt for the backend '%s' (%s)", o->backend,
			 PROMPT_BACKENDS);
		return -1;
	}
	const struct pkb_problem *p = o->p;
	struct pkb_dims d = { .world = o->world, .m = o->m, .n = o->n, .dtype = o->dtype };
	struct pkb_io io;
	if (problem_describe(p, &d, &io) < 0) {
		snprintf(err, n, "problem %03d_%s at W=%d M=%lld N=%lld %s: %s", p->id, p->name,
			 o->world, o->m, o->n, dtype_name(o->dtype), io.err);
		return -1;
	}
	struct hw_spec h;
	if (hw_load(o->hw ? o->hw : PROMPT_HW_DEFAULT, &h, err, n) < 0)
		return -1;

	out->template_path = o->template_path ? xstrdup(o->template_path)
					      : xstrfmt("%s/prompts/%s.txt", pkb_root(), o->backend);
	size_t tlen = 0;
	char *tmpl = read_file(out->template_path, &tlen);
	if (!tmpl) {
		snprintf(err, n, "cannot read the template '%s'", out->template_path);
		prompt_free(out);
		return -1;
	}
	sha256_hex(tmpl, tlen, out->template_sha256);

	char *dir = problem_dir(p);
	char *readme_path = xstrfmt("%s/README.md", dir);
	char *task = read_file(readme_path, NULL);
	char *ref_path = problem_reference_path(p);
	char *reference = read_file(ref_path, NULL);
	if (reference) {
		char *whole = reference_text(reference);
		free(reference);
		reference = whole;
	}
	char *abi = read_under_root("include/pkb.h", err, n);
	char *dev = abi ? read_under_root("include/pkb_device.cuh", err, n) : NULL;
	char *ex_text = NULL;
	out->example = pick_example(p, be, &ex_text);
	struct strbuf shapes = { 0 }, tol = { 0 }, hw = { 0 }, roof = { 0 }, exname = { 0 },
		    title = { 0 };
	int rc = -1;
	if (!task || !reference) {
		snprintf(err, n, "cannot read '%s'", !task ? readme_path : ref_path);
		goto out;
	}
	if (!abi || !dev)
		goto out;
	shapes_text(&io, &shapes);
	tolerance_text(&io, &tol);
	hardware_text(&h, o->world, &hw);
	roofline_text(p, &d, &h, &roof);
	strbuf_addf(&title, "%03d_%s", p->id, p->name);
	char instance[160];
	snprintf(instance, sizeof instance, "W=%d M=%lld N=%lld dtype=%s", o->world, o->m, o->n,
		 dtype_name(o->dtype));
	if (out->example) {
		const char *rel = out->example + strlen(pkb_root()) + 1;
		strbuf_addf(&exname, "%s", rel);
	} else {
		strbuf_addf(&exname, "(none: no other problem has a known-good %s candidate yet)",
			  o->backend);
		ex_text = xstrdup(be->abi ? "/* no example for this backend */\n"
					  : "# no example for this backend\n");
	}
	const char *names[] = { "problem", "backend", "instance", "task", "reference", "abi",
				"device_header", "example_name", "example", "shapes", "tolerance",
				"hardware", "roofline" };
	const char *values[] = { strbuf_take(&title), o->backend, instance, task, reference, abi, dev,
				 strbuf_take(&exname), ex_text, strbuf_take(&shapes), strbuf_take(&tol),
				 strbuf_take(&hw), strbuf_take(&roof) };
	/* a Python candidate's template need not show the C ABI */
	const char *required[] = { "task", "reference", "example", "shapes", "tolerance",
				   "hardware", "roofline", "abi", "device_header" };
	int n_required = (int)ARRAY_SIZE(required) - (be->abi ? 0 : 2);
	char e2[256];
	rc = prompt_fill(tmpl, names, values, (int)ARRAY_SIZE(names), required,
			 n_required, &out->system, &out->user, e2, sizeof e2);
	if (rc)
		snprintf(err, n, "template '%s': %s", out->template_path, e2);
	free((char *)values[0]);
	free((char *)values[7]);
	for (int i = 9; i <= 12; i++)
		free((char *)values[i]);
	if (!rc) {
		size_t ls = strlen(out->system), lu = strlen(out->user);
		char *both = xmalloc(ls + lu + 1);
		memcpy(both, out->system, ls + 1);
		memcpy(both + ls + 1, out->user, lu);
		sha256_hex(both, ls + 1 + lu, out->sha256);
		free(both);
	}
out:
	free(title.s);
	free(exname.s);
	free(shapes.s);
	free(tol.s);
	free(hw.s);
	free(roof.s);
	free(ex_text);
	free(dev);
	free(abi);
	free(reference);
	free(ref_path);
	free(task);
	free(readme_path);
	free(dir);
	free(tmpl);
	if (rc)
		prompt_free(out);
	return rc;
}

void prompt_free(struct prompt *pr)
{
	free(pr->system);
	free(pr->user);
	free(pr->template_path);
	free(pr->example);
	memset(pr, 0, sizeof *pr);
}

int prompt_hw_pick(const char *device, int world, char *name, size_t n, char *why, size_t wn)
{
	struct hw_spec h;
	if (hw_for_device(NULL, device, world, &h, why, wn) < 0)
		return -1;
	snprintf(name, n, "%s", h.name);
	return 0;
}

/* ---- the instance options ------------------------------------------------------ */

const struct opt prompt_opts_table[] = {
	{ PROMPT_OPT_BACKEND, "backend", "B", "cuda (default) | nccl-device |\n"
					      "parallelkittens | triton (docs/BACKENDS.md)" },
	{ 'd', "dtype", "T", "bf16 (default) | fp16 | fp32" },
	{ 'g', "gpus", "W", "world size (default 4)" },
	{ PROMPT_OPT_M, "m", "M", "base shape: rows (default 1024)" },
	{ PROMPT_OPT_N, "n", "N", "base shape: columns (default 1024)" },
	{ PROMPT_OPT_HW, "hw", "NAME", "the machine whose numbers the prompt gives\n"
				       "(default: a resumed run's, else this machine's\n"
				       "GPUs, else h100_8)" },
	{ PROMPT_OPT_TEMPLATE, "template", "FILE", "another template" },
	OPTS_END,
};

int prompt_opt(struct prompt_opts *o, int c, const char *arg)
{
	switch (c) {
	case PROMPT_OPT_BACKEND: o->backend = arg; return 1;
	case 'd': return opt_dtype(arg, &o->dtype) < 0 ? -1 : 1;
	case PROMPT_OPT_HW: o->hw = arg; o->hw_source = "--hw"; return 1;
	case PROMPT_OPT_TEMPLATE: o->template_path = arg; return 1;
	case 'g':
	case PROMPT_OPT_M:
	case PROMPT_OPT_N: {
		const char *name = c == 'g' ? "gpus" : c == PROMPT_OPT_M ? "m" : "n";
		long long v;
		if (parse_int_in(arg, 1, c == 'g' ? 1 << 20 : LLONG_MAX, &v) < 0)
			return error("--%s takes a positive integer, not '%s'", name, arg);
		if (c == 'g')
			o->world = (int)v;
		else
			*(c == PROMPT_OPT_M ? &o->m : &o->n) = v;
		return 1;
	}
	}
	return 0;
}

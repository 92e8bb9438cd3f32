/*
 * agent_eval.c -- see agent_eval.h. A template's slots are marked \1name\2
 * before wordexp(3) splits it, so that the splitter never sees a value;
 * each word is filled afterwards, a value put in as it is.
 */
#define _GNU_SOURCE
#include "agent_eval.h"
#include "job.h"       /* defines: job_opts_argv */
#include "problem.h"
#include "dtype.h"      /* defines: dtype_name */
#include "prompt.h"    /* defines: struct prompt_opts */
#include "rundir.h"    /* defines: rundir_write_json */
#include "util.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <wordexp.h>

/* ---- the template ---------------------------------------------------------- */

static const char *const slots[] = { "id", "name", "file", "json", "gpus", "m", "n", "dtype",
				     "trials", "backend", "step", "run", "hw" };

/* {name} -> \1name\2, so that the shell-word splitter leaves it alone;
 * an unknown {slot} is an error */
static char *mark_slots(const char *tmpl, char *err, size_t n)
{
	size_t cap = strlen(tmpl) + 1, len = 0;
	char *out = xmalloc(cap);
	for (const char *p = tmpl; *p; p++) {
		if (*p == '\1' || *p == '\2') {
			snprintf(err, n, "a control character in the template");
			free(out);
			return NULL;
		}
		if (*p == '{') {
			const char *e = strchr(p, '}');
			size_t k = 0;
			for (; e && k < ARRAY_SIZE(slots); k++)
				if ((size_t)(e - p - 1) == strlen(slots[k]) &&
				    !strncmp(p + 1, slots[k], strlen(slots[k])))
					break;
			if (!e || k == ARRAY_SIZE(slots)) {
				snprintf(err, n, "unknown slot '%.*s' (known: {id} {name} {file} {json} "
					 "{gpus} {m} {n} {dtype} {trials} {backend} {step} {run} {hw})",
					 e ? (int)(e - p + 1) : 1, p);
				free(out);
				return NULL;
			}
			out[len++] = '\1';
			memcpy(out + len, slots[k], strlen(slots[k]));
			len += strlen(slots[k]);
			out[len++] = '\2';
			p = e;
			continue;
		}
		out[len++] = *p;
	}
	out[len] = 0;
	return out;
}

/* The user's template as words (wordexp(3): quotes, escapes and $VAR as the
 * shell has them; WRDE_NOCMD refuses $(...) and backquotes). The template
 * is the user's; the model's text never reaches it. */
int agent_eval_template(struct agent_eval *e)
{
	char err[256];
	char *marked = mark_slots(e->tmpl, err, sizeof err);
	if (!marked)
		return error("--eval-cmd: %s", err);
	wordexp_t we;
	int rc = wordexp(marked, &we, WRDE_NOCMD);
	free(marked);
	if (rc) {
		const char *why = rc == WRDE_BADCHAR ? "an unquoted | & ; < > ( ) { } or newline"
			: rc == WRDE_CMDSUB ? "command substitution, which is not allowed"
			: rc == WRDE_SYNTAX ? "a syntax error (an unclosed quote?)"
			: "it cannot be split";
		return error("--eval-cmd: %s", why);
	}
	if (!we.we_wordc) {
		wordfree(&we);
		return error("--eval-cmd: the template is empty");
	}
	e->n_words = (int)we.we_wordc;
	e->words = xcalloc((size_t)e->n_words + 1, sizeof *e->words);
	for (int i = 0; i < e->n_words; i++) {
		e->words[i] = xstrdup(we.we_wordv[i]);
		if (strstr(e->words[i], "\1json\2"))
			e->json_word = 1;
	}
	wordfree(&we);
	return 0;
}

/* The local evaluation, in the same form: pkb eval with eval's options as
 * job_opts_argv writes them, the id, file and result file as slots. */
void agent_eval_local(struct agent_eval *e, const struct job_opts *eval, const char *hw)
{
	struct strvec w = STRVEC_INIT;
	strvec_push(&w, pkb_self_exe());
	strvec_push(&w, "eval");
	strvec_push(&w, "\1id\2");
	strvec_push(&w, "\1file\2");
	struct job_opts o = *eval;
	o.hw = hw;
	o.measure_perf = 1;
	o.quiet = 1;
	o.json_path = "\1json\2";
	job_opts_argv(&o, &w);
	e->n_words = (int)w.n;
	e->words = w.v;
	e->json_word = 1;
}

void agent_eval_free(struct agent_eval *e)
{
	for (int i = 0; i < e->n_words; i++)
		free(e->words[i]);
	free(e->words);
	e->words = NULL;
	e->n_words = 0;
}

/* ---- one evaluation --------------------------------------------------------- */

/* one word with its slots filled: a value is put in as it is, never split
 * or interpreted again */
static char *fill_word(const char *w, const char *const *vals)
{
	char *out = NULL;
	size_t len = 0;
	for (const char *p = w; *p;) {
		const char *piece = p;
		size_t plen = 1;
		if (*p == '\1') {
			const char *e = strchr(p, '\2');
			for (size_t k = 0; e && k < ARRAY_SIZE(slots); k++)
				if ((size_t)(e - p - 1) == strlen(slots[k]) &&
				    !strncmp(p + 1, slots[k], strlen(slots[k]))) {
					piece = vals[k];
					plen = strlen(vals[k]);
					p = e;
					break;
				}
		}
		out = xrealloc(out, len + plen + 1);
		memcpy(out + len, piece, plen);
		len += plen;
		p++;
	}
	if (!out)
		out = xstrdup("");
	out[len] = 0;
	return out;
}

static char *abs_path(const char *p)
{
	if (p[0] == '/')
		return xstrdup(p);
	char cwd[PATH_MAX];
	if (!getcwd(cwd, sizeof cwd))
		return xstrdup(p);
	return xstrfmt("%s/%s", cwd, p);
}

/* the tail of a log, for a message */
static void log_tail(const char *path, char *buf, size_t n)
{
	size_t len;
	char *t = read_file(path, &len);
	buf[0] = 0;
	if (!t)
		return;
	const char *s = len > 600 ? t + len - 600 : t;
	snprintf(buf, n, "%s", s);
	for (char *p = buf; *p; p++)
		if (*p == '\n' && p[1])
			*p = ' ';
	free(t);
}

/* the command's words with j's values in their slots (NULL-terminated);
 * acu and ares: the candidate and result files, absolute */
static char **fill_argv(const struct agent_eval *e, const struct agent_eval_job *j,
			const char *acu, const char *ares)
{
	char id[16], gpus[16], m[32], nn[32], trials[16], st[16];
	snprintf(id, sizeof id, "%d", j->p->id);
	snprintf(gpus, sizeof gpus, "%d", j->po->world);
	snprintf(m, sizeof m, "%lld", j->po->m);
	snprintf(nn, sizeof nn, "%lld", j->po->n);
	snprintf(trials, sizeof trials, "%d", j->trials);
	snprintf(st, sizeof st, "%d", j->step);
	char *name = xstrfmt("%03d_%s", j->p->id, j->p->name);
	char *run = abs_path(j->run);
	const char *vals[] = { id, name, acu, ares, gpus, m, nn, dtype_name(j->po->dtype), trials,
			       j->po->backend, st, run, j->po->hw };
	_Static_assert(ARRAY_SIZE(vals) == ARRAY_SIZE(slots), "a value for every slot");
	char **argv = xcalloc((size_t)e->n_words + 1, sizeof *argv);
	for (int i = 0; i < e->n_words; i++)
		argv[i] = fill_word(e->words[i], vals);
	free(name);
	free(run);
	return argv;
}

/* eval's record from the file the command wrote it to: eval's JSON comes
 * first on stdout (the verdict line follows); whatever a remote shell
 * printed before its first '{' line is skipped. NULL when there is none;
 * *bad when there is one that does not read (result.h says why in err). */
static json_t *read_result(const char *path, struct result *res, int *bad, char *err, size_t n)
{
	size_t len = 0;
	char *txt = read_file(path, &len);
	const char *s = txt;
	while (s && *s && *s != '{') {
		const char *nl = strchr(s, '\n');
		s = nl ? nl + 1 : s + strlen(s);
	}
	json_t *r = NULL;
	if (s && *s)
		r = json_loads(s, JSON_DISABLE_EOF_CHECK, NULL);
	free(txt);
	*bad = r && result_read(r, res, err, n) < 0;
	if (!r || *bad) {
		json_decref(r);
		return NULL;
	}
	return r;
}

json_t *agent_eval_run(const struct agent_eval *e, const struct agent_eval_job *j,
		       double *secs, struct result *res, char *why, size_t n)
{
	char *acu = abs_path(j->cu), *ares = abs_path(j->json);
	char **argv = fill_argv(e, j, acu, ares);
	unlink(j->json);
	double t0 = now_s();
	/* the local eval writes its --json file; its stdout (the verdict
	 * line) goes to the log with its stderr */
	int rc = run_redirected(argv, acu, e->tmpl ? j->out : j->log, j->log, e->timeout_s);
	*secs = now_s() - t0;
	json_t *r = NULL;
	result_none(res);
	if (rc == -2) {
		snprintf(why, n, "the evaluation passed its %.0f s limit (--eval-timeout)",
			 e->timeout_s);
	} else if (rc == -1) {
		snprintf(why, n, "cannot run '%s': %s", argv[0], strerror(errno));
	} else {
		char err[300];
		int bad = 0;
		r = read_result(e->json_word ? j->json : j->out, res, &bad, err, sizeof err);
		if (bad) {
			snprintf(why, n, "the evaluation (exit %d) gave no result (%s)",
				 rc, err);
		} else if (!r) {
			char last[700];
			log_tail(j->log, last, sizeof last);
			snprintf(why, n, "the evaluation (exit %d) gave no result%s%s", rc,
				 last[0] ? ": " : "", last);
		} else if (!e->json_word) {
			/* keep what came back beside the local kind */
			rundir_write_json(j->json, r);
		}
	}
	for (int i = 0; i < e->n_words; i++)
		free(argv[i]);
	free(argv);
	free(acu);
	free(ares);
	return r;
}

/*
 * cmd_sweep.c -- `pkb sweep DIR`: every candidate of a run directory through
 * `pkb eval` as a child process, in lanes of W GPUs side by side, one JSON
 * line per evaluation in DIR/results.jsonl; resumable after any kill.
 *
 * Layouts read: DIR/candidates/NNN/FILE.cu (pkb generate; a DIR/replies/NNN/
 * sample_K.json without its .cu is recorded as no_code), else DIR/NNN/FILE.cu
 * and DIR/NNN_FILE.cu. The problem SPEC parser is local (static) here until
 * src/spec.[ch] lands: `all`, `1-8,13`, or a category name.
 */
#define _GNU_SOURCE
#include "cmds.h"
#include "exitcode.h"
#include "spec.h"      /* defines: spec_parse */
#include "problem.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <jansson.h>
#include <math.h>
#include <openssl/evp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char usage[] =
"usage: pkb sweep DIR [options]\n"
"\n"
"Evaluate every candidate under DIR with `pkb eval`, in lanes of W GPUs side\n"
"by side, and append one JSON line per evaluation to DIR/results.jsonl.\n"
"Run it again to go on: keys already recorded are not run twice.\n"
"\n"
"  -p, --problems SPEC    all (default), 1-8,13, or a category name\n"
"  -g, --gpus W           world size of each evaluation (default 2)\n"
"      --ngpus N          GPUs on this machine to use (default 8; lanes = N / W)\n"
"  -t, --trials K         trials per evaluation (default 5)\n"
"      --measure-perf     time the candidates (one eval per lane at a time)\n"
"      --timeout S        kill an evaluation after S seconds (default 1800;\n"
"                         eval's own phase deadlines should end it first)\n"
"      --deadline K=S     passed to eval (up to 4 times)\n"
"      --atol A, --rtol R passed to eval (recorded: pkb score keeps such\n"
"                         records apart from those at the problem's tolerances)\n"
"  -o, --out FILE         results file (default DIR/results.jsonl)\n"
"  -h, --help\n";

struct task {
	int problem;
	char *sample;      /* file stem: sample_0 */
	char *path;        /* NULL: no code (reply without a .cu) */
	char sha[65];
	char *key;
};

struct sweep {
	struct task *t;
	int n, cap;
	int W, trials, perf;
	double timeout_s;
	const char *root;
	const char *deadline[4];   /* eval's --deadline K=S, passed on */
	int ndeadline;
	const char *atol, *rtol;    /* eval's --atol/--rtol when given */
	unsigned char want[1024];   /* problem ids selected */
};

/* the problems SPEC selects (src/spec.c, as pkb generate), as a set of ids */
static int spec_select(const char *spec, unsigned char *want, size_t nwant)
{
	char err[256];
	int n;
	const struct pkb_problem **ps = spec_parse(spec, &n, err, sizeof err);
	if (!ps)
		return error("%s", err);
	memset(want, 0, nwant);
	for (int i = 0; i < n; i++)
		if (ps[i]->id > 0 && (size_t)ps[i]->id < nwant)
			want[ps[i]->id] = 1;
	free(ps);
	return 0;
}

static int file_sha256(const char *path, char out[65])
{
	size_t len;
	char *buf = read_file(path, &len);
	if (!buf)
		return -1;
	unsigned char md[32];
	unsigned int mdlen = 0;
	EVP_Digest(buf, len, md, &mdlen, EVP_sha256(), NULL);
	free(buf);
	for (int i = 0; i < 32; i++)
		sprintf(out + 2 * i, "%02x", md[i]);
	return 0;
}

static void add_task(struct sweep *s, int problem, const char *stem, const char *path)
{
	if (problem < 1 || problem >= (int)sizeof(s->want) || !s->want[problem])
		return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 64;
		s->t = xrealloc(s->t, s->cap * sizeof(*s->t));
	}
	struct task *t = &s->t[s->n];
	memset(t, 0, sizeof(*t));
	t->problem = problem;
	t->sample = xstrdup(stem);
	strcpy(t->sha, "none");
	if (path) {
		t->path = xstrdup(path);
		if (file_sha256(path, t->sha) < 0) {
			warning("cannot read %s: skipped", path);
			free(t->sample);
			free(t->path);
			return;
		}
	}
	/* the key: what makes two evaluations the same one */
	t->key = xstrfmt("%03d|%s|W%d|t%d|%s|tol%s/%s|pkb%s|%s", problem, stem, s->W, s->trials,
			 s->perf ? "perf" : "noperf", s->atol ? s->atol : "-", s->rtol ? s->rtol : "-",
			 PKB_VERSION, t->sha);
	s->n++;
}

static int has_suffix(const char *s, const char *suf)
{
	size_t a = strlen(s), b = strlen(suf);
	return a >= b && !strcmp(s + a - b, suf);
}

/* DIR/NNN/ *.cu (and, with replies, DIR/../replies/NNN/ *.json lacking one) */
static void scan_problem_dir(struct sweep *s, const char *dir, int problem, const char *replies)
{
	DIR *d = opendir(dir);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (!has_suffix(e->d_name, ".cu"))
			continue;
		char *stem = xstrdup(e->d_name);
		stem[strlen(stem) - 3] = 0;
		char *path = xstrfmt("%s/%s", dir, e->d_name);
		add_task(s, problem, stem, path);
		free(stem);
		free(path);
	}
	closedir(d);
	if (!replies || !(d = opendir(replies)))
		return;
	while ((e = readdir(d))) {
		if (!has_suffix(e->d_name, ".json"))
			continue;
		char *stem = xstrdup(e->d_name);
		stem[strlen(stem) - 5] = 0;
		char *cu = xstrfmt("%s/%s.cu", dir, stem);
		if (access(cu, F_OK) != 0)
			add_task(s, problem, stem, NULL);
		free(cu);
		free(stem);
	}
	closedir(d);
}

static int cmp_task(const void *a, const void *b)
{
	const struct task *x = a, *y = b;
	if (x->problem != y->problem)
		return x->problem - y->problem;
	return strcmp(x->sample, y->sample);
}

static void scan(struct sweep *s, const char *root)
{
	char *cand = xstrfmt("%s/candidates", root);
	struct stat st;
	int gen = stat(cand, &st) == 0 && S_ISDIR(st.st_mode);
	const char *base = gen ? cand : root;
	DIR *d = opendir(base);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			char *end;
			long id = strtol(e->d_name, &end, 10);
			if (end == e->d_name)
				continue;
			char *p = xstrfmt("%s/%s", base, e->d_name);
			if (!*end && stat(p, &st) == 0 && S_ISDIR(st.st_mode)) {
				char *rep = gen ? xstrfmt("%s/replies/%s", root, e->d_name) : NULL;
				scan_problem_dir(s, p, (int)id, rep);
				free(rep);
			} else if (*end == '_' && has_suffix(e->d_name, ".cu")) {
				char *stem = xstrdup(e->d_name);
				stem[strlen(stem) - 3] = 0;
				add_task(s, (int)id, stem, p);
				free(stem);
			}
			free(p);
		}
		closedir(d);
	}
	free(cand);
	qsort(s->t, s->n, sizeof(*s->t), cmp_task);
}

/* ---- results.jsonl: read the keys done, cut a torn last line ---- */
static int load_done(const char *path, json_t *done)
{
	size_t len;
	char *buf = read_file(path, &len);
	if (!buf)
		return errno == ENOENT ? 0 : error("cannot read %s: %s", path, strerror(errno));
	size_t good = 0;   /* bytes up to the last complete, parseable line */
	char *p = buf;
	while (p < buf + len) {
		char *nl = memchr(p, '\n', buf + len - p);
		if (!nl)
			break;
		json_t *r = json_loadb(p, nl - p, 0, NULL);
		const char *k = r ? json_string_value(json_object_get(r, "key")) : NULL;
		if (!k) {
			json_decref(r);
			if (nl + 1 < buf + len) {
				/* not the last line: not a torn write of ours; cutting
				 * here would drop the good records after it */
				free(buf);
				return error("%s: line %zu is not a sweep record; fix or move the file",
					     path, (size_t)json_object_size(done) + 1);
			}
			break;
		}
		json_object_set_new(done, k, json_true());
		json_decref(r);
		p = nl + 1;
		good = p - buf;
	}
	free(buf);
	if (good < len) {
		/* a kill mid-write leaves at most one torn line at the end: cut it
		 * (one write() per line, so nothing after it can be whole) */
		warning("%s: %zu bytes of a torn last record cut away", path, len - good);
		if (truncate(path, (off_t)good) != 0)
			return error("cannot truncate %s: %s", path, strerror(errno));
	}
	return 0;
}

static int append_record(int fd, json_t *rec)
{
	char *line = json_dumps(rec, JSON_COMPACT);
	if (!line)
		return error("cannot serialise a record");
	size_t n = strlen(line);
	line = xrealloc(line, n + 2);
	line[n] = '\n';
	line[n + 1] = 0;
	ssize_t w = write(fd, line, n + 1);   /* one write: a kill tears at most this line */
	free(line);
	if (w != (ssize_t)(n + 1) || fsync(fd) != 0)
		return error("cannot write a record: %s", strerror(errno));
	return 0;
}

/* ---- lanes ---- */
struct lane {
	pid_t pid;
	int task;
	char *json, *log;
	uint64_t start_ns;
	char gpus[64];
};

static pid_t spawn_eval(struct sweep *s, struct task *t, struct lane *l)
{
	char pid_s[16], w_s[16], t_s[16];
	snprintf(pid_s, sizeof(pid_s), "%d", t->problem);
	snprintf(w_s, sizeof(w_s), "%d", s->W);
	snprintf(t_s, sizeof(t_s), "%d", s->trials);
	const char *argv[24] = { pkb_self_exe(), "eval", pid_s, t->path, "--gpus", w_s,
		"--trials", t_s, "-q", "--json", l->json };
	int a = 11;
	if (s->perf)
		argv[a++] = "--measure-perf";
	if (s->atol) {
		argv[a++] = "--atol";
		argv[a++] = s->atol;
	}
	if (s->rtol) {
		argv[a++] = "--rtol";
		argv[a++] = s->rtol;
	}
	for (int i = 0; i < s->ndeadline; i++) {
		argv[a++] = "--deadline";
		argv[a++] = s->deadline[i];
	}
	argv[a] = NULL;
	unlink(l->json);
	free(l->log);
	l->log = xstrfmt("%s/logs/%03d", s->root, t->problem);
	mkdir_p(l->log);
	free(l->log);
	l->log = xstrfmt("%s/logs/%03d/%s.log", s->root, t->problem, t->sample);
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		setenv("CUDA_VISIBLE_DEVICES", l->gpus, 1);
		int fd = open(l->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		if (fd >= 0) {
			dup2(fd, 1);
			dup2(fd, 2);
			close(fd);
		}
		execv(argv[0], (char **)argv);
		_exit(127);
	}
	setpgid(pid, pid);
	return pid;
}

/* The ranks of an eval killed at the deadline live on in process groups of
 * their own (a rank stuck in a kernel never notices its parent go). As the
 * subreaper the sweep inherits them: every child that is not a lane's eval
 * is such an orphan, and its group is killed. */
static void kill_orphans(const struct lane *lanes, int nl)
{
	char *path = xstrfmt("/proc/self/task/%d/children", (int)getpid());
	size_t len;
	char *buf = read_file(path, &len);
	free(path);
	if (!buf)
		return;
	char *p = buf, *end;
	for (long pid; (pid = strtol(p, &end, 10)) > 0; p = end) {
		int mine = 0;
		for (int l = 0; l < nl; l++)
			mine |= lanes[l].pid == pid;
		if (!mine) {
			kill(-(pid_t)pid, SIGKILL);
			kill((pid_t)pid, SIGKILL);
		}
	}
	free(buf);
}

static const char *fail_category(json_t *res)
{
	const char *o = json_string_value(json_object_get(res, "outcome"));
	return o ? o : "internal_error";
}

static json_t *make_record(struct sweep *s, struct task *t, json_t *res, int rc, double secs)
{
	json_t *key = json_pack("{s:i, s:s, s:i, s:i, s:s, s:s, s:s}",
		"problem", t->problem, "sample", t->sample, "world", s->W, "trials", s->trials,
		"timing", s->perf ? "perf" : "none", "pkb_version", PKB_VERSION, "sha256", t->sha);
	if (s->atol)
		json_object_set_new(key, "atol", json_real(atof(s->atol)));
	if (s->rtol)
		json_object_set_new(key, "rtol", json_real(atof(s->rtol)));
	if (res) {
		json_t *v;
		if ((v = json_object_get(res, "dtype")))
			json_object_set(key, "dtype", v);
		if ((v = json_object_get(res, "m")))
			json_object_set(key, "m", v);
		if ((v = json_object_get(res, "n")))
			json_object_set(key, "n", v);
		json_t *hw = json_object();
		json_t *tm = json_object_get(res, "timing");
		if (tm && (v = json_object_get(tm, "device")))
			json_object_set(hw, "gpu", v);
		json_object_set_new(hw, "gpus", json_integer(s->W));
		if ((v = json_object_get(res, "nvcc")))
			json_object_set(hw, "nvcc", v);
		json_object_set_new(key, "hardware", hw);
	}
	json_t *rec = json_pack("{s:s, s:o, s:s?, s:i, s:f}", "key", t->key, "instance", key,
		"candidate", t->path, "exit_code", rc, "seconds", secs);
	if (t->path)
		json_object_set_new(rec, "log", json_sprintf("logs/%03d/%s.log", t->problem, t->sample));
	json_object_set_new(rec, "outcome", json_string(res ? fail_category(res) :
		t->path ? (rc == -2 ? "timeout" : "internal_error") : "no_code"));
	if (res)
		json_object_set(rec, "result", res);
	return rec;
}

static void progress(int done, int total, int pass, json_t *fails, uint64_t t0, const char *line)
{
	double el = (now_ns() - t0) / 1e9;
	double eta = done ? el / done * (total - done) : 0;
	if (isatty(2)) {
		int w = 30, f = total ? w * done / total : w;
		fprintf(stderr, "\r[%.*s%*s] %d/%d passed %d", f, "##############################",
			w - f, "", done, total, pass);
		const char *k;
		json_t *v;
		json_object_foreach(fails, k, v)
			fprintf(stderr, " %s %lld", k, (long long)json_integer_value(v));
		fprintf(stderr, " %.0fs ETA %.0fs\033[K", el, eta);
		if (done == total)
			fputc('\n', stderr);
	} else {
		fprintf(stderr, "sweep: %d/%d %s (%.0fs, ETA %.0fs)\n", done, total, line, el, eta);
	}
}

int cmd_sweep(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "problems", required_argument, NULL, 'p' },
		{ "gpus", required_argument, NULL, 'g' },
		{ "ngpus", required_argument, NULL, 1001 },
		{ "trials", required_argument, NULL, 't' },
		{ "measure-perf", no_argument, NULL, 1002 },
		{ "timeout", required_argument, NULL, 1003 },
		{ "deadline", required_argument, NULL, 1004 },
		{ "atol", required_argument, NULL, 1005 },
		{ "rtol", required_argument, NULL, 1006 },
		{ "out", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 },
	};
	struct sweep s = { .W = 2, .trials = 5, .timeout_s = 1800 };
	const char *spec = "all", *out = NULL;
	int ngpus = 8, c;
	optind = 1;
	while ((c = getopt_long(argc, argv, "p:g:t:o:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'p': spec = optarg; break;
		case 'g': s.W = atoi(optarg); break;
		case 1001: ngpus = atoi(optarg); break;
		case 't': s.trials = atoi(optarg); break;
		case 1002: s.perf = 1; break;
		case 1003: s.timeout_s = atof(optarg); break;
		case 1004:
			if (s.ndeadline == 4) {
				error("at most 4 --deadline");
				return PKB_EXIT_USAGE;
			}
			s.deadline[s.ndeadline++] = optarg;
			break;
		case 1005: s.atol = optarg; break;
		case 1006: s.rtol = optarg; break;
		case 'o': out = optarg; break;
		case 'h': fputs(usage, stdout); return 0;
		default: fputs(usage, stderr); return PKB_EXIT_USAGE;
		}
	}
	if (argc - optind != 1) {
		error("sweep takes one directory");
		fputs(usage, stderr);
		return PKB_EXIT_USAGE;
	}
	if (s.W < 1 || s.W > 64 || ngpus < s.W || s.trials < 1 || !(s.timeout_s > 0)) {
		error("need 1 <= W <= --ngpus, --trials >= 1, --timeout > 0");
		return PKB_EXIT_USAGE;
	}
	for (int i = 0; i < 2; i++) {
		const char *v = i ? s.rtol : s.atol;
		char *end;
		if (v && (strtod(v, &end) < 0 || *end || end == v)) {
			error("--%s takes a non-negative number", i ? "rtol" : "atol");
			return PKB_EXIT_USAGE;
		}
	}
	if (spec_select(spec, s.want, sizeof(s.want)) < 0)
		return PKB_EXIT_USAGE;
	const char *root = s.root = argv[optind];
	char *res_path = out ? xstrdup(out) : xstrfmt("%s/results.jsonl", root);
	scan(&s, root);
	json_t *done = json_object();
	if (load_done(res_path, done) < 0)
		return PKB_EXIT_INPUT;
	int fd = open(res_path, O_WRONLY | O_CREAT | O_APPEND, 0644);
	if (fd < 0) {
		error("cannot open %s: %s", res_path, strerror(errno));
		return PKB_EXIT_INPUT;
	}
	int *todo = xcalloc(s.n + 1, sizeof(int)), ntodo = 0;
	for (int i = 0; i < s.n; i++)
		if (!json_object_get(done, s.t[i].key))
			todo[ntodo++] = i;
	fprintf(stderr, "sweep: %d candidates, %zu already recorded, %d to run\n", s.n,
		json_object_size(done), ntodo);
	/* lanes: disjoint sets of W GPUs; one eval at a time in each (a timed
	 * eval must own its GPUs, and two untimed ones on a GPU only halve each) */
	int nl = ngpus / s.W;
	struct lane *lanes = xcalloc(nl, sizeof(*lanes));
	char *tmp = xstrfmt("%s/.sweep", root);
	mkdir_p(tmp);
	for (int l = 0; l < nl; l++) {
		int off = 0;
		for (int g = 0; g < s.W; g++)
			off += snprintf(lanes[l].gpus + off, sizeof(lanes[l].gpus) - off, "%s%d",
					g ? "," : "", l * s.W + g);
		/* the pid in the name: an eval orphaned by a killed sweep must not
		 * write the file a resumed sweep reads */
		lanes[l].json = xstrfmt("%s/%d.lane%d.json", tmp, (int)getpid(), l);
		lanes[l].pid = 0;
	}
	signal(SIGPIPE, SIG_IGN);
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	int next = 0, running = 0, ndone = 0, npass = 0, rc_all = 0;
	json_t *fails = json_object();
	uint64_t t0 = now_ns();
	while (next < ntodo || running) {
		/* no-code samples need no GPU: recorded at once */
		while (next < ntodo && !s.t[todo[next]].path) {
			struct task *t = &s.t[todo[next++]];
			json_t *rec = make_record(&s, t, NULL, 0, 0);
			if (append_record(fd, rec) < 0)
				rc_all = PKB_EXIT_INPUT;
			json_decref(rec);
			ndone++;
			json_object_set_new(fails, "no_code", json_integer(
				json_integer_value(json_object_get(fails, "no_code")) + 1));
			char *line = xstrfmt("%03d %s: no_code", t->problem, t->sample);
			progress(ndone, ntodo, npass, fails, t0, line);
			free(line);
		}
		for (int l = 0; l < nl && next < ntodo; l++) {
			if (lanes[l].pid || !s.t[todo[next]].path)
				continue;
			lanes[l].task = todo[next++];
			lanes[l].start_ns = now_ns();
			lanes[l].pid = spawn_eval(&s, &s.t[lanes[l].task], &lanes[l]);
			if (lanes[l].pid < 0)
				die("cannot fork: %s", strerror(errno));
			running++;
		}
		if (!running)
			continue;
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid == 0) {
			/* nothing finished: enforce deadlines, then nap 50 ms */
			for (int l = 0; l < nl; l++)
				if (lanes[l].pid > 0 &&
				    (now_ns() - lanes[l].start_ns) / 1e9 > s.timeout_s) {
					kill(-lanes[l].pid, SIGKILL);
					lanes[l].start_ns = 0;   /* marks it timed out */
				}
			struct timespec ts = { 0, 50000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		if (pid < 0)
			break;
		int l;
		for (l = 0; l < nl && lanes[l].pid != pid; l++)
			;
		if (l == nl)
			continue;
		struct task *t = &s.t[lanes[l].task];
		int rc = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (lanes[l].start_ns == 0)
			rc = -2;
		double secs = lanes[l].start_ns ? (now_ns() - lanes[l].start_ns) / 1e9 : s.timeout_s;
		kill(-pid, SIGKILL);   /* anything the eval left in its group */
		if (rc == -2)
			kill_orphans(lanes, nl);
		json_t *res = rc == -2 ? NULL : json_load_file(lanes[l].json, 0, NULL);
		json_t *rec = make_record(&s, t, res, rc, secs);
		if (!res && rc != -2)
			json_object_set_new(rec, "message", json_string("eval wrote no JSON (see log)"));
		if (append_record(fd, rec) < 0)
			rc_all = PKB_EXIT_INPUT;
		const char *o = json_string_value(json_object_get(rec, "outcome"));
		if (!strcmp(o, "pass"))
			npass++;
		else
			json_object_set_new(fails, o, json_integer(
				json_integer_value(json_object_get(fails, o)) + 1));
		char *line = xstrfmt("%03d %s on GPUs %s: %s", t->problem, t->sample, lanes[l].gpus, o);
		ndone++;
		progress(ndone, ntodo, npass, fails, t0, line);
		free(line);
		json_decref(rec);
		json_decref(res);
		unlink(lanes[l].json);
		lanes[l].pid = 0;
		running--;
	}
	close(fd);
	fprintf(stderr, "sweep: %d run, %d passed; records in %s\n", ndone, npass, res_path);
	json_decref(fails);
	json_decref(done);
	return rc_all;
}

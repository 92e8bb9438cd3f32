/*
 * util.c -- error reporting, allocation, clocks, files. See util.h.
 */
#define _GNU_SOURCE
#include "util.h"
#include "exitcode.h"   /* defines: PKB_EXIT_* */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

void vreport(const char *prefix, const char *fmt, va_list ap)
{
	char buf[4096];
	vsnprintf(buf, sizeof buf, fmt, ap);
	fprintf(stderr, "%s%s\n", prefix, buf);
}

int error(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("error: ", fmt, ap);
	va_end(ap);
	return -1;
}

void warning(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("warning: ", fmt, ap);
	va_end(ap);
}

void hint(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("hint: ", fmt, ap);
	va_end(ap);
}

void die(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vreport("fatal: ", fmt, ap);
	va_end(ap);
	exit(PKB_EXIT_INPUT);
}

void bug_at(const char *file, int line, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	fprintf(stderr, "BUG: %s:%d: %s\n", file, line, buf);
	exit(PKB_EXIT_INTERNAL);
}

void *xmalloc(size_t n)
{
	void *p = malloc(n ? n : 1);
	if (!p)
		BUG("out of memory (%zu bytes)", n);
	return p;
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p)
		BUG("out of memory (%zu x %zu bytes)", n, size);
	return p;
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n ? n : 1);
	if (!p)
		BUG("out of memory (%zu bytes)", n);
	return p;
}

char *xstrdup(const char *s)
{
	char *p = strdup(s);
	if (!p)
		BUG("out of memory");
	return p;
}

char *xstrvfmt(const char *fmt, va_list ap)
{
	char *s;
	if (vasprintf(&s, fmt, ap) < 0)
		BUG("out of memory");
	return s;
}

char *xstrfmt(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xstrvfmt(fmt, ap);
	va_end(ap);
	return s;
}

/* ---- growable strings and argvs, SHA-256 ---------------------------------- */

void strbuf_add(struct strbuf *b, const void *data, size_t n)
{
	if (b->len + n + 1 > b->cap) {
		b->cap = (b->len + n + 1) * 2;
		b->s = xrealloc(b->s, b->cap);
	}
	memcpy(b->s + b->len, data, n);
	b->len += n;
	b->s[b->len] = 0;
}

void strbuf_addstr(struct strbuf *b, const char *str)
{
	strbuf_add(b, str, strlen(str));
}

void strbuf_addf(struct strbuf *b, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xstrvfmt(fmt, ap);
	va_end(ap);
	strbuf_addstr(b, s);
	free(s);
}

char *strbuf_take(struct strbuf *b)
{
	char *s = b->s ? b->s : xstrdup("");
	*b = (struct strbuf)STRBUF_INIT;
	return s;
}

void strbuf_free(struct strbuf *b)
{
	free(b->s);
	*b = (struct strbuf)STRBUF_INIT;
}

void strvec_push(struct strvec *a, const char *arg)
{
	if (a->n + 2 > a->cap) {
		a->cap = a->cap ? 2 * a->cap : 16;
		a->v = xrealloc(a->v, a->cap * sizeof *a->v);
	}
	a->v[a->n++] = xstrdup(arg);
	a->v[a->n] = NULL;
}

void strvec_pushf(struct strvec *a, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	char *s = xstrvfmt(fmt, ap);
	va_end(ap);
	strvec_push(a, s);
	free(s);
}

void strvec_free(struct strvec *a)
{
	for (size_t i = 0; i < a->n; i++)
		free(a->v[i]);
	free(a->v);
	*a = (struct strvec)STRVEC_INIT;
}

void sha256(const void *buf, size_t len, unsigned char out[32])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n = 0;
	EVP_MD_CTX *ctx = EVP_MD_CTX_new();
	if (!ctx || EVP_DigestInit_ex(ctx, EVP_sha256(), NULL) != 1 ||
	    EVP_DigestUpdate(ctx, buf, len) != 1 || EVP_DigestFinal_ex(ctx, md, &n) != 1 || n != 32)
		BUG("sha256 failed");
	EVP_MD_CTX_free(ctx);
	memcpy(out, md, 32);
}

void sha256_hex(const void *buf, size_t len, char out[65])
{
	unsigned char md[32];
	sha256(buf, len, md);
	for (unsigned i = 0; i < 32; i++)
		snprintf(out + 2 * i, 3, "%02x", md[i]);
	out[64] = 0;
}

int sha256_file_hex(const char *path, char out[65])
{
	size_t len;
	char *buf = read_file(path, &len);
	if (!buf)
		return -1;
	sha256_hex(buf, len, out);
	free(buf);
	return 0;
}

/* ---- clocks ------------------------------------------------------------------ */

uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

double now_s(void)
{
	return now_ns() / 1e9;
}

double lap_s(uint64_t *mark)
{
	uint64_t t = now_ns();
	double s = (double)(t - *mark) / 1e9;
	*mark = t;
	return s;
}

char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	char *buf = xmalloc(cap + 1);
	for (;;) {
		size_t got = fread(buf + n, 1, cap - n, f);
		n += got;
		if (n < cap)
			break;
		cap *= 2;
		buf = xrealloc(buf, cap + 1);
	}
	int bad = ferror(f);
	fclose(f);
	if (bad) {
		free(buf);
		errno = EIO;
		return NULL;
	}
	buf[n] = 0;
	if (len)
		*len = n;
	return buf;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

int write_file_atomic(const char *path, const void *buf, size_t len)
{
	char *tmp = xstrfmt("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		free(tmp);
		return -1;
	}
	if (write_all(fd, buf, len) < 0) {
		close(fd);
		unlink(tmp);
		free(tmp);
		return -1;
	}
	if (close(fd) < 0 || rename(tmp, path) < 0) {
		unlink(tmp);
		free(tmp);
		return -1;
	}
	free(tmp);
	return 0;
}

int mkdir_p(const char *path)
{
	char *p = xstrdup(path);
	for (char *s = p + 1; *s; s++) {
		if (*s != '/')
			continue;
		*s = 0;
		if (mkdir(p, 0755) < 0 && errno != EEXIST) {
			free(p);
			return -1;
		}
		*s = '/';
	}
	int r = mkdir(p, 0755);
	free(p);
	return r < 0 && errno != EEXIST ? -1 : 0;
}

int rm_rf(const char *path)
{
	struct stat st;
	if (lstat(path, &st) < 0)
		return errno == ENOENT ? 0 : -1;
	if (!S_ISDIR(st.st_mode))
		return unlink(path);
	DIR *d = opendir(path);
	if (!d)
		return -1;
	struct dirent *e;
	int r = 0;
	while ((e = readdir(d))) {
		if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
			continue;
		char *sub = xstrfmt("%s/%s", path, e->d_name);
		r |= rm_rf(sub);
		free(sub);
	}
	closedir(d);
	return r | rmdir(path);
}

const char *pkb_self_exe(void)
{
	static char exe[PATH_MAX];
	if (!exe[0]) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
		if (n <= 0)
			BUG("cannot read /proc/self/exe");
		exe[n] = 0;
	}
	return exe;
}

/* The tree root: $PKB_ROOT, or the directory above the executable's
 * (pkb lives in <root>/build/pkb). Problems and headers are found there. */
const char *pkb_root(void)
{
	static char root[PATH_MAX];
	if (!root[0]) {
		const char *env = getenv("PKB_ROOT");
		if (env && *env) {
			snprintf(root, sizeof root, "%s", env);
		} else {
			snprintf(root, sizeof root, "%s", pkb_self_exe());
			for (int up = 0; up < 2; up++) {
				char *slash = strrchr(root, '/');
				if (slash && slash != root)
					*slash = 0;
			}
		}
	}
	return root;
}

/* run argv with stdout+stderr into `log`; -2 on timeout, else exit status */
int run_logged(char *const *argv, const char *log, double timeout_s)
{
	return run_redirected(argv, NULL, log, log, timeout_s);
}

static int run_child(char *const *argv, const char *in, const char *out, const char *err,
		     double timeout_s, const struct run_child *child);

int run_logged_child(char *const *argv, const char *log, double timeout_s,
		     const struct run_child *child)
{
	return run_child(argv, NULL, log, log, timeout_s, child);
}

int run_redirected(char *const *argv, const char *in, const char *out, const char *err,
		   double timeout_s)
{
	return run_child(argv, in, out, err, timeout_s, NULL);
}

static int run_child(char *const *argv, const char *in, const char *out, const char *err,
		     double timeout_s, const struct run_child *child)
{
	int fd = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	int efd = strcmp(out, err) ? open(err, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : fd;
	int ifd = in ? open(in, O_RDONLY | O_CLOEXEC) : -2;
	if (fd < 0 || efd < 0 || ifd == -1) {
		if (fd >= 0)
			close(fd);
		if (efd >= 0 && efd != fd)
			close(efd);
		if (ifd >= 0)
			close(ifd);
		return -1;
	}
	pid_t pid = fork();
	if (pid < 0) {
		close(fd);
		if (efd != fd)
			close(efd);
		if (ifd >= 0)
			close(ifd);
		return -1;
	}
	if (pid == 0) {
		setpgid(0, 0);
		if (ifd >= 0)
			dup2(ifd, 0);
		dup2(fd, 1);
		dup2(efd, 2);
		char why[400];
		if (child && child->setup && child->setup(child->arg, why, sizeof why)) {
			fprintf(stderr, "%s\n", why);
			_exit(126);
		}
		if (child && child->envp)
			execvpe(argv[0], argv, child->envp);
		else
			execvp(argv[0], argv);
		fprintf(stderr, "cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	if (efd != fd)
		close(efd);
	if (ifd >= 0)
		close(ifd);
	close(fd);
	uint64_t until = now_ns() + (uint64_t)(timeout_s * 1e9);
	for (;;) {
		int st;
		pid_t p = waitpid(pid, &st, WNOHANG);
		if (p == pid)
			return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
		if (p < 0 && errno != EINTR)
			return -1;
		if (now_ns() > until) {
			kill(-pid, SIGKILL);
			waitpid(pid, &st, 0);
			return -2;
		}
		usleep(10000);
	}
}


const char *json_str(json_t *o, const char *key, const char *absent)
{
	const char *s = json_string_value(json_object_get(o, key));
	return s ? s : absent;
}

int json_write_file(const char *path, json_t *value)
{
	char *txt = json_dumps(value, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
	int r = -1;
	/* "-" is stdout, as for every other tool that takes an output path
	 * (issue 30: `--json -` wrote a file named '-'). */
	if (txt && !strcmp(path, "-"))
		r = (fputs(txt, stdout) < 0 || fputc('\n', stdout) < 0 || fflush(stdout)) ? -1 : 0;
	else if (txt)
		r = write_file_atomic(path, txt, strlen(txt));
	free(txt);
	if (r < 0)
		error("cannot write '%s'", path);
	return r;
}

int parse_int_in(const char *s, long long lo, long long hi, long long *out)
{
	char *end;
	errno = 0;
	long long v = strtoll(s, &end, 10);
	if (end == s || *end || errno || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

int parse_num_in(const char *s, double lo, double hi, double *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	/* !(v >= lo) also refuses NaN; isfinite needs no libm here */
	if (end == s || *end || errno || !(v >= lo) || !(v <= hi))
		return -1;
	*out = v;
	return 0;
}

int check_source_file(const char *path)
{
	struct stat st;
	if (stat(path, &st) != 0)
		return error("cannot read '%s': %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return error("'%s' is not a source file (a %s)", path,
			     S_ISDIR(st.st_mode) ? "directory" : "special file");
	if (access(path, R_OK) != 0)
		return error("cannot read '%s': %s", path, strerror(errno));
	return 0;
}

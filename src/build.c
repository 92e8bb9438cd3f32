/*
 * build.c -- see build.h. nvcc runs as a child with its output in a log
 * file; the parent polls it against the compile deadline and kills its
 * process group on expiry. The .so is written under a temporary name and
 * renamed into place, so concurrent builds of one key are safe.
 */
#define _GNU_SOURCE
#include "build.h"
#include "sandbox.h"   /* defines: sandbox_landlock, sandbox_landlock_abi, sandbox_env_free */
#include "util.h"   /* defines: xstrfmt, read_file, now_ns, pkb_root, strbuf, sha256_hex */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

extern char **environ;

void build_opts_init(struct build_opts *o)
{
	const char *arch = getenv("PKB_ARCH");
	o->arch = arch && *arch ? arch : "sm_90a";
	o->reference = 0;
	o->timeout_s = 300;
	o->tk_root = NULL;
}

char *build_tk_root(char *why, size_t n)
{
	const char *env = getenv("THUNDERKITTENS_ROOT");
	if (!env || !*env) {
		snprintf(why, n, "THUNDERKITTENS_ROOT is not set: the parallelkittens backend "
			 "compiles against ThunderKittens' headers, which pkb does not download "
			 "(set it to a checkout of HazyResearch/ThunderKittens; docs/BACKENDS.md)");
		return NULL;
	}
	char *head = xstrfmt("%s/include/kittens.cuh", env);
	int ok = access(head, R_OK) == 0;
	free(head);
	char *real = ok ? realpath(env, NULL) : NULL;
	if (!real)
		snprintf(why, n, "THUNDERKITTENS_ROOT='%s' has no readable include/kittens.cuh: "
			 "point it at a checkout of HazyResearch/ThunderKittens (docs/BACKENDS.md)",
			 env);
	return real;
}

char *build_python_path(char *why, size_t n)
{
	const char *want = getenv("PKB_PYTHON");
	want = want && *want ? want : "python3";
	if (strchr(want, '/')) {
		if (access(want, X_OK) == 0)
			return want[0] == '/' ? xstrdup(want) : realpath(want, NULL);
	} else {
		const char *path = getenv("PATH");
		char *dirs = xstrdup(path ? path : "/usr/bin:/bin");
		for (char *save = NULL, *d = strtok_r(dirs, ":", &save); d;
		     d = strtok_r(NULL, ":", &save)) {
			char *cand = xstrfmt("%s/%s", d, want);
			if (d[0] == '/' && access(cand, X_OK) == 0) {
				free(dirs);
				return cand;
			}
			free(cand);
		}
		free(dirs);
	}
	snprintf(why, n, "no Python for the triton backend: '%s' is not an executable%s (set "
		 "PKB_PYTHON to the python3 that has torch and Triton; docs/BACKENDS.md)", want,
		 strchr(want, '/') ? "" : " on PATH");
	return NULL;
}

/* ThunderKittens' flags beyond pkb's own, as its kernels/common.mk gives
 * them (-std=c++20 replaces pkb's -std=c++17; -DKITTENS_<GPU> comes from
 * the arch, -I and -lcuda from the root: tk_arch_define, struct build) */
static const char *const tk_flags[] = {
	"--use_fast_math", "--expt-extended-lambda", "--expt-relaxed-constexpr", "-DNDEBUG",
	"-Xcompiler=-Wno-psabi", "-Xcompiler=-fno-strict-aliasing", NULL,
};

/* the -DKITTENS_<GPU> TK's headers select code by: from the arch's major
 * (sm_80 Ampere, sm_90a Hopper, sm_100a/sm_103a Blackwell); "" for others */
static const char *tk_arch_define(const char *arch)
{
	int sm = atoi(arch + (strncmp(arch, "sm_", 3) ? 0 : 3));
	return sm >= 100 ? "-DKITTENS_BLACKWELL" : sm >= 90 ? "-DKITTENS_HOPPER"
	     : sm >= 80 ? "-DKITTENS_AMPERE" : "";
}
const char *build_cache_dir(void)
{
	static char *dir;
	if (!dir) {
		const char *env = getenv("PKB_CACHE");
		const char *home = getenv("HOME");
		dir = env && *env ? xstrdup(env)
		      : xstrfmt("%s/.cache/pkb", home && *home ? home : "/tmp");
	}
	return dir;
}

static const char *nvcc_path(void)
{
	static char *path;
	if (!path) {
		const char *home = getenv("CUDA_HOME");
		char *cand = home && *home ? xstrfmt("%s/bin/nvcc", home) : NULL;
		path = cand && access(cand, X_OK) == 0 ? cand : xstrdup("nvcc");
		if (path != cand)
			free(cand);
	}
	return path;
}

const char *build_nvcc_version(void)
{
	static char *ver;
	if (ver)
		return ver;
	char *log = xstrfmt("%s/nvcc-version.%d", build_cache_dir(), (int)getpid());
	mkdir_p(build_cache_dir());
	char *argv[] = { (char *)nvcc_path(), "--version", NULL };
	char *out = NULL;
	if (run_logged(argv, log, 30) == 0)
		out = read_file(log, NULL);
	unlink(log);
	free(log);
	if (!out)
		return ver = xstrdup("unknown");
	/* keep the "Build cuda_..." line: it names the exact compiler */
	char *line = strstr(out, "Build ");
	ver = xstrdup(line ? line : out);
	char *nl = strchr(ver, '\n');
	if (nl)
		*nl = 0;
	free(out);
	return ver;
}

/* the key's bytes are gathered in one buffer and hashed once: a few source
 * files and headers, tens of KB */
static void hash_update_file(struct strbuf *md, const char *path)
{
	size_t len = 0;
	char *buf = read_file(path, &len);
	strbuf_add(md, path, strlen(path) + 1);
	if (buf)
		strbuf_add(md, buf, len);
	free(buf);
}

/* The toolkit libraries linked only into a source that includes their
 * header, itself or through a local header: bit i of a mask for
 * opt_libs[i]. */
static const struct { const char *header, *flag; } opt_libs[] = {
	{ "cudnn.h", "-lcudnn" },
	{ "cufft.h", "-lcufft" },
};

static unsigned libs_of(const char *text)
{
	unsigned m = 0;
	for (size_t i = 0; i < sizeof opt_libs / sizeof *opt_libs; i++)
		m |= strstr(text, opt_libs[i].header) ? 1u << i : 0;
	return m;
}

/* Local headers (#include "x") change what compiles as much as the source
 * does: each one found next to the including file or in a folder of `path`
 * (NULL-terminated: include/, and problems/lib/ for a reference) goes into
 * the key, recursively (a known-bad candidate may include a known-good one).
 * *libs gets the optional libraries they include. */
static void hash_includes(struct strbuf *md, const char *text, const char *from,
			  const char *const *path, int depth, unsigned *libs)
{
	if (depth > 8)
		return;
	char *dir = xstrdup(from);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	else
		strcpy(dir, ".");
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		const char *p = l;
		while (*p == ' ' || *p == '\t')
			p++;
		if (*p++ != '#')
			continue;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "include", 7))
			continue;
		p += 7;
		while (*p == ' ' || *p == '\t')
			p++;
		const char *q = *p == '"' ? strchr(p + 1, '"') : NULL;
		const char *nl = strchr(p, '\n');
		if (!q || (nl && q > nl))
			continue;
		char *name = xstrfmt("%.*s", (int)(q - p - 1), p + 1);
		char *file = name[0] == '/' ? xstrdup(name) : xstrfmt("%s/%s", dir, name);
		for (int i = 0; path[i] && name[0] != '/' && access(file, R_OK) != 0; i++) {
			free(file);
			file = xstrfmt("%s/%s", path[i], name);
		}
		size_t len = 0;
		char *body = read_file(file, &len);
		if (body) {
			strbuf_add(md, file, strlen(file) + 1);
			strbuf_add(md, body, len);
			*libs |= libs_of(body);
			hash_includes(md, body, file, path, depth + 1, libs);
			free(body);
		}
		free(file);
		free(name);
	}
	free(dir);
}

/* The line of `text` that starts at `l`, without its end and the blanks
 * around it, compared with `want`. */
static int line_is(const char *l, const char *want)
{
	while (*l == ' ' || *l == '\t')
		l++;
	size_t n = strlen(want);
	if (strncmp(l, want, n))
		return 0;
	for (l += n; *l && *l != '\n'; l++)
		if (*l != ' ' && *l != '\t' && *l != '\r')
			return 0;
	return 1;
}

static const char *next_line(const char *l)
{
	const char *nl = strchr(l, '\n');
	return nl ? nl + 1 : l + strlen(l);
}

/*
 * A known-bad candidate may be written as the known-good file it breaks plus
 * the lines it changes: "pkb-mutant-of: NAME.cu" in its header (NAME.cu next
 * to it), then blocks of
 *	/ * pkb-replace * /   lines of NAME.cu, exactly as there
 *	/ * pkb-with * /      the lines that take their place
 *	/ * pkb-end * /
 * (markers written without the inner blanks; nothing else after the header
 * comment but blank lines), applied in order, each replaced text found
 * exactly once, as whole lines, in what the blocks before it left. One
 * copy of the good code, and the bug in plain sight; a change to the good
 * file that drops a replaced text stops the mutant from building.
 * Returns the source to compile (malloc'd); NULL when `text` is no mutant or
 * on an error, then set in *err (malloc'd).
 */
static char *mutant_source(const char *src, const char *text, char **err)
{
	*err = NULL;
	/* in the header comment only: prose elsewhere may name the tag */
	const char *tag = strstr(text, "pkb-mutant-of:"), *end = strstr(text, "*/");
	if (!tag || !end || tag > end)
		return NULL;
	tag += strlen("pkb-mutant-of:");
	while (*tag == ' ' || *tag == '\t')
		tag++;
	size_t n = strcspn(tag, " \t\r\n");
	char *name = xstrfmt("%.*s", (int)n, tag);
	if (!n || strchr(name, '/') || n < 4 || strcmp(name + n - 3, ".cu")) {
		*err = xstrfmt("mutant: pkb-mutant-of names '%s': a .cu file next to it, please",
			       name);
		free(name);
		return NULL;
	}
	char *dir = xstrdup(src);
	char *slash = strrchr(dir, '/');
	char *path = slash ? (*slash = 0, xstrfmt("%s/%s", dir, name)) : xstrdup(name);
	free(dir);
	char *out = read_file(path, NULL);
	if (!out) {
		*err = xstrfmt("mutant: cannot read '%s': %s", path, strerror(errno));
		free(path);
		free(name);
		return NULL;
	}
	/* after the header comment: blank lines and blocks only */
	int blocks = 0, lineno = 1;
	const char *l = text;
	for (const char *after = next_line(end); l < after; l = next_line(l))
		lineno++;
	while (*l && !*err) {
		if (line_is(l, "")) {
			l = next_line(l), lineno++;
			continue;
		}
		if (!line_is(l, "/* pkb-replace */")) {
			*err = xstrfmt("mutant: line %d: outside a pkb-replace block", lineno);
			break;
		}
		int at = lineno;
		const char *old0 = next_line(l), *old1 = old0, *new0, *new1;
		for (l = old0, lineno++; *l && !line_is(l, "/* pkb-with */"); l = next_line(l))
			lineno++;
		old1 = l;
		new0 = *l ? next_line(l) : l;
		for (l = new0, lineno++; *l && !line_is(l, "/* pkb-end */"); l = next_line(l))
			lineno++;
		new1 = l;
		if (!*l || old1 == old0) {
			*err = xstrfmt("mutant: line %d: a pkb-replace block needs lines to "
				       "replace, then pkb-with, then pkb-end", at);
			break;
		}
		l = next_line(l), lineno++;
		char *old = xstrfmt("%.*s", (int)(old1 - old0), old0);
		int found = 0;
		const char *hit = NULL;
		for (const char *p = strstr(out, old); p; p = strstr(p + 1, old))
			if ((p == out || p[-1] == '\n') && !found++)   /* whole lines */
				hit = p;
		if (found != 1) {
			*err = xstrfmt("mutant: line %d: the lines to replace occur %d times in %s "
				       "(must be once)", at, found, name);
		} else {
			char *next = xstrfmt("%.*s%.*s%s", (int)(hit - out), out,
					     (int)(new1 - new0), new0, hit + strlen(old));
			free(out);
			out = next;
			blocks++;
		}
		free(old);
	}
	if (!*err && !blocks)
		*err = xstrfmt("mutant: of %s, but no pkb-replace block", name);
	free(path);
	free(name);
	if (*err) {
		free(out);
		return NULL;
	}
	return out;
}

/* ---- the compiler's sandbox (issue 36) -------------------------------------------
 * nvcc reads what a source names: `#include "/home/u/.ssh/id_rsa"` or an
 * assembler `.incbin` of a key file puts a secret into the object or, through
 * an error, into the log that reaches the candidate's author. So nvcc runs
 * with an environment of its own (PATH, locale, a private TMPDIR: no key of
 * the user's), under Landlock: it reads only the source's folder, pkb's
 * headers, problems/lib (a reference's shared headers), the CUDA toolkit
 * and the system's compiler folders (/usr /lib /lib64 /bin /opt); it
 * writes only the compile cache and its private temporary folder. The log
 * kept is its head. */

struct confine {
	const char *ro[16], *rw[4];
};

static int confine_child(void *arg, char *why, size_t n)
{
	const struct confine *c = arg;
	return sandbox_landlock(c->ro, c->rw, why, n) < 0 ? -1 : 0;
}

/* the folder holding `path` (realpath), or NULL */
static char *folder_of(const char *path)
{
	char *real = realpath(path, NULL);
	if (!real)
		return NULL;
	char *sl = strrchr(real, '/');
	if (sl && sl != real)
		*sl = 0;
	return real;
}

/* the environment nvcc gets: PATH and the locale from ours, TMPDIR its own */
static char **compile_env(const char *tmpdir)
{
	static const char *keep[] = { "PATH=", "LANG=", "LC_", "TZ=", "LD_LIBRARY_PATH=" };
	size_t n = 0;
	for (char **e = environ; *e; e++)
		n++;
	char **env = xcalloc(n + 2, sizeof *env);
	size_t k = 0;
	for (char **e = environ; *e; e++)
		for (size_t i = 0; i < sizeof keep / sizeof *keep; i++)
			if (!strncmp(*e, keep[i], strlen(keep[i]))) {
				env[k++] = xstrdup(*e);
				break;
			}
	env[k++] = xstrfmt("TMPDIR=%s", tmpdir);
	env[k] = NULL;
	return env;
}

/* run nvcc's argv for `src` into the cache `dir`, confined, reading the
 * include folders `path` (NULL-terminated, as hash_includes); its status
 * as run_logged's */
static int compile_confined(char *const *argv, const char *log, const char *src,
			    const char *dir, const char *const *path, double timeout_s)
{
	static int warned;
	char why[300];
	char *tmpdir = xstrfmt("%s/tmp.XXXXXX", dir);
	if (!mkdtemp(tmpdir)) {
		free(tmpdir);
		return -1;
	}
	char *srcdir = folder_of(src);
	char *nvcc = argv[0][0] == '/' ? realpath(argv[0], NULL) : NULL;
	char *cuda = nvcc ? folder_of(nvcc) : NULL;   /* CUDA/bin */
	char *cuda_root = cuda ? folder_of(cuda) : NULL;
	struct confine c = { .ro = { 0 }, .rw = { dir, tmpdir, "/dev/null", NULL } };
	int k = 0;
	c.ro[k++] = srcdir ? srcdir : "/nonexistent";
	for (int i = 0; path[i]; i++)   /* include/, and problems/lib for a reference */
		c.ro[k++] = path[i];
	if (cuda_root)
		c.ro[k++] = cuda_root;
	/* /opt: toolkits and libraries installed there (cuDNN, NCCL, a CUDA
	 * outside /usr/local), as the rank's sandbox reads it too */
	static const char *sys[] = { "/usr", "/lib", "/lib64", "/bin", "/opt", "/etc/ld.so.cache",
				     "/etc/alternatives", NULL };
	for (int i = 0; sys[i]; i++)
		c.ro[k++] = sys[i];
	c.ro[k] = NULL;
	struct run_child child = { .envp = compile_env(tmpdir), .setup = confine_child, .arg = &c };
	if (sandbox_landlock_abi(why, sizeof why) < 1) {
		child.setup = NULL;
		if (!warned++)
			warning("%s: nvcc runs unconfined (it reads any file a source names)", why);
	}
	int rc = run_logged_child(argv, log, timeout_s, &child);
	sandbox_env_free((char **)child.envp);
	rm_rf(tmpdir);
	free(tmpdir);
	free(srcdir);
	free(nvcc);
	free(cuda);
	free(cuda_root);
	return rc;
}

/* At most 40 lines or 4000 bytes of a compiler log, and what was cut */
char *build_log_head(const char *log)
{
	size_t len = strlen(log), cut = 0;
	int lines = 0;
	while (cut < len && cut < 4000 && lines < 40)
		if (log[cut++] == '\n')
			lines++;
	if (cut >= len)
		return xstrdup(log);
	int more = 0;
	for (size_t i = cut; i < len; i++)
		more += log[i] == '\n';
	return xstrfmt("%.*s... (%zu more bytes, %d more lines of the compiler's output cut)\n",
		       (int)cut, log, len - cut, more);
}

/* ---- one build ------------------------------------------------------------------ */

/* one build as it goes: what its key and nvcc's command line are made of */
struct build {
	const char *src;          /* the source as named */
	char *text;               /* what compiles: the source, or a mutant's result */
	size_t len;
	int mutant;               /* text is a mutant's: compiled from a copy in the cache */
	char *inc;                /* pkb's include/ */
	char *lib;                /* problems/lib for a reference; NULL for a candidate */
	char *tk_inc, *tk_proto;  /* ThunderKittens' include/ and prototype/; NULL unless TK */
	const char *path[5];      /* those that are set: the include path, NULL-terminated */
	char *gencode;
	unsigned libs;            /* the opt_libs it includes, itself or through a header */
	uint64_t t0;              /* ns: when the build started */
};

static double since_s(uint64_t t0)
{
	return (double)(now_ns() - t0) / 1e9;
}

/* The source's text into b. A mutant compiles as its good file with the
 * replacements made, from a temporary copy in the cache, the mutant's
 * folder on the include path. 0, or (r->log saying why) -1 when the file
 * cannot be read, -2 when it is a broken mutant. */
static int read_source(struct build *b, struct build_result *r)
{
	b->text = read_file(b->src, &b->len);
	if (!b->text) {
		r->log = xstrfmt("cannot read '%s': %s", b->src, strerror(errno));
		return -1;
	}
	char *mut_err;
	char *mutant = mutant_source(b->src, b->text, &mut_err);
	if (mut_err) {
		r->log = mut_err;
		return -2;
	}
	if (mutant) {
		free(b->text);
		b->text = mutant;
		b->len = strlen(b->text);
		b->mutant = 1;
	}
	return 0;
}

/* The key: source, ABI headers, local headers, flags, compiler; with the
 * flags as the record keeps them (r->flags). */
static void build_key(struct build *b, const struct build_opts *o, struct build_result *r)
{
	b->inc = xstrfmt("%s/include", pkb_root());
	/* code that sibling problems' references share (problems/lib): on the
	 * include path of references only, candidates stay standalone */
	b->lib = o->reference ? xstrfmt("%s/problems/lib", pkb_root()) : NULL;
	b->tk_inc = o->tk_root ? xstrfmt("%s/include", o->tk_root) : NULL;
	b->tk_proto = o->tk_root ? xstrfmt("%s/prototype", o->tk_root) : NULL;
	int np = 0;
	b->path[np++] = b->inc;
	if (b->lib)
		b->path[np++] = b->lib;
	if (b->tk_inc) {
		b->path[np++] = b->tk_inc;
		b->path[np++] = b->tk_proto;
	}
	b->path[np] = NULL;
	b->gencode = xstrfmt("-gencode=arch=compute_%s,code=%s", o->arch + 3, o->arch);
	struct strbuf md = STRBUF_INIT;
	strbuf_add(&md, b->text, b->len);
	char *h1 = xstrfmt("%s/pkb.h", b->inc), *h2 = xstrfmt("%s/pkb_device.cuh", b->inc);
	hash_update_file(&md, h1);
	hash_update_file(&md, h2);
	free(h1);
	free(h2);
	/* cuDNN and cuFFT are linked only for a source that includes their
	 * header, itself or through a local header; TK's headers, included
	 * with quotes, go into the key the same way */
	b->libs = libs_of(b->text);
	hash_includes(&md, b->text, b->src, b->path, 0, &b->libs);
	char extra[64] = "";
	for (size_t i = 0; i < sizeof opt_libs / sizeof *opt_libs; i++)
		if (b->libs >> i & 1)
			snprintf(extra + strlen(extra), sizeof extra - strlen(extra), " %s",
				 opt_libs[i].flag);
	struct strbuf tk = STRBUF_INIT;
	if (b->tk_inc) {
		for (int i = 0; tk_flags[i]; i++)
			strbuf_addf(&tk, " %s", tk_flags[i]);
		strbuf_addf(&tk, " %s", tk_arch_define(o->arch));
	}
	r->flags = xstrfmt("nvcc -std=%s -O3 -lineinfo%s -Xcompiler -fPIC -shared --cudart shared "
			   "%s -I%s%s%s%s%s%s%s -o OUT.so SRC.cu -lcublas -lcublasLt -lcurand%s%s%s",
			   b->tk_inc ? "c++20" : "c++17", tk.s ? tk.s : "", b->gencode, b->inc,
			   b->lib ? " -I" : "", b->lib ? b->lib : "", b->tk_inc ? " -I" : "",
			   b->tk_inc ? b->tk_inc : "", b->tk_inc ? " -I" : "",
			   b->tk_inc ? b->tk_proto : "", extra, o->reference ? " -lnccl" : "",
			   b->tk_inc ? " -lcuda" : "");
	strbuf_free(&tk);
	strbuf_addstr(&md, r->flags);
	strbuf_addstr(&md, build_nvcc_version());
	sha256_hex(md.s, md.len, r->key);
	strbuf_free(&md);
}

/* the paths of one nvcc run */
struct nvcc_files {
	const char *cu;           /* the source nvcc reads */
	const char *out;          /* the .so it writes */
	const char *iflag, *libflag, *srcdir;   /* -I's; libflag, srcdir: NULL when none */
	const char *tkflag[2];                  /* TK's include/ and prototype/; NULL when none */
};

/* nvcc's command line into argv (40 slots, pointing at b's and f's
 * strings): the flags r->flags names, with f's real paths */
static void nvcc_argv(const struct build *b, const struct build_opts *o,
		      const struct nvcc_files *f, char **argv)
{
	int a = 0;
	argv[a++] = (char *)nvcc_path();
	argv[a++] = b->tk_inc ? "-std=c++20" : "-std=c++17";
	argv[a++] = "-O3";
	argv[a++] = "-lineinfo";
	if (b->tk_inc) {
		for (int i = 0; tk_flags[i]; i++)
			argv[a++] = (char *)tk_flags[i];
		if (*tk_arch_define(o->arch))
			argv[a++] = (char *)tk_arch_define(o->arch);
	}
	argv[a++] = "-Xcompiler";
	argv[a++] = "-fPIC";
	argv[a++] = "-shared";
	argv[a++] = "--cudart";
	argv[a++] = "shared";
	argv[a++] = b->gencode;
	argv[a++] = (char *)f->iflag;
	if (f->libflag)
		argv[a++] = (char *)f->libflag;
	if (f->tkflag[0]) {
		argv[a++] = (char *)f->tkflag[0];
		argv[a++] = (char *)f->tkflag[1];
	}
	if (f->srcdir)
		argv[a++] = (char *)f->srcdir;
	argv[a++] = "-o";
	argv[a++] = (char *)f->out;
	argv[a++] = (char *)f->cu;
	argv[a++] = "-lcublas";
	argv[a++] = "-lcublasLt";
	argv[a++] = "-lcurand";
	for (size_t i = 0; i < sizeof opt_libs / sizeof *opt_libs; i++)
		if (b->libs >> i & 1)
			argv[a++] = (char *)opt_libs[i].flag;
	if (o->reference)
		argv[a++] = "-lnccl";
	if (b->tk_inc)   /* TK's host side calls the driver (cuTensorMapEncodeTiled ...) */
		argv[a++] = "-lcuda";
	argv[a] = NULL;
}

/* A mutant's text into the cache `dir`, for nvcc: its path (*cu) and the
 * mutant's folder as an include flag (*srcdir); -1 (said) when it cannot
 * be written. */
static int write_mutant(const struct build *b, const char *dir, const char *key, char **cu,
			char **srcdir)
{
	*cu = xstrfmt("%s/%s.%d.mutant.cu", dir, key, (int)getpid());
	char *d = xstrdup(b->src), *sl = strrchr(d, '/');
	if (sl)
		*sl = 0;
	*srcdir = xstrfmt("-I%s", sl ? d : ".");
	free(d);
	if (write_file_atomic(*cu, b->text, b->len) < 0)
		return error("cannot write '%s': %s", *cu, strerror(errno));
	return 0;
}

/* A miss: nvcc into a temporary .so in the cache `dir`, renamed into place
 * (r->so_path) when it compiles, else its log's head in r->log. 0, or -1
 * on an internal error. */
static int compile(const struct build *b, const struct build_opts *o, struct build_result *r,
		   const char *dir)
{
	char *cu = NULL, *srcdir = NULL;
	if (b->mutant && write_mutant(b, dir, r->key, &cu, &srcdir) < 0) {
		free(cu);
		free(srcdir);
		return -1;
	}
	char *tmp = xstrfmt("%s/%s.%d.tmp.so", dir, r->key, (int)getpid());
	char *log = xstrfmt("%s/%s.%d.log", dir, r->key, (int)getpid());
	char *iflag = xstrfmt("-I%s", b->inc);
	char *libflag = b->lib ? xstrfmt("-I%s", b->lib) : NULL;
	char *tk0 = b->tk_inc ? xstrfmt("-I%s", b->tk_inc) : NULL;
	char *tk1 = b->tk_inc ? xstrfmt("-I%s", b->tk_proto) : NULL;
	struct nvcc_files f = { .cu = cu ? cu : b->src, .out = tmp, .iflag = iflag,
				.libflag = libflag, .srcdir = srcdir, .tkflag = { tk0, tk1 } };
	char *argv[40];
	nvcc_argv(b, o, &f, argv);
	int rc = compile_confined(argv, log, b->src, dir, b->path, o->timeout_s);
	if (rc == 0 && rename(tmp, r->so_path) == 0) {
		r->ok = 1;
	} else {
		r->timed_out = rc == -2;
		char *out = read_file(log, NULL);
		r->log = rc == -2 ? xstrfmt("compiler passed its %.0f s deadline", o->timeout_s)
		       : out ? build_log_head(out) : xstrfmt("nvcc failed (status %d)", rc);
		free(out);
		unlink(tmp);
	}
	unlink(log);
	if (cu)
		unlink(cu);
	free(cu);
	free(srcdir);
	free(log);
	free(tmp);
	free(iflag);
	free(libflag);
	free(tk0);
	free(tk1);
	r->seconds = since_s(b->t0);
	return 0;
}

/* ---- a Python candidate (the triton backend) --------------------------------- */

/* What "compiles" a Python file: the interpreter parses it (ast.parse runs
 * none of it), confined as nvcc is. The file is kept in the cache as it is,
 * under its key, for the solution process to import (python/pkb_triton.py). */
static const char py_check[] =
	"import ast, sys; ast.parse(open(sys.argv[1], 'rb').read(), sys.argv[1])";

static int build_python(const char *src, const struct build_opts *o, struct build_result *r)
{
	uint64_t t0 = now_ns();
	size_t len = 0;
	char *text = read_file(src, &len);
	if (!text) {
		r->log = xstrfmt("cannot read '%s': %s", src, strerror(errno));
		return 0;
	}
	r->flags = xstrfmt("%s -I -S -c \"%s\" SRC.py (a syntax check; python/pkb_triton.py "
			   "imports the file in the solution process)", o->python, py_check);
	struct strbuf md = STRBUF_INIT;
	strbuf_add(&md, text, len);
	char *shim = xstrfmt("%s/python/pkb_triton.py", pkb_root());
	hash_update_file(&md, shim);
	free(shim);
	strbuf_addstr(&md, r->flags);
	sha256_hex(md.s, md.len, r->key);
	strbuf_free(&md);
	const char *dir = build_cache_dir();
	int rc = 0;
	if (mkdir_p(dir) < 0) {
		free(text);
		return error("cannot create cache '%s': %s", dir, strerror(errno));
	}
	r->so_path = xstrfmt("%s/%s.py", dir, r->key);
	struct stat st;
	if (stat(r->so_path, &st) == 0) {
		r->ok = r->cached = 1;
	} else {
		char *log = xstrfmt("%s/%s.%d.log", dir, r->key, (int)getpid());
		char *argv[] = { (char *)o->python, "-I", "-S", "-c", (char *)py_check, (char *)src,
				 NULL };
		const char *none[] = { NULL };
		int prc = compile_confined(argv, log, src, dir, none, o->timeout_s);
		char *out = read_file(log, NULL);
		unlink(log);
		free(log);
		if (prc == 0 && write_file_atomic(r->so_path, text, len) == 0) {
			r->ok = 1;
		} else {
			r->timed_out = prc == -2;
			r->log = prc == -2 ? xstrfmt("the syntax check passed its %.0f s deadline",
						     o->timeout_s)
			       : out && *out ? build_log_head(out)
			       : xstrfmt("%s failed (status %d)", o->python, prc);
		}
		free(out);
	}
	r->seconds = (double)(now_ns() - t0) / 1e9;
	free(text);
	return rc;
}

int build_solution(const char *src, const struct build_opts *o, struct build_result *r)
{
	if (o->python) {
		memset(r, 0, sizeof *r);
		return build_python(src, o, r);
	}
	memset(r, 0, sizeof *r);
	struct build b = { .src = src, .t0 = now_ns() };
	int rc = read_source(&b, r);
	if (rc < 0) {
		if (rc == -2)
			r->seconds = since_s(b.t0);
		free(b.text);
		return 0;
	}
	build_key(&b, o, r);
	const char *dir = build_cache_dir();
	rc = 0;
	if (mkdir_p(dir) < 0) {
		rc = error("cannot create cache '%s': %s", dir, strerror(errno));
	} else {
		r->so_path = xstrfmt("%s/%s.so", dir, r->key);
		struct stat st;
		if (stat(r->so_path, &st) == 0 && st.st_size > 0) {
			r->ok = r->cached = 1;
			r->seconds = since_s(b.t0);
		} else {
			rc = compile(&b, o, r, dir);
		}
	}
	free(b.text);
	free(b.inc);
	free(b.lib);
	free(b.tk_inc);
	free(b.tk_proto);
	free(b.gencode);
	return rc;
}

void build_result_free(struct build_result *r)
{
	free(r->so_path);
	free(r->log);
	free(r->flags);
	memset(r, 0, sizeof *r);
}

/*
 * sandbox.c -- see sandbox.h. The filter is built with libseccomp (Debian's
 * libseccomp-dev); Landlock is called through its three system calls, which
 * glibc does not wrap.
 */
#define _GNU_SOURCE
#include "sandbox.h"
#include "proto.h"   /* defines: proto_send, MSG_FAIL */
#include "util.h"
#include "wire.h"    /* defines: struct wire_job */

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Rights of Landlock ABI 3 and 5, fixed by the kernel's ABI, which Debian
 * 12's headers (ABI 2) do not name yet */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif

/* ---- environment ------------------------------------------------------------ */

/* What CUDA, NCCL, the sanitizers and pkb read (docs/PROCESS.md). A name
 * that says it holds a secret never passes, whatever its prefix. */
static const char *const env_prefixes[] = {
	"CUDA_", "NCCL_", "PKB_", "NVIDIA_", "CUBLAS_", "CUBLASLT_", "CUDNN_", "CUFFT_",
	"__NV_", "LC_", "ASAN_", "UBSAN_", "LSAN_", NULL,
};
static const char *const env_names[] = {
	"PATH", "LD_LIBRARY_PATH", "HOME", "TMPDIR", "LANG", "TZ", "TERM", NULL,
};
static const char *const env_secret_words[] = {
	"KEY", "TOKEN", "SECRET", "PASSW", "CREDENTIAL", "AUTH", "COOKIE", "SESSION", NULL,
};

int sandbox_env_allowed(const char *kv)
{
	const char *eq = strchr(kv, '=');
	size_t len = eq ? (size_t)(eq - kv) : strlen(kv);
	char name[256];
	if (len == 0 || len >= sizeof name)
		return 0;
	memcpy(name, kv, len);
	name[len] = 0;
	for (int i = 0; env_secret_words[i]; i++)
		if (strcasestr(name, env_secret_words[i]))
			return 0;
	for (int i = 0; env_names[i]; i++)
		if (!strcmp(name, env_names[i]))
			return 1;
	for (int i = 0; env_prefixes[i]; i++)
		if (!strncmp(name, env_prefixes[i], strlen(env_prefixes[i])))
			return 1;
	return 0;
}

char **sandbox_env_build(char *const *parent)
{
	size_t n = 0;
	while (parent && parent[n])
		n++;
	char **env = xcalloc(n + 1, sizeof *env);
	size_t k = 0;
	for (size_t i = 0; i < n; i++)
		if (sandbox_env_allowed(parent[i]))
			env[k++] = xstrdup(parent[i]);
	env[k] = NULL;
	return env;
}

void sandbox_env_free(char **env)
{
	for (size_t i = 0; env && env[i]; i++)
		free(env[i]);
	free(env);
}

/* ---- seccomp ------------------------------------------------------------------ */

/* Forbidden whatever their arguments. */
static const char *const forbidden[] = {
	/* new programs and processes (clone without CLONE_THREAD below) */
	"execve", "execveat", "fork", "vfork",
	/* other processes' memory */
	"ptrace", "process_vm_readv", "process_vm_writev", "pidfd_getfd", "pidfd_open",
	"kcmp",
	/* mounts, roots and namespaces */
	"mount", "umount2", "chroot", "pivot_root", "unshare", "setns", "mount_setattr",
	"move_mount", "fsopen", "fsmount", "fspick", "open_tree",
	"open_by_handle_at", "name_to_handle_at",
	/* identities */
	"setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setfsuid",
	"setfsgid", "setgroups", "capset",
	/* keyrings */
	"add_key", "request_key", "keyctl",
	/* the kernel itself */
	"kexec_load", "kexec_file_load", "init_module", "finit_module", "delete_module",
	"bpf", "iopl", "ioperm", "reboot", "swapon", "swapoff", "acct", "quotactl",
	"sethostname", "setdomainname", "settimeofday", "clock_settime", "clock_adjtime",
	"adjtimex", "syslog", "personality",
	/* I/O that bypasses the filter (io_uring runs socket, connect, openat
	 * without a system call of the process) */
	"io_uring_setup", "io_uring_enter", "io_uring_register",
	/* a thread of another process */
	"tkill",
	NULL,
};

/* the names SIGSYS may report, resolved at install time (the handler
 * cannot call libseccomp) */
#define MAX_NAMED 128
static struct { int nr; const char *name; } named[MAX_NAMED];
static int n_named;
static char last_violation[64];
static int report_fd = -1;

static void remember(const char *name)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr < 0 || n_named >= MAX_NAMED)
		return;
	named[n_named].nr = nr;
	named[n_named++].name = name;
}

static size_t put(char *buf, size_t off, size_t cap, const char *s)
{
	while (*s && off + 1 < cap)
		buf[off++] = *s++;
	return off;
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	const char *name = "?";
	for (int i = 0; i < n_named; i++)
		if (named[i].nr == si->si_syscall)
			name = named[i].name;
	char num[16], *p = num + sizeof num;
	unsigned v = (unsigned)si->si_syscall;
	*--p = 0;
	do
		*--p = (char)('0' + v % 10);
	while ((v /= 10) && p > num);
	char line[160];
	size_t o = put(line, 0, sizeof line, "pkb sandbox: forbidden system call ");
	o = put(line, o, sizeof line, name);
	o = put(line, o, sizeof line, " (");
	o = put(line, o, sizeof line, p);
	o = put(line, o, sizeof line, ") by the solution; the rank ends\n");
	size_t k = put(last_violation, 0, sizeof last_violation, name);
	last_violation[k] = 0;
	ssize_t w = write(2, line, o);
	(void)w;
	if (report_fd >= 0) {
		/* the parent's verdict, as rank_fail would send it (send() is
		 * async-signal-safe; names are identifiers: nothing to escape) */
		char msg[256];
		size_t m = put(msg, 0, sizeof msg, "{\"category\":\"load_refused\",\"message\":"
					       "\"forbidden system call ");
		m = put(msg, m, sizeof msg, name);
		m = put(msg, m, sizeof msg, " (");
		m = put(msg, m, sizeof msg, p);
		m = put(msg, m, sizeof msg, "): the rank's sandbox ended it (docs/ANTI_CHEAT.md)\"}");
		proto_send(report_fd, MSG_FAIL, msg, m);
	}
	_exit(SANDBOX_EXIT);
}

const char *sandbox_last_violation(void)
{
	return last_violation;
}

static int add(scmp_filter_ctx f, const char *name, unsigned n_cmp, const struct scmp_arg_cmp *cmp,
	       char *err, size_t n)
{
	int nr = seccomp_syscall_resolve_name(name);
	if (nr == __NR_SCMP_ERROR)
		return 0;   /* not a call of this architecture */
	int r = seccomp_rule_add_array(f, SCMP_ACT_TRAP, nr, n_cmp, cmp);
	if (r < 0) {
		snprintf(err, n, "seccomp rule for %s: %s", name, strerror(-r));
		return -1;
	}
	remember(name);
	return 0;
}

int sandbox_seccomp(unsigned flags, char *err, size_t n)
{
	struct sigaction sa = { .sa_sigaction = on_sigsys, .sa_flags = SA_SIGINFO };
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGSYS, &sa, NULL) < 0) {
		snprintf(err, n, "sigaction(SIGSYS): %s", strerror(errno));
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, n, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		return -1;
	}
	scmp_filter_ctx f = seccomp_init(SCMP_ACT_ALLOW);
	if (!f) {
		snprintf(err, n, "seccomp_init failed");
		return -1;
	}
	n_named = 0;
	int bad = 0;
	for (int i = 0; forbidden[i] && !bad; i++)
		bad = add(f, forbidden[i], 0, NULL, err, n);

	pid_t self = getpid();
	/* threads yes (CUDA, NCCL's proxy), processes no: clone without
	 * CLONE_THREAD; clone3 passes its flags in memory the filter cannot
	 * read, so it fails with ENOSYS and glibc falls back to clone */
	struct scmp_arg_cmp no_thread = SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, 0);
	struct scmp_arg_cmp other_pid = SCMP_A0(SCMP_CMP_NE, (scmp_datum_t)self);
	struct scmp_arg_cmp sigsys = SCMP_A0(SCMP_CMP_EQ, SIGSYS);
	bad = bad || add(f, "clone", 1, &no_thread, err, n)
	      || add(f, "kill", 1, &other_pid, err, n)
	      || add(f, "tgkill", 1, &other_pid, err, n)
	      || add(f, "rt_sigqueueinfo", 1, &other_pid, err, n)
	      || add(f, "rt_tgsigqueueinfo", 1, &other_pid, err, n)
	      || add(f, "rt_sigaction", 1, &sigsys, err, n)
	      || add(f, "signal", 1, &sigsys, err, n);
	if (!bad && seccomp_rule_add(f, SCMP_ACT_ERRNO(ENOSYS), SCMP_SYS(clone3), 0) < 0) {
		snprintf(err, n, "seccomp rule for clone3 failed");
		bad = 1;
	}
	/* sockets: UNIX always (NCCL passes cuMem handles over them), INET and
	 * INET6 only while NCCL may still open connections; every other family
	 * (netlink, packet, ...) never */
	for (int d = 0; d <= AF_MAX && !bad; d++) {
		if (d == AF_UNIX || ((d == AF_INET || d == AF_INET6) && (flags & SANDBOX_ALLOW_INET)))
			continue;
		struct scmp_arg_cmp dom = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)d);
		bad = add(f, "socket", 1, &dom, err, n) || add(f, "socketpair", 1, &dom, err, n);
	}
	if (!bad) {
		struct scmp_arg_cmp above = SCMP_A0(SCMP_CMP_GT, AF_MAX);
		bad = add(f, "socket", 1, &above, err, n);
	}
	if (!bad) {
		int r = seccomp_attr_set(f, SCMP_FLTATR_CTL_TSYNC, 1);
		r = r < 0 ? r : seccomp_load(f);
		if (r < 0) {
			snprintf(err, n, "seccomp_load: %s", strerror(-r));
			bad = 1;
		}
	}
	seccomp_release(f);
	return bad ? -1 : 0;
}

/* ---- Landlock ------------------------------------------------------------------ */

int sandbox_landlock_abi(char *why, size_t n)
{
	long abi = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		snprintf(why, n, "Landlock is not available on this kernel (%s): file access is "
			 "not restricted", errno == EOPNOTSUPP ? "disabled at boot" : strerror(errno));
		return 0;
	}
	return (int)abi;
}

static int allow_below(int ruleset, const char *path, __u64 access, __u64 handled, char *err,
		       size_t n)
{
	int fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 0;   /* a path this machine lacks: nothing to allow */
	struct stat st;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		/* on a file only the file rights apply */
		access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
			  LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE |
			  LANDLOCK_ACCESS_FS_IOCTL_DEV;
	struct landlock_path_beneath_attr pb = { .allowed_access = access & handled,
						 .parent_fd = fd };
	long r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	close(fd);
	if (r < 0) {
		snprintf(err, n, "landlock_add_rule '%s': %s", path, strerror(errno));
		return -1;
	}
	return 0;
}

int sandbox_landlock(const char *const *ro, const char *const *rw, char *err, size_t n)
{
	int abi = sandbox_landlock_abi(err, n);
	if (abi < 1)
		return 1;
	/* every file right this ABI knows is handled (denied unless allowed) */
	__u64 handled = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
			LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
			LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
			LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
			LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
			LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
			LANDLOCK_ACCESS_FS_MAKE_SYM;
	if (abi >= 2)
		handled |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		handled |= LANDLOCK_ACCESS_FS_TRUNCATE;
	if (abi >= 5)
		handled |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
	struct landlock_ruleset_attr attr = { .handled_access_fs = handled };
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, sizeof attr, 0);
	if (rs < 0) {
		snprintf(err, n, "landlock_create_ruleset: %s", strerror(errno));
		return -1;
	}
	__u64 read = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE |
		     LANDLOCK_ACCESS_FS_READ_DIR;
	int bad = 0;
	for (int i = 0; ro && ro[i] && !bad; i++)
		bad = allow_below(rs, ro[i], read, handled, err, n);
	for (int i = 0; rw && rw[i] && !bad; i++)
		bad = allow_below(rs, rw[i], handled, handled, err, n);
	if (!bad && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(err, n, "prctl(PR_SET_NO_NEW_PRIVS): %s", strerror(errno));
		bad = 1;
	}
	if (!bad && syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		snprintf(err, n, "landlock_restrict_self: %s", strerror(errno));
		bad = 1;
	}
	close(rs);
	return bad ? -1 : 0;
}

/* ---- the rank ------------------------------------------------------------------ */

static struct { int fd; const char *phase; const int *finishing; } guard;

static void on_exit_guard(int status, void *arg)
{
	(void)arg;
	if (*guard.finishing)
		return;
	char msg[400];
	snprintf(msg, sizeof msg, "exit(%d) was called during '%s' (a solution may not end the "
		 "rank process)", status, guard.phase);
	error("%s", msg);
	json_t *j = json_pack("{s:s,s:s}", "category", "runtime_error", "message", msg);
	char *txt = json_dumps(j, JSON_COMPACT);
	if (txt)
		proto_send(guard.fd, MSG_FAIL, txt, strlen(txt));
	free(txt);
	json_decref(j);
}

void sandbox_exit_guard(int fd, const char *phase, const int *finishing)
{
	guard.fd = fd;
	guard.phase = phase;
	guard.finishing = finishing;
	on_exit(on_exit_guard, NULL);
}

int sandbox_rank_enter(const struct wire_job *j, int fd, char *err, size_t n)
{
	static const char *const system_ro[] = { "/usr", "/lib", "/lib64", "/lib32", "/etc",
						 "/opt", "/proc", "/sys", NULL };
	const char *ro[64], *rw[3];
	char *own[48];
	int nro = 0, nown = 0, nrw = 0;
	for (int i = 0; system_ro[i]; i++)
		ro[nro++] = system_ro[i];
	unsigned flags = 0;
	for (int i = 0; i < j->n_sol && i < WIRE_MAX_SOL; i++) {
		flags |= j->sol[i].nccl ? SANDBOX_ALLOW_INET : 0;
		char *d = xstrdup(j->sol[i].so), *slash = strrchr(d, '/');
		if (slash && slash != d)
			*slash = 0;
		else
			strcpy(d, slash ? "/" : ".");
		ro[nro++] = own[nown++] = d;
	}
	/* a CUDA or NCCL of the user's own, loaded lazily (cuBLAS, cuFFT ...) */
	char *lib = xstrdup(getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
	for (char *save = NULL, *t = strtok_r(lib, ":", &save); t && nown < 48 && nro < 62;
	     t = strtok_r(NULL, ":", &save))
		if (t[0] == '/')
			ro[nro++] = own[nown++] = xstrdup(t);
	free(lib);
	ro[nro] = NULL;
	rw[nrw++] = "/dev";
	if (j->save_dir[0])
		rw[nrw++] = j->save_dir;
	rw[nrw] = NULL;

	int r = sandbox_seccomp(flags, err, n);
	if (r == 0) {
		report_fd = fd;
		r = sandbox_landlock(ro, rw, err, n);
	}
	for (int i = 0; i < nown; i++)
		free(own[i]);
	return r;
}

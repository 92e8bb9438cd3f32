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

#include <dirent.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <jansson.h>
#include <linux/landlock.h>
#include <linux/magic.h>   /* defines: PROC_SUPER_MAGIC */
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <unistd.h>

/* Rights and scopes of Landlock ABI 3, 5 and 6, fixed by the kernel's ABI,
 * which Debian 12's headers (ABI 2) do not name yet */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#endif
#ifndef LANDLOCK_SCOPE_SIGNAL
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* struct landlock_ruleset_attr as of ABI 6 (net: ABI 4, scoped: ABI 6); the
 * kernel reads as many bytes as it is told, so older kernels get the
 * prefix they know */
struct ruleset_attr {
	__u64 handled_access_fs;
	__u64 handled_access_net;
	__u64 scoped;
};

/* ---- environment ------------------------------------------------------------ */

/* What CUDA, NCCL, the sanitizers and pkb read (docs/PROCESS.md). A name
 * that says it holds a secret never passes, whatever its prefix. CUDA_ lets
 * through CUDA_MPS_PIPE_DIRECTORY and CUDA_MPS_LOG_DIRECTORY: a solution
 * process is a client of the judge's MPS daemon (so that the judge's events
 * see its work), and finds the daemon there. */
static const char *const env_prefixes[] = {
	"CUDA_", "NCCL_", "PKB_", "NVIDIA_", "CUBLAS_", "CUBLASLT_", "CUDNN_", "CUFFT_",
	"__NV_", "LC_", "ASAN_", "UBSAN_", "LSAN_", NULL,
};
static const char *const env_names[] = {
	"PATH", "LD_LIBRARY_PATH", "HOME", "TMPDIR", "LANG", "TZ", "TERM",
	/* never NVLink multicast (launch.c sets them for every rank): a
	 * candidate's torch or NVSHMEM must see them too */
	"TORCH_SYMM_MEM_DISABLE_MULTICAST", "NVSHMEM_DISABLE_NVLS", NULL,
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
	for (int i = 0; i < n_named; i++)
		if (named[i].nr == nr)
			return;   /* a call with several rules (socket: one a family) */
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
	/* where the call came from, into the log: a call of the CUDA or C
	 * library on the solution's behalf names the library, not the
	 * solution (backtrace() was called once at entry, so its first use
	 * here loads nothing) */
	void *frames[24];
	int nf = backtrace(frames, 24);
	backtrace_symbols_fd(frames, nf, 2);
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
	void *warm[2];
	backtrace(warm, 2);   /* loads libgcc's unwinder now, not in the handler */
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
	/* another process's rlimits (prlimit64 with a pid; glibc's getrlimit
	 * and setrlimit pass 0): RLIMIT_CPU 1 on the judge would end it */
	struct scmp_arg_cmp some_pid = SCMP_A0(SCMP_CMP_NE, 0);
	bad = bad || add(f, "prlimit64", 1, &some_pid, err, n);
	{
		/* UNIX always (NCCL passes cuMem handles over them; CUDA under
		 * MPS opens one in each new thread), INET and INET6 only while
		 * NCCL may still open connections; every other family (netlink,
		 * packet, ...) never */
		for (int d = 0; d <= AF_MAX && !bad; d++) {
			if (d == AF_UNIX ||
			    ((d == AF_INET || d == AF_INET6) && (flags & SANDBOX_ALLOW_INET)))
				continue;
			struct scmp_arg_cmp dom = SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)d);
			bad = add(f, "socket", 1, &dom, err, n) || add(f, "socketpair", 1, &dom, err, n);
		}
		if (!bad) {
			struct scmp_arg_cmp above = SCMP_A0(SCMP_CMP_GT, AF_MAX);
			bad = add(f, "socket", 1, &above, err, n);
		}
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

/* the rights a rule may give, before the mask of what this kernel handles */
#define LL_FILE (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
		 LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_TRUNCATE | \
		 LANDLOCK_ACCESS_FS_IOCTL_DEV)
#define LL_READ (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | \
		 LANDLOCK_ACCESS_FS_READ_DIR)
/* a device node: open it, read, write and ioctl it; nothing made or removed */
#define LL_DEV  (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | \
		 LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV | \
		 LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_ALL  (~0ULL)

struct ll_rule {
	const char *path;
	__u64 access;   /* LL_*: masked by what the ruleset handles */
};

static int allow_below(int ruleset, const struct ll_rule *rule, __u64 handled, char *err,
		       size_t n)
{
	int fd = open(rule->path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return 0;   /* a path this machine lacks: nothing to allow */
	__u64 access = rule->access & handled;
	struct stat st;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		access &= LL_FILE;   /* on a file only the file rights apply */
	struct landlock_path_beneath_attr pb = { .allowed_access = access, .parent_fd = fd };
	long r = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
	int e = errno;
	/* A rule holds the inode, not the path: procfs makes a new inode for
	 * /proc/<pid> or /proc/cpuinfo once the kernel drops its dentry (memory
	 * pressure, drop_caches), and the rule would stop matching -- measured:
	 * /proc/self/status denied after `echo 2 > /proc/sys/vm/drop_caches`.
	 * An open descriptor pins the dentry, so those stay open for the life
	 * of the process (O_PATH: it reads nothing; a candidate that closes one
	 * only loses its own access). */
	struct statfs sf;
	if (r < 0 || fstatfs(fd, &sf) != 0 || sf.f_type != PROC_SUPER_MAGIC)
		close(fd);
	if (r < 0) {
		snprintf(err, n, "landlock_add_rule '%s': %s", rule->path, strerror(e));
		return -1;
	}
	return 0;
}

/* Landlock over `rules` (n_rules of them, NULL paths skipped) and, where the
 * ABI has them (6), the scopes in `scoped`. 0, 1 when Landlock is missing,
 * -1 with err. */
static int landlock_enter(const struct ll_rule *rules, int n_rules, __u64 scoped, char *err,
			  size_t n)
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
	/* below ABI 6 there is no scope: the seccomp filter's rules on
	 * signals and sockets still hold */
	struct ruleset_attr attr = { .handled_access_fs = handled,
				     .scoped = abi >= 6 ? scoped : 0 };
	size_t size = abi >= 6 ? sizeof attr : sizeof attr.handled_access_fs;
	int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0) {
		snprintf(err, n, "landlock_create_ruleset: %s", strerror(errno));
		return -1;
	}
	int bad = 0;
	for (int i = 0; i < n_rules && !bad; i++)
		if (rules[i].path)
			bad = allow_below(rs, &rules[i], handled, err, n);
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

int sandbox_landlock(const char *const *ro, const char *const *rw, char *err, size_t n)
{
	int k = 0, cap = 0;
	for (int i = 0; ro && ro[i]; i++)
		cap++;
	for (int i = 0; rw && rw[i]; i++)
		cap++;
	struct ll_rule *rules = xcalloc((size_t)cap + 1, sizeof *rules);
	for (int i = 0; ro && ro[i]; i++)
		rules[k++] = (struct ll_rule){ ro[i], LL_READ };
	for (int i = 0; rw && rw[i]; i++)
		rules[k++] = (struct ll_rule){ rw[i], LL_ALL };
	int r = landlock_enter(rules, k, 0, err, n);
	free(rules);
	return r;
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

/* lower resource `res` to at most `v`, soft and hard; never raises */
static int lower_limit(int res, const char *name, rlim_t v, char *err, size_t n)
{
	struct rlimit rl;
	if (getrlimit(res, &rl) < 0) {
		snprintf(err, n, "getrlimit(%s): %s", name, strerror(errno));
		return -1;
	}
	if (rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > v)
		rl.rlim_cur = v;
	if (rl.rlim_max == RLIM_INFINITY || rl.rlim_max > v)
		rl.rlim_max = v;
	if (setrlimit(res, &rl) < 0) {
		snprintf(err, n, "setrlimit(%s, %llu): %s", name, (unsigned long long)v,
			 strerror(errno));
		return -1;
	}
	return 0;
}

/* the rlimits of sandbox.h: CORE and CPU always, FSIZE and NOFILE without
 * NCCL (FSIZE not with a save folder either) */
static int rank_limits(int nccl, int saves, char *err, size_t n)
{
	if (lower_limit(RLIMIT_CORE, "RLIMIT_CORE", 0, err, n) < 0 ||
	    lower_limit(RLIMIT_CPU, "RLIMIT_CPU", SANDBOX_CPU_S, err, n) < 0)
		return -1;
	if (nccl)
		return 0;
	if (!saves && lower_limit(RLIMIT_FSIZE, "RLIMIT_FSIZE", SANDBOX_FSIZE_BYTES, err, n) < 0)
		return -1;
	return lower_limit(RLIMIT_NOFILE, "RLIMIT_NOFILE", SANDBOX_NOFILE, err, n);
}

/* the device nodes of the GPUs: every /dev/nvidia* (nvidia0.., nvidiactl,
 * nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, the nvidia-caps folder),
 * xstrdup'd into names[], at most cap; how many */
static int gpu_nodes(char **names, int cap)
{
	DIR *d = opendir("/dev");
	int k = 0;
	for (struct dirent *e; d && k < cap && (e = readdir(d));)
		if (!strncmp(e->d_name, "nvidia", 6))
			names[k++] = xstrfmt("/dev/%s", e->d_name);
	if (d)
		closedir(d);
	return k;
}

#define MAX_RULES 192   /* the system, the solution, LD_LIBRARY_PATH, GPU nodes, Python's folders */

/* the folders of every rank: libraries, configuration, devices' sysfs */
static const char *const system_ro[] = { "/usr", "/lib", "/lib64", "/lib32", "/etc", "/opt",
					 "/sys", NULL };
/* what CUDA and the C library read of /proc in a process without NCCL: its
 * own /proc/<pid> ("/proc/self" opens it: maps, status, fd/, task/), the
 * driver's parameters and GPUs, sysctls, the CPU and memory files; never
 * another process's /proc/<pid> (the judge's environ, cmdline, mem) */
static const char *const proc_ro[] = { "/proc/self", "/proc/driver", "/proc/sys",
				       "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", NULL };
static const char *const dev_rw[] = { "/dev/null", "/dev/zero", NULL };
static const char *const dev_ro[] = { "/dev/urandom", "/dev/random", NULL };

static int rank_rules(const struct wire_job *j, int nccl, struct ll_rule *rules, char **own,
		      int *nown_io);

int sandbox_rank_enter(const struct wire_job *j, int fd, char *err, size_t n)
{
	return sandbox_rank_enter_with(j, fd, NULL, NULL, err, n);
}

int sandbox_rank_enter_with(const struct wire_job *j, int fd, const char *const *ro,
			    const char *const *rw, char *err, size_t n)
{
	struct ll_rule rules[MAX_RULES];
	char *own[MAX_RULES];
	int nown = 0, nccl = 0;
	for (int i = 0; i < j->n_sol && i < WIRE_MAX_SOL; i++)
		nccl |= j->sol[i].nccl;
	int nr = rank_rules(j, nccl, rules, own, &nown);
	for (int i = 0; ro && ro[i] && nr < MAX_RULES; i++)
		rules[nr++] = (struct ll_rule){ ro[i], LL_READ };
	for (int i = 0; rw && rw[i] && nr < MAX_RULES; i++)
		rules[nr++] = (struct ll_rule){ rw[i], LL_ALL };
	__u64 scoped = LANDLOCK_SCOPE_SIGNAL | (nccl ? 0 : LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET);

	int r = rank_limits(nccl, j->save_dir[0] != 0, err, n);
	if (r == 0)
		r = sandbox_seccomp(nccl ? SANDBOX_ALLOW_INET : 0, err, n);
	if (r == 0) {
		report_fd = fd;
		r = landlock_enter(rules, nr, scoped, err, n);
	}
	for (int i = 0; i < nown; i++)
		free(own[i]);
	return r;
}

int sandbox_rank_can_read(const struct wire_job *j, const char *path)
{
	struct ll_rule rules[MAX_RULES];
	char *own[MAX_RULES];
	int nown = 0, nccl = 0, hit = 0;
	for (int i = 0; i < j->n_sol && i < WIRE_MAX_SOL; i++)
		nccl |= j->sol[i].nccl;
	int nr = rank_rules(j, nccl, rules, own, &nown);
	for (int i = 0; i < nr && !hit; i++) {
		if (!rules[i].path)
			continue;
		size_t l = strlen(rules[i].path);
		while (l > 1 && rules[i].path[l - 1] == '/')
			l--;
		hit = !strncmp(path, rules[i].path, l) && (path[l] == 0 || path[l] == '/' ||
							   rules[i].path[l - 1] == '/');
	}
	for (int i = 0; i < nown; i++)
		free(own[i]);
	return hit;
}

/* The Landlock rules of a solution process of job j (sandbox.h says which),
 * into rules (MAX_RULES); the strings it allocates into own[*nown..]. */
static int rank_rules(const struct wire_job *j, int nccl, struct ll_rule *rules, char **own,
		      int *nown_io)
{
	int nr = 0, nown = *nown_io;
	for (int i = 0; system_ro[i]; i++)
		rules[nr++] = (struct ll_rule){ system_ro[i], LL_READ };
	for (int i = 0; i < j->n_sol && i < WIRE_MAX_SOL; i++) {
		char *d = xstrdup(j->sol[i].so), *slash = strrchr(d, '/');
		if (slash && slash != d)
			*slash = 0;
		else
			strcpy(d, slash ? "/" : ".");
		rules[nr++] = (struct ll_rule){ own[nown++] = d, LL_READ };
	}
	/* a CUDA or NCCL of the user's own, loaded lazily (cuBLAS, cuFFT ...) */
	char *lib = xstrdup(getenv("LD_LIBRARY_PATH") ? getenv("LD_LIBRARY_PATH") : "");
	for (char *save = NULL, *t = strtok_r(lib, ":", &save); t && nr < MAX_RULES - 64;
	     t = strtok_r(NULL, ":", &save))
		if (t[0] == '/')
			rules[nr++] = (struct ll_rule){ own[nown++] = xstrdup(t), LL_READ };
	free(lib);
	if (j->save_dir[0])
		rules[nr++] = (struct ll_rule){ j->save_dir, LL_ALL };
	if (nccl) {
		/* NCCL reads /proc (its topology, its peers) and keeps its
		 * segments in /dev/shm */
		rules[nr++] = (struct ll_rule){ "/proc", LL_READ };
		rules[nr++] = (struct ll_rule){ "/dev", LL_ALL };
	} else {
		for (int i = 0; proc_ro[i]; i++)
			rules[nr++] = (struct ll_rule){ proc_ro[i], LL_READ };
		for (int i = 0; dev_rw[i]; i++)
			rules[nr++] = (struct ll_rule){ dev_rw[i], LL_DEV };
		for (int i = 0; dev_ro[i]; i++)
			rules[nr++] = (struct ll_rule){ dev_ro[i], LANDLOCK_ACCESS_FS_READ_FILE };
		int k = gpu_nodes(own + nown, MAX_RULES - nr);
		for (int i = 0; i < k; i++)
			rules[nr++] = (struct ll_rule){ own[nown++], LL_DEV };
	}
	*nown_io = nown;
	return nr;
}

int sandbox_judge_harden(char *err, size_t n)
{
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0) {
		snprintf(err, n, "prctl(PR_SET_DUMPABLE, 0): %s", strerror(errno));
		return -1;
	}
	return 0;
}

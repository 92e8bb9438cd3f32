#define _GNU_SOURCE
/*
 * test_sandbox.c -- the rank sandbox on the host (src/sandbox.c): each escape
 * that issues 30 and 36 tried from a candidate runs in a child process under
 * the filter and must end it with SANDBOX_EXIT and a line naming the call;
 * what a rank needs (threads, UNIX sockets with NCCL, the judge link without,
 * its own signals, memory, stderr) still works; Landlock confines files;
 * sandbox_rank_enter's rules for a solution process with and without NCCL
 * (/dev, /proc, rlimits, scopes); the judge is not dumpable; the environment
 * drops every credential.
 */
#include "t.h"
#include "sandbox.h"
#include "util.h"
#include "wire.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

/* made before each child starts, as the judge link and CUDA's sockets are
 * made before a solution process enters its sandbox */
static int pair[2] = { -1, -1 };   /* a connected AF_UNIX socketpair */
static int pre_dgram = -1;         /* an unbound AF_UNIX datagram socket */
static struct sockaddr_un abstract; /* bound by the test process (outside) */
static socklen_t abstract_len;
static struct rlimit parent_fsize, parent_nofile;
static char so_dir[] = "/tmp/pkb-test-sandbox-so.XXXXXX";

/* ---- escapes: each would act outside the GPU if it ran --------------------- */

static int do_system(void) { return system("true"); }
static int do_popen(void) { FILE *f = popen("true", "r"); return f ? pclose(f) : -1; }
static int do_fork_exec(void)
{
	pid_t p = fork();
	if (p == 0) {
		execl("/bin/sh", "sh", "-c", "true", (char *)NULL);
		_exit(0);
	}
	return p > 0 ? waitpid(p, NULL, 0) : -1;
}
static int do_vfork(void)
{
	pid_t p = vfork();
	if (p == 0)
		_exit(0);
	return p;
}
static int do_raw_execve(void)
{
	char *argv[] = { "true", NULL };
	return (int)syscall(SYS_execve, "/bin/true", argv, NULL);
}
static int do_asm_execve(void)
{
	/* the same with no symbol at all: what a symbol scan cannot see */
	static const char path[] = "/bin/true";
	char *argv[] = { "true", NULL };
	long r;
	__asm__ volatile("syscall"
			 : "=a"(r)
			 : "a"((long)SYS_execve), "D"(path), "S"(argv), "d"(0L)
			 : "rcx", "r11", "memory");
	return (int)r;
}
static int do_socket_inet(void) { return socket(AF_INET, SOCK_STREAM, 0); }
static int do_socket_netlink(void) { return socket(AF_NETLINK, SOCK_RAW, 0); }
static int do_ptrace(void) { return (int)ptrace(PTRACE_TRACEME, 0, NULL, NULL); }
static int do_kill_parent(void) { return kill(getppid(), 0); }
static int do_setuid(void) { return setuid(0); }
static int do_mount(void) { return mount("none", "/tmp", "tmpfs", 0, NULL); }
static int do_keyctl(void) { return (int)syscall(SYS_keyctl, 0, 0, 0, 0, 0); }
static int do_unshare(void) { return unshare(CLONE_NEWUSER); }
static int do_catch_sigsys(void)
{
	/* taking the handler away would make every trap a no-op */
	return signal(SIGSYS, SIG_IGN) == SIG_ERR ? -1 : 0;
}
static int do_io_uring(void) { return (int)syscall(SYS_io_uring_setup, 1, NULL); }
/* the judge's limits: RLIMIT_CPU 1 would end it */
static int do_prlimit_parent(void)
{
	struct rlimit one = { 1, 1 };
	return prlimit(getppid(), RLIMIT_CPU, &one, NULL);
}
/* without NCCL no socket at all: a UNIX one could reach the judge's MPS
 * daemon, an X server, a D-Bus or an SSH agent of the user; the calls on a
 * descriptor trap before the kernel looks at it (-1 is never a socket) */

static const struct { const char *what, *call; int (*fn)(void); unsigned flags; } escapes[] = {
	{ "system()", "clone", do_system, 0 },
	{ "popen()", "clone", do_popen, 0 },
	{ "fork + execl(/bin/sh)", "clone", do_fork_exec, 0 },
	{ "vfork()", "vfork", do_vfork, 0 },
	{ "syscall(SYS_execve)", "execve", do_raw_execve, 0 },
	{ "inline-assembly execve", "execve", do_asm_execve, 0 },
	{ "socket(AF_INET) after NCCL's connections", "socket", do_socket_inet, 0 },
	{ "socket(AF_NETLINK)", "socket", do_socket_netlink, 0 },
	{ "ptrace", "ptrace", do_ptrace, 0 },
	{ "kill(parent)", "kill", do_kill_parent, 0 },
	{ "setuid", "setuid", do_setuid, 0 },
	{ "mount", "mount", do_mount, 0 },
	{ "keyctl", "keyctl", do_keyctl, 0 },
	{ "unshare", "unshare", do_unshare, 0 },
	{ "signal(SIGSYS, SIG_IGN)", "rt_sigaction", do_catch_sigsys, 0 },
	{ "io_uring_setup", "io_uring_setup", do_io_uring, 0 },
	{ "prlimit(parent, RLIMIT_CPU)", "prlimit64", do_prlimit_parent, 0 },
};

/* Run fn in a child under the filter; its exit status, stderr into `err`. */
static int sandboxed(unsigned flags, int (*fn)(void), char *err, size_t n)
{
	int pipefd[2];
	if (pipe(pipefd) < 0)
		return -1;
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		char e[256];
		if (sandbox_seccomp(flags, e, sizeof e) < 0) {
			fprintf(stderr, "install: %s\n", e);
			_exit(99);
		}
		int r = fn();
		_exit(r < 0 ? 10 : 0);
	}
	close(pipefd[1]);
	size_t off = 0;
	ssize_t k;
	while (off + 1 < n && (k = read(pipefd[0], err + off, n - 1 - off)) > 0)
		off += (size_t)k;
	err[off] = 0;
	close(pipefd[0]);
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* ---- what a rank still needs ------------------------------------------------ */

static void *thread_fn(void *arg) { return arg; }
static int do_threads(void)
{
	pthread_t t[4];
	for (int i = 0; i < 4; i++)
		if (pthread_create(&t[i], NULL, thread_fn, NULL))
			return -1;
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
static int do_unix_socket(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -1;
	int s = socket(AF_UNIX, SOCK_STREAM, 0);
	close(sv[0]);
	close(sv[1]);
	return s < 0 ? -1 : close(s);
}
static int do_own_signal(void) { return kill(getpid(), 0); }
static int do_memory(void) { void *p = malloc(64 << 20); memset(p, 1, 64 << 20); free(p); return 0; }
static int do_inet_allowed(void) { int s = socket(AF_INET, SOCK_STREAM, 0); return s < 0 ? -1 : close(s); }
/* the judge link: a socketpair made before, used with every call a rank
 * and proto.c make on it */
static int do_socketpair_ok(void)
{
	int sv[2];
	if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) < 0)
		return -1;
	close(sv[0]);
	close(sv[1]);
	return 0;
}

static int do_pair_io(void)
{
	char c = 0;
	if (send(pair[0], "a", 1, 0) != 1 || recv(pair[1], &c, 1, 0) != 1 || c != 'a')
		return -1;
	if (write(pair[1], "b", 1) != 1 || read(pair[0], &c, 1) != 1 || c != 'b')
		return -1;
	struct iovec io = { .iov_base = &c, .iov_len = 1 };
	struct msghdr m = { .msg_iov = &io, .msg_iovlen = 1 };
	c = 'c';
	if (sendmsg(pair[0], &m, 0) != 1 || (c = 0, recvmsg(pair[1], &m, 0)) != 1 || c != 'c')
		return -1;
	return 0;
}
static int do_own_rlimit(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
		return -1;
	rl.rlim_cur = rl.rlim_cur > 64 ? 64 : rl.rlim_cur;
	return setrlimit(RLIMIT_NOFILE, &rl);
}

static const struct { const char *what; unsigned flags; int (*fn)(void); } allowed[] = {
	{ "four threads", 0, do_threads },
	{ "UNIX sockets", 0, do_unix_socket },
	{ "a signal to itself", 0, do_own_signal },
	{ "64 MiB of memory", 0, do_memory },
	{ "socket(AF_INET) while NCCL may connect", SANDBOX_ALLOW_INET, do_inet_allowed },
	{ "send, recv, read, write, sendmsg, recvmsg on the judge link", 0, do_pair_io },
	{ "getrlimit, and setrlimit of its own", 0, do_own_rlimit },
	{ "socketpair(AF_UNIX), as CUDA's threads under MPS", 0, do_socketpair_ok },
};

/* ---- Landlock ------------------------------------------------------------------ */

static int landlock_child(const char *dir, const char *outside)
{
	const char *ro[] = { "/usr", "/lib", "/lib64", "/bin", NULL };
	const char *rw[] = { dir, "/dev/null", NULL };
	char e[256];
	int r = sandbox_landlock(ro, rw, e, sizeof e);
	if (r != 0) {
		fprintf(stderr, "landlock: %s\n", e);
		return 20;
	}
	char *mine = xstrfmt("%s/log.txt", dir);
	int fd = open(mine, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	if (fd < 0 || write(fd, "x", 1) != 1)
		return 21;   /* its own log directory must stay writable */
	close(fd);
	if (open("/usr/include/stdio.h", O_RDONLY) < 0)
		return 22;   /* libraries and headers stay readable */
	if (open("/etc/hostname", O_RDONLY) >= 0 || errno != EACCES)
		return 23;   /* anything else is not readable */
	char *other = xstrfmt("%s/planted", outside);
	if (open(other, O_WRONLY | O_CREAT, 0600) >= 0 || errno != EACCES)
		return 24;   /* nor writable */
	if (open("/usr/include/stdio.h", O_WRONLY) >= 0)
		return 25;   /* read-only below /usr */
	return 0;
}

/* ---- a solution process: sandbox_rank_enter ------------------------------------ */

/* Each of these runs in a child that entered the sandbox of a solution
 * process (a job of one solution, with NCCL or without) with `pair[1]` as
 * its judge link; 0, or a message on stderr and non-zero. */
#define NO(what) do { fprintf(stderr, "%s\n", what); return 1; } while (0)

static int denied(const char *path, int flags)
{
	int fd = open(path, flags, 0600);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	return errno == EACCES;
}
static int readable(const char *path)
{
	char c;
	int fd = open(path, O_RDONLY);
	ssize_t k = fd < 0 ? -1 : read(fd, &c, 1);
	if (fd >= 0)
		close(fd);
	if (k < 0)
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
	return k >= 0;
}

/* /dev/shm outlives the process: a candidate could memoise results there
 * across evaluations */
static int no_dev_shm(void)
{
	char *p = xstrfmt("/dev/shm/pkb-test-sandbox-%d", (int)getpid());
	int ok = denied(p, O_WRONLY | O_CREAT | O_TRUNC);
	if (!ok)
		unlink(p);
	free(p);
	if (!ok)
		NO("/dev/shm is writable");
	if (!denied("/dev/full", O_WRONLY))
		NO("/dev/full (not a GPU's node) opens");
	return 0;
}
static int dev_nodes(void)
{
	int fd = open("/dev/null", O_WRONLY);
	if (fd < 0 || write(fd, "x", 1) != 1)
		NO("/dev/null is not writable");
	close(fd);
	if (!readable("/dev/zero") || !readable("/dev/urandom"))
		NO("/dev/zero or /dev/urandom is not readable");
	if (!denied("/dev/urandom", O_WRONLY))
		NO("/dev/urandom is writable");
	return 0;
}
/* the judge's /proc/<pid>: its environment (the user's keys), its command
 * line, its memory */
static int no_judge_proc(void)
{
	static const char *const what[] = { "cmdline", "environ", "status", "maps", "mem" };
	for (size_t i = 0; i < ARRAY_SIZE(what); i++) {
		char *p = xstrfmt("/proc/%d/%s", (int)getppid(), what[i]);
		int ok = denied(p, O_RDONLY);
		if (!ok)
			fprintf(stderr, "%s opens\n", p);
		free(p);
		if (!ok)
			return 1;
	}
	if (!denied("/proc/1/cmdline", O_RDONLY))
		NO("/proc/1/cmdline opens");
	return 0;
}
/* what CUDA and the C library read */
static int own_proc(void)
{
	static const char *const path[] = { "/proc/self/status", "/proc/self/maps",
		"/proc/thread-self/stat", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat",
		"/proc/sys/kernel/ostype" };
	for (size_t i = 0; i < ARRAY_SIZE(path); i++)
		if (!readable(path[i]))
			return 1;
	char *p = xstrfmt("/proc/%d/status", (int)getpid());
	int ok = readable(p);
	free(p);
	return ok ? 0 : 1;
}
static int limits(rlim_t fsize, rlim_t nofile)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_CORE, &rl) < 0 || rl.rlim_cur != 0 || rl.rlim_max != 0)
		NO("RLIMIT_CORE is not 0");
	if (getrlimit(RLIMIT_CPU, &rl) < 0 || rl.rlim_cur > SANDBOX_CPU_S ||
	    rl.rlim_max > SANDBOX_CPU_S)
		NO("RLIMIT_CPU is above SANDBOX_CPU_S");
	if (getrlimit(RLIMIT_FSIZE, &rl) < 0 || rl.rlim_cur != fsize || rl.rlim_max != fsize) {
		fprintf(stderr, "RLIMIT_FSIZE %llu, want %llu\n", (unsigned long long)rl.rlim_cur,
			(unsigned long long)fsize);
		return 1;
	}
	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur > nofile || rl.rlim_max > nofile) {
		fprintf(stderr, "RLIMIT_NOFILE %llu, want <= %llu\n",
			(unsigned long long)rl.rlim_cur, (unsigned long long)nofile);
		return 1;
	}
	return 0;
}
static int limits_alone(void)
{
	rlim_t nofile = parent_nofile.rlim_cur < SANDBOX_NOFILE ? parent_nofile.rlim_cur
								 : SANDBOX_NOFILE;
	rlim_t fsize = parent_fsize.rlim_cur < (rlim_t)SANDBOX_FSIZE_BYTES
			       ? parent_fsize.rlim_cur : (rlim_t)SANDBOX_FSIZE_BYTES;
	return limits(fsize, nofile);
}
static int limits_nccl(void) { return limits(parent_fsize.rlim_cur, parent_nofile.rlim_cur); }
static int judge_link(void) { return do_pair_io() < 0; }
/* an abstract UNIX socket of a process outside the sandbox, reached from a
 * datagram socket made before it (no socket() needed): the scope refuses */
static int abstract_refused(void)
{
	ssize_t k = sendto(pre_dgram, "x", 1, 0, (struct sockaddr *)&abstract, abstract_len);
	if (k >= 0)
		NO("sendto an abstract socket outside the sandbox went through");
	if (errno != EPERM) {
		fprintf(stderr, "sendto: %s, want EPERM\n", strerror(errno));
		return 1;
	}
	return 0;
}
static int abstract_open(void)
{
	ssize_t k = sendto(pre_dgram, "x", 1, 0, (struct sockaddr *)&abstract, abstract_len);
	if (k < 0)
		fprintf(stderr, "sendto: %s\n", strerror(errno));
	return k != 1;
}
/* NCCL's own rules: /dev/shm for its segments, /proc for its topology */
static int nccl_files(void)
{
	char *p = xstrfmt("/dev/shm/pkb-test-sandbox-%d", (int)getpid());
	int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC, 0600);
	int ok = fd >= 0 && write(fd, "x", 1) == 1 && unlink(p) == 0;
	if (fd >= 0)
		close(fd);
	free(p);
	if (!ok)
		NO("NCCL's /dev/shm is not writable");
	char *q = xstrfmt("/proc/%d/status", (int)getppid());
	ok = readable(q);
	free(q);
	return ok ? 0 : 1;
}

/* The folders a solution process hosting Python gets besides
 * (sandbox_rank_enter_with): its interpreter's, read-only, and its scratch
 * folder, read-write; a sibling of theirs stays closed. Under so_dir's
 * parent's own temporary folder, which the rules never name. */
static char py_dir[] = "/tmp/pkb-test-sandbox-py.XXXXXX";
static char *py_ro, *py_rw, *py_other;

static int python_extras(void)
{
	char *f = xstrfmt("%s/site.py", py_ro), *g = xstrfmt("%s/cache.bin", py_rw);
	char *h = xstrfmt("%s/secret", py_other);
	int ok = readable(f) && denied(f, O_WRONLY) && !denied(g, O_WRONLY | O_CREAT | O_TRUNC) &&
		 denied(h, O_RDONLY);
	free(f);
	free(g);
	free(h);
	if (!ok)
		NO("the Python folders' rules do not hold");
	return 0;
}

/* Run fn in a child that entered a solution process's sandbox; its exit
 * status, stderr into `err`. 98: Landlock is missing. nccl 2: without
 * NCCL, with the Python extras. */
static int rank_sandboxed(int nccl, int (*fn)(void), char *err, size_t n)
{
	int pipefd[2];
	if (pipe(pipefd) < 0)
		return -1;
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		struct wire_job job;
		wire_job_init(&job);
		job.n_sol = 1;
		snprintf(job.sol[0].role, sizeof job.sol[0].role, "candidate");
		snprintf(job.sol[0].so, sizeof job.sol[0].so, "%s/candidate.so", so_dir);
		job.sol[0].nccl = nccl == 1;
		char e[256];
		const char *ro[] = { py_ro, NULL }, *rw[] = { py_rw, NULL };
		int r = nccl == 2 ? sandbox_rank_enter_with(&job, pair[1], ro, rw, e, sizeof e)
			: sandbox_rank_enter(&job, pair[1], e, sizeof e);
		if (r != 0) {
			fprintf(stderr, "enter: %s\n", e);
			_exit(r > 0 ? 98 : 99);
		}
		_exit(fn() ? 10 : 0);
	}
	close(pipefd[1]);
	size_t off = 0;
	ssize_t k;
	while (off + 1 < n && (k = read(pipefd[0], err + off, n - 1 - off)) > 0)
		off += (size_t)k;
	err[off] = 0;
	close(pipefd[0]);
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Landlock ABI each needs (0: none) */
static const struct { const char *what; int nccl, abi; int (*fn)(void); } rank_cases[] = {
	{ "no /dev/shm without NCCL", 0, 1, no_dev_shm },
	{ "the GPU's nodes, /dev/null, /dev/zero, /dev/urandom", 0, 1, dev_nodes },
	{ "no /proc/<judge pid> without NCCL", 0, 1, no_judge_proc },
	{ "its own /proc/self, /proc/cpuinfo, /proc/sys", 0, 1, own_proc },
	{ "rlimits without NCCL", 0, 0, limits_alone },
	{ "rlimits with NCCL", 1, 0, limits_nccl },
	{ "the judge link without NCCL", 0, 0, judge_link },
	{ "abstract UNIX socket outside: scoped without NCCL", 0, 6, abstract_refused },
	{ "abstract UNIX socket outside: NCCL's proxies need it", 1, 0, abstract_open },
	{ "/dev/shm and /proc with NCCL", 1, 1, nccl_files },
	{ "Python's folders read, its scratch written, nothing else", 2, 1, python_extras },
};

/* ---- the judge ------------------------------------------------------------------ */

/* a process of uid 65534 (when the test runs as root: else its own),
 * hardened or not, that says whether it is dumpable on ready[1] and waits
 * for hold[1] to close; the pid */
static pid_t judge(int harden, const int *ready, const int *hold)
{
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		close(ready[0]);
		close(hold[1]);
		if (geteuid() == 0 && (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
			_exit(3);
		/* a change of uid leaves a process undumpable; one exec'd by the
		 * user, as pkb's judge is, starts dumpable */
		if (prctl(PR_SET_DUMPABLE, 1, 0, 0, 0) < 0)
			_exit(3);
		char e[256];
		if (harden && sandbox_judge_harden(e, sizeof e) < 0)
			_exit(4);
		char c = (char)prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
		if (write(ready[1], &c, 1) != 1)
			_exit(5);
		while (read(hold[0], &c, 1) > 0)
			;
		_exit(0);
	}
	return p;
}
/* another process of the same uid opens /proc/<pid>/environ and mem: 0
 * both open, 1 both EACCES, 2 otherwise */
static int peek(pid_t pid)
{
	fflush(NULL);
	pid_t p = fork();
	if (p == 0) {
		if (geteuid() == 0 && (setresgid(65534, 65534, 65534) || setresuid(65534, 65534, 65534)))
			_exit(3);
		int open_n = 0, eacces_n = 0;
		static const char *const what[] = { "environ", "mem" };
		for (int i = 0; i < 2; i++) {
			char *path = xstrfmt("/proc/%d/%s", (int)pid, what[i]);
			int fd = open(path, O_RDONLY);
			free(path);
			open_n += fd >= 0;
			eacces_n += fd < 0 && errno == EACCES;
			if (fd >= 0)
				close(fd);
		}
		_exit(open_n == 2 ? 0 : eacces_n == 2 ? 1 : 2);
	}
	int st;
	waitpid(p, &st, 0);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}
static void judge_case(int harden)
{
	int ready[2], hold[2];
	if (pipe(ready) < 0 || pipe(hold) < 0) {
		CHECK(!"pipe");
		return;
	}
	pid_t j = judge(harden, ready, hold);
	close(ready[1]);
	close(hold[0]);
	char dumpable = -1;
	int got = (int)read(ready[0], &dumpable, 1);
	CHECKF(got == 1 && dumpable == !harden, "judge (hardened %d): dumpable %d", harden,
	       got == 1 ? dumpable : -1);
	int st = got == 1 ? peek(j) : -1;
	CHECKF(st == (harden ? 1 : 0), "another process of the judge's uid (hardened %d): "
	       "/proc/<judge>/environ and mem %s", harden,
	       st == 0 ? "open" : st == 1 ? "refused" : "neither");
	close(hold[1]);
	close(ready[0]);
	waitpid(j, NULL, 0);
}

/* which paths a sandboxed solution process could read: the judge's stores
 * (--ref-cache) must be none of them */
static void check_can_read(void)
{
	struct wire_job j;
	wire_job_init(&j);
	j.n_sol = 1;
	snprintf(j.sol[0].so, sizeof j.sol[0].so, "/tmp/pkb-objs/ab12/sol.so");
	const char *had = getenv("LD_LIBRARY_PATH");
	char *saved = had ? strdup(had) : NULL;
	setenv("LD_LIBRARY_PATH", "/work/libs:relative", 1);
	CHECK(sandbox_rank_can_read(&j, "/tmp/pkb-objs/ab12"));
	CHECK(sandbox_rank_can_read(&j, "/tmp/pkb-objs/ab12/ref"));
	CHECK(!sandbox_rank_can_read(&j, "/tmp/pkb-objs/ab12x"));   /* a prefix, not a folder */
	CHECK(!sandbox_rank_can_read(&j, "/tmp/pkb-objs"));
	CHECK(!sandbox_rank_can_read(&j, "/tmp/pkb-ref"));
	CHECK(sandbox_rank_can_read(&j, "/usr/lib/pkb"));
	CHECK(sandbox_rank_can_read(&j, "/etc"));
	CHECK(sandbox_rank_can_read(&j, "/work/libs/rc"));
	CHECK(!sandbox_rank_can_read(&j, "/work/lib"));
	CHECK(sandbox_rank_can_read(&j, "/proc/self/x") && !sandbox_rank_can_read(&j, "/proc/1"));
	CHECK(!sandbox_rank_can_read(&j, "/dev/shm/rc"));
	j.sol[0].nccl = 1;   /* NCCL's wide sandbox: all of /proc and /dev */
	CHECK(sandbox_rank_can_read(&j, "/proc/1") && sandbox_rank_can_read(&j, "/dev/shm/rc"));
	if (saved)
		setenv("LD_LIBRARY_PATH", saved, 1);
	else
		unsetenv("LD_LIBRARY_PATH");
	free(saved);
}

int main(void)
{
	char err[1024];
	check_can_read();
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, pair) == 0);
	CHECK((pre_dgram = socket(AF_UNIX, SOCK_DGRAM, 0)) >= 0);
	/* an abstract datagram socket of this process, outside every sandbox */
	int outside = socket(AF_UNIX, SOCK_DGRAM, 0);
	abstract.sun_family = AF_UNIX;
	int len = snprintf(abstract.sun_path + 1, sizeof abstract.sun_path - 1,
			   "pkb-test-sandbox-%d", (int)getpid());
	abstract_len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + (size_t)len);
	CHECK(outside >= 0 && bind(outside, (struct sockaddr *)&abstract, abstract_len) == 0);
	CHECK(getrlimit(RLIMIT_FSIZE, &parent_fsize) == 0 &&
	      getrlimit(RLIMIT_NOFILE, &parent_nofile) == 0);
	CHECK(mkdtemp(so_dir) != NULL);
	CHECK(mkdtemp(py_dir) != NULL);
	py_ro = xstrfmt("%s/ro", py_dir);
	py_rw = xstrfmt("%s/rw", py_dir);
	py_other = xstrfmt("%s/other", py_dir);
	mkdir_p(py_ro);
	mkdir_p(py_rw);
	mkdir_p(py_other);
	write_file_atomic(xstrfmt("%s/site.py", py_ro), "x\n", 2);
	write_file_atomic(xstrfmt("%s/secret", py_other), "s\n", 2);

	/* glibc's posix_spawn (system, popen) blocks every signal around its
	 * clone: the trap then cannot run the handler and the kernel ends the
	 * process by SIGSYS itself; the parent reports that as the sandbox too,
	 * without the call's name */
	for (size_t i = 0; i < ARRAY_SIZE(escapes); i++) {
		int st = sandboxed(escapes[i].flags, escapes[i].fn, err, sizeof err);
		char want[96];
		snprintf(want, sizeof want, "forbidden system call %s (", escapes[i].call);
		int spawn = escapes[i].fn == do_system || escapes[i].fn == do_popen;
		CHECKF((st == SANDBOX_EXIT && strstr(err, want)) || (spawn && st == 128 + SIGSYS),
		       "%s: exit %d, stderr '%s' (wanted %s)", escapes[i].what, st, err, want);
	}
	for (size_t i = 0; i < ARRAY_SIZE(allowed); i++) {
		int st = sandboxed(allowed[i].flags, allowed[i].fn, err, sizeof err);
		CHECKF(st == 0, "%s: exit %d, stderr '%s'", allowed[i].what, st, err);
	}

	/* the environment: what CUDA, NCCL and pkb read; no credential, even
	 * under an allowed prefix */
	char *parent[] = {
		"PATH=/usr/bin", "LD_LIBRARY_PATH=/usr/local/cuda/lib64", "CUDA_VISIBLE_DEVICES=0,1",
		"NCCL_NVLS_ENABLE=0", "NCCL_DEBUG=WARN", "PKB_ROOT=/x", "HOME=/root",
		"OPENAI_API_KEY=sk-test-secret", "ANTHROPIC_API_KEY=sk-ant", "GEMINI_API_KEY=g",
		"GOOGLE_API_KEY=g", "TOGETHER_API_KEY=t", "AWS_SECRET_ACCESS_KEY=a",
		"AWS_SESSION_TOKEN=a", "GITHUB_TOKEN=ghp", "HF_TOKEN=hf", "SSH_AUTH_SOCK=/tmp/s",
		"PKB_API_KEY=leak", "NCCL_SECRET=leak", "SLURM_JOB_ID=5", "KRB5CCNAME=/tmp/k",
		"DOCKER_HOST=unix:///x", "no_equals_sign", "CUDA_MPS_PIPE_DIRECTORY=/tmp/mps",
		"CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log", "TORCH_SYMM_MEM_DISABLE_MULTICAST=1",
		"NVSHMEM_DISABLE_NVLS=1", NULL,
	};
	char **env = sandbox_env_build(parent);
	static const char *const keep[] = {
		"PATH=/usr/bin", "LD_LIBRARY_PATH=/usr/local/cuda/lib64", "CUDA_VISIBLE_DEVICES=0,1",
		"NCCL_NVLS_ENABLE=0", "NCCL_DEBUG=WARN", "PKB_ROOT=/x", "HOME=/root",
		"CUDA_MPS_PIPE_DIRECTORY=/tmp/mps", "CUDA_MPS_LOG_DIRECTORY=/tmp/mps-log",
		"TORCH_SYMM_MEM_DISABLE_MULTICAST=1", "NVSHMEM_DISABLE_NVLS=1",
	};
	int n = 0;
	while (env[n])
		n++;
	CHECKF(n == (int)ARRAY_SIZE(keep), "%d variables kept, want %zu", n, ARRAY_SIZE(keep));
	for (size_t i = 0; i < ARRAY_SIZE(keep) && i < (size_t)n; i++)
		CHECKF(!strcmp(env[i], keep[i]), "kept '%s', want '%s'", env[i], keep[i]);
	for (int i = 0; i < n; i++)
		CHECKF(!strstr(env[i], "sk-") && !strstr(env[i], "leak") && !strstr(env[i], "ghp"),
		       "leaked '%s'", env[i]);
	sandbox_env_free(env);

	/* Landlock, where the kernel has it; where not, it says so */
	int abi = sandbox_landlock_abi(err, sizeof err);
	if (abi < 1) {
		printf("note: %s\n", err);
		const char *ro[] = { "/usr", NULL };
		CHECK(sandbox_landlock(ro, NULL, err, sizeof err) == 1 && strstr(err, "Landlock"));
	} else {
		char dir[] = "/tmp/pkb-test-sandbox.XXXXXX", out[] = "/tmp/pkb-test-outside.XXXXXX";
		CHECK(mkdtemp(dir) && mkdtemp(out));
		fflush(NULL);
		pid_t p = fork();
		if (p == 0)
			_exit(landlock_child(dir, out));
		int st;
		waitpid(p, &st, 0);
		CHECKF(WIFEXITED(st) && WEXITSTATUS(st) == 0, "landlock child: status %d", st);
		rm_rf(dir);
		rm_rf(out);
	}

	/* a solution process, with NCCL and without */
	for (size_t i = 0; i < ARRAY_SIZE(rank_cases); i++) {
		if (rank_cases[i].abi > abi) {
			printf("note: skipped '%s': it needs Landlock ABI %d, this kernel has %d\n",
			       rank_cases[i].what, rank_cases[i].abi, abi);
			continue;
		}
		int st = rank_sandboxed(rank_cases[i].nccl, rank_cases[i].fn, err, sizeof err);
		CHECKF(st == 0 || (st == 98 && abi < 1), "%s: exit %d, stderr '%s'",
		       rank_cases[i].what, st, err);
	}
	/* a forbidden call in a solution process without NCCL: socket(AF_INET) */
	int st = rank_sandboxed(0, do_socket_inet, err, sizeof err);
	CHECKF((st == SANDBOX_EXIT || (st == 98 && abi < 1)) &&
	       strstr(err, "forbidden system call socket ("),
	       "socket(AF_INET) in a solution process without NCCL: exit %d, stderr '%s'", st,
	       err);
	/* its FAIL message reached the judge link; drain it */
	char drain[512];
	while (recv(pair[0], drain, sizeof drain, MSG_DONTWAIT) > 0)
		;

	/* the judge: not dumpable, so its environ and mem are closed to the
	 * solution processes (same uid) */
	judge_case(0);
	judge_case(1);

	close(outside);
	close(pre_dgram);
	close(pair[0]);
	close(pair[1]);
	rm_rf(so_dir);
	rm_rf(py_dir);
	return t_done("test_sandbox");
}

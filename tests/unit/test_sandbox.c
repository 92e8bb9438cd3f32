#define _GNU_SOURCE
/*
 * test_sandbox.c -- the rank sandbox on the host (src/sandbox.c): each escape
 * that issue 30 tried from a candidate runs in a child process under the
 * filter and must end it with SANDBOX_EXIT and a line naming the call; what a
 * rank needs (threads, UNIX sockets, its own signals, memory, stderr) still
 * works; Landlock confines files; the environment drops every credential.
 */
#include "t.h"
#include "sandbox.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

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

static const struct { const char *what, *call; int (*fn)(void); } escapes[] = {
	{ "system()", "clone", do_system },
	{ "popen()", "clone", do_popen },
	{ "fork + execl(/bin/sh)", "clone", do_fork_exec },
	{ "vfork()", "vfork", do_vfork },
	{ "syscall(SYS_execve)", "execve", do_raw_execve },
	{ "inline-assembly execve", "execve", do_asm_execve },
	{ "socket(AF_INET) after NCCL's connections", "socket", do_socket_inet },
	{ "socket(AF_NETLINK)", "socket", do_socket_netlink },
	{ "ptrace", "ptrace", do_ptrace },
	{ "kill(parent)", "kill", do_kill_parent },
	{ "setuid", "setuid", do_setuid },
	{ "mount", "mount", do_mount },
	{ "keyctl", "keyctl", do_keyctl },
	{ "unshare", "unshare", do_unshare },
	{ "signal(SIGSYS, SIG_IGN)", "rt_sigaction", do_catch_sigsys },
	{ "io_uring_setup", "io_uring_setup", do_io_uring },
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

static const struct { const char *what; unsigned flags; int (*fn)(void); } allowed[] = {
	{ "four threads", 0, do_threads },
	{ "UNIX sockets", 0, do_unix_socket },
	{ "a signal to itself", 0, do_own_signal },
	{ "64 MiB of memory", 0, do_memory },
	{ "socket(AF_INET) while NCCL may connect", SANDBOX_ALLOW_INET, do_inet_allowed },
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

int main(void)
{
	char err[1024];

	/* glibc's posix_spawn (system, popen) blocks every signal around its
	 * clone: the trap then cannot run the handler and the kernel ends the
	 * process by SIGSYS itself; the parent reports that as the sandbox too,
	 * without the call's name */
	for (size_t i = 0; i < ARRAY_SIZE(escapes); i++) {
		int st = sandboxed(0, escapes[i].fn, err, sizeof err);
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
		"DOCKER_HOST=unix:///x", "no_equals_sign", NULL,
	};
	char **env = sandbox_env_build(parent);
	static const char *const keep[] = {
		"PATH=/usr/bin", "LD_LIBRARY_PATH=/usr/local/cuda/lib64", "CUDA_VISIBLE_DEVICES=0,1",
		"NCCL_NVLS_ENABLE=0", "NCCL_DEBUG=WARN", "PKB_ROOT=/x", "HOME=/root",
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
	return t_done("test_sandbox");
}

/*
 * sandbox.h -- what a rank (solution) process may still do once model-written
 * code is about to load: compute on its GPU, talk to its parent (the judge)
 * and, when its solution uses NCCL, to NCCL; write its own logs. Layers,
 * each installed before the first dlopen of a candidate (whose constructors
 * run at load time):
 *
 *   environment  the rank's environment is built from an allowlist, never
 *                inherited: no API keys, tokens or credentials reach it;
 *   rlimits      no core file, a CPU-time budget; without NCCL also a file
 *                size and an open-file cap (values and why: below);
 *   seccomp-bpf  no new process (execve, fork, vfork, clone without
 *                CLONE_THREAD), no ptrace or process_vm_*, no mount, chroot,
 *                namespaces, setuid family, keyrings, module or kexec calls,
 *                no signal and no rlimit change to another process; sockets:
 *                UNIX only without NCCL (CUDA under MPS opens one in each
 *                new thread), UNIX and INET/INET6 with it;
 *   Landlock     files: read only below the system folders and the paths
 *                given (the solution objects, CUDA, NCCL), write only below
 *                the save folder; without NCCL only the GPU device nodes in
 *                /dev (no /dev/shm, which outlives the run) and only the
 *                process's own /proc/<pid> and a few system files of /proc
 *                (never the judge's /proc/<pid>). Where the kernel has
 *                Landlock ABI 6, also scoped: no signal to a process outside
 *                the sandbox and, without NCCL, no abstract UNIX socket of
 *                one.
 *
 * A system call the filter forbids raises SIGSYS; the handler writes a line
 * naming the call and a backtrace to the process's stderr (its log) and ends
 * it with SANDBOX_EXIT, which the judge (solproc.c) reports as the verdict
 * `load_refused` (docs/EXIT_CODES.md). A candidate cannot take the handler away: rt_sigaction and
 * signal on SIGSYS are forbidden too. docs/ANTI_CHEAT.md has the threat model.
 *
 * The judge process, which holds the user's environment and the real
 * inputs and outputs, hardens itself with sandbox_judge_harden.
 */
#ifndef PKB_SANDBOX_H
#define PKB_SANDBOX_H

#include <stddef.h>

/* the exit status of a rank ended by a forbidden system call */
#define SANDBOX_EXIT 87

enum {
	SANDBOX_ALLOW_INET = 1 << 0,   /* AF_INET / AF_INET6 sockets (NCCL's
					  bootstrap and proxy connections) */
};

/* The rlimits sandbox_rank_enter sets. Each only lowers the current value,
 * soft and hard together, so the process cannot raise it back -- unless it
 * runs as root (CAP_SYS_RESOURCE), as on the lent GPU machines: there they
 * bound runaways, not a determined candidate. No RLIMIT_AS or RLIMIT_DATA:
 * CUDA reserves terabytes of virtual address space (UVM) at context
 * creation.
 *
 * RLIMIT_CORE 0, always: a core file would write the process's memory (the
 * inputs, its view of the judge's buffers) outside the sandbox.
 *
 * RLIMIT_FSIZE, without NCCL and without a save folder: such a process
 * writes only its log lines (~100 B each); 64 MiB is ~670,000 of them and
 * caps how much a runaway candidate writes into its log (the write past it
 * fails with EFBIG and SIGXFSZ ends the process). Not with NCCL (its
 * /dev/shm segments are files it sizes with ftruncate, per peer and
 * channel) nor with --save (whole tensors). */
#define SANDBOX_FSIZE_BYTES (64LL << 20)
/* RLIMIT_NOFILE, without NCCL: a CUDA process holds tens of descriptors
 * (its device nodes, event and UVM descriptors) and the judge link; 1024,
 * the usual default soft limit, leaves room and keeps a candidate from
 * exhausting the system's. Not with NCCL: its bootstrap raises the soft
 * limit to the hard one on purpose, and it opens sockets and cuMem
 * descriptors per peer lazily, inside the sandbox. */
#define SANDBOX_NOFILE 1024
/* RLIMIT_CPU, always: CPU seconds of the whole process, its threads summed.
 * An evaluation spins at most two threads (the host polling its events,
 * NCCL's proxy): 1800 s is 15 minutes of wall time at that rate, more than
 * a real evaluation takes; past it SIGXCPU ends the process, a second wall
 * behind the judge's phase deadlines. */
#define SANDBOX_CPU_S 1800

/* The environment of a rank process, from `parent` (an environ-style array):
 * only the variables CUDA, NCCL and pkb read (docs/PROCESS.md), in a new
 * NULL-terminated array of xstrdup'd strings. Free with sandbox_env_free. */
char **sandbox_env_build(char *const *parent);
void sandbox_env_free(char **env);
/* 1 if a variable of this name may reach a rank process */
int sandbox_env_allowed(const char *name_eq_value);

/* Install the system-call filter in this process (all its threads, and
 * every thread it starts). 0, or -1 with err set. Irreversible. */
int sandbox_seccomp(unsigned flags, char *err, size_t n);

/* The Landlock ABI version of this kernel, or 0 when it has none (or it is
 * disabled); `why` then says so. */
int sandbox_landlock_abi(char *why, size_t n);
/* Restrict file access: read (and execute: mapped libraries) below each of
 * `ro`, read and write below each of `rw` (NULL-terminated lists; missing
 * paths are skipped). 0, 1 when Landlock is missing (nothing restricted;
 * err says so), -1 with err on failure. Irreversible. */
int sandbox_landlock(const char *const *ro, const char *const *rw, char *err, size_t n);

/* The sandbox of a rank (a solution process) running job `j` (wire.h; a
 * solution process passes a job of its one solution), entered right before
 * its first dlopen of a solution: after CUDA's context, its CUDA IPC
 * mappings and, only when a solution of the job has NCCL, the communicator
 * exist. The fake rank of the tests enters it the same way. In order:
 *   rlimits  the values above (CORE and CPU always; FSIZE and NOFILE
 *            without NCCL);
 *   seccomp  UNIX sockets only when no solution of the job has NCCL,
 *            else SANDBOX_ALLOW_INET too (NCCL 2.28 connects to its peers'
 *            proxy threads lazily, at their first collective). Not none:
 *            under MPS, CUDA opens a UNIX socket in every new thread that
 *            calls it (cuDevicePrimaryCtxRetain, measured on 2x H100 with
 *            001 bad_late_host_thread), so a solution with a thread of its
 *            own would die of CUDA's socket; abstract names outside the
 *            process are closed by Landlock's scope below, and the only
 *            folders it may write hold no socket file;
 *   Landlock read below /usr /lib /lib64 /lib32 /etc /opt /sys, the
 *            solution objects' folders and each LD_LIBRARY_PATH entry;
 *            read and write below the job's save folder; and
 *            - with NCCL: read all of /proc, read and write below /dev (the
 *              GPUs' nodes, NCCL's /dev/shm segments);
 *            - without: read /proc/self (this process's /proc/<pid>),
 *              /proc/driver, /proc/sys, /proc/cpuinfo, /proc/meminfo,
 *              /proc/stat and nothing else of /proc; read and write the
 *              device nodes /dev/nvidia* (nvidia-caps included), /dev/null,
 *              /dev/zero, read /dev/urandom and /dev/random, nothing else
 *              of /dev (no /dev/shm: it outlives the process, a memo
 *              across evaluations);
 *            with ABI >= 6, scoped: signals (the F_SETOWN kind too) only
 *            within the sandbox, and without NCCL no abstract UNIX socket
 *            outside it (with NCCL the ranks' proxies pass cuMem handles
 *            over abstract sockets, each rank in a sandbox of its own).
 * A forbidden call then also sends a load_refused FAIL message on
 * `report_fd` (the parent link; -1: none) before the rank ends. 0; 1 when
 * Landlock is missing (files unrestricted: err says so, to warn); -1 with
 * err. */
struct wire_job;
int sandbox_rank_enter(const struct wire_job *j, int report_fd, char *err, size_t n);
/* The same with more folders: read below each of `ro`, read and write
 * below each of `rw` (NULL-terminated; NULL: none). A solution process
 * hosting Python (the triton backend) reads its interpreter's prefixes
 * and sys.path, and writes its own scratch folder (Triton's cache). */
int sandbox_rank_enter_with(const struct wire_job *j, int report_fd, const char *const *ro,
			    const char *const *rw, char *err, size_t n);
/* 1 if a solution process of job j could read `path` (absolute, no
 * symbolic links) once in its sandbox: a store the judge keeps must not be
 * (refcache.h) */
int sandbox_rank_can_read(const struct wire_job *j, const char *path);

/* The judge process (trusted: it holds the user's environment, the inputs,
 * the outputs and the clock), right after it starts: not dumpable
 * (PR_SET_DUMPABLE 0), so that a process of the same user -- a solution
 * process is one -- cannot ptrace it nor open its /proc/<pid>/mem, environ,
 * maps or fd/ (they become root's), and it leaves no core file. Root keeps
 * that access (CAP_SYS_PTRACE): against a candidate running as root the
 * solution process's own sandbox (no ptrace, no other /proc/<pid>) is the
 * wall. Solution processes it execs are dumpable again (execve resets it).
 * 0, or -1 with err. */
int sandbox_judge_harden(char *err, size_t n);

/* exit() called before the rank finishes is a solution's: from then on, an
 * exit() while *finishing is 0 sends a runtime_error FAIL on report_fd
 * naming the call, its status and *phase (the last phase the rank
 * announced), before the process ends. _exit() runs no hook: the parent
 * names a rank that ended before DONE. */
void sandbox_exit_guard(int report_fd, const char *phase, const int *finishing);

/* The name of the forbidden call the last SIGSYS of this process named
 * (for tests): "" when none. */
const char *sandbox_last_violation(void);

#endif

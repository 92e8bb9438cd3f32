/*
 * sandbox.h -- what a rank process may still do once model-written code is
 * about to load: compute on its GPU, talk to its parent and to NCCL, write
 * its own logs. Three layers, each installed by the rank before the first
 * dlopen of a candidate (whose constructors run at load time):
 *
 *   environment  the rank's environment is built from an allowlist, never
 *                inherited: no API keys, tokens or credentials reach it;
 *   seccomp-bpf  no new process (execve, fork, vfork, clone without
 *                CLONE_THREAD), no ptrace or process_vm_*, no mount, chroot,
 *                namespaces, setuid family, keyrings, module or kexec calls,
 *                no signal to another process, no socket family but UNIX and
 *                (while NCCL may still connect) INET/INET6;
 *   Landlock     files: read only below the paths given (the solution
 *                objects, CUDA, NCCL, /dev/nvidia*, /proc, /sys), write only
 *                below the rank's log directory.
 *
 * A system call the filter forbids raises SIGSYS; the handler writes one line
 * naming the call to the rank's stderr (its log) and ends the process with
 * SANDBOX_EXIT, which the parent reports as the verdict `sandbox` (docs/
 * EXIT_CODES.md). A candidate cannot take the handler away: rt_sigaction and
 * signal on SIGSYS are forbidden too. docs/ANTI_CHEAT.md has the threat model.
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

/* The sandbox of a rank running job `j` (wire.h), entered right before its
 * first dlopen of a solution (after CUDA's context and NCCL's communicator
 * exist); the fake rank of the tests enters it the same way. The seccomp
 * filter (INET sockets allowed when a solution of the job gets NCCL: NCCL
 * 2.28 connects to its peers' proxy threads lazily, at their first
 * collective), then Landlock: read below the system folders (/usr /lib
 * /lib64 /etc /opt /proc /sys), the solution objects' folders and each
 * LD_LIBRARY_PATH entry; read and write below /dev (the GPUs' nodes, NCCL's
 * /dev/shm) and the job's save folder. A forbidden call then also sends a
 * load_refused FAIL message on `report_fd` (the parent link; -1: none)
 * before the rank ends. 0; 1 when Landlock is missing (files unrestricted:
 * err says so, to warn); -1 with err. */
struct wire_job;
int sandbox_rank_enter(const struct wire_job *j, int report_fd, char *err, size_t n);

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

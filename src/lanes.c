/*
 * lanes.c -- see lanes.h. One loop: start what fits, poll for the end of a
 * launch every 50 ms (a launch is seconds long; the poll is also where the
 * timeouts and a stop signal are seen), report it, repeat.
 */
#define _GNU_SOURCE
#include "lanes.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

int lanes_place(const int *load, const int *cap, int ngpus, int world, int share)
{
	int best = -1, best_load = INT_MAX;
	if (world < 1 || share < 1)
		return -1;
	for (int first = 0; first + world <= ngpus; first += world) {
		int sum = 0, fits = 1;
		for (int g = first; g < first + world && fits; g++) {
			/* each launch on g, this one included, allows at most its share */
			int limit = load[g] ? (cap[g] < share ? cap[g] : share) : share;
			fits = load[g] < limit;
			sum += load[g];
		}
		if (fits && sum < best_load) {
			best = first;
			best_load = sum;
		}
	}
	return best;
}

/* the signal that asks the run to stop (0: none); a flag is all a handler
 * may safely set */
static volatile sig_atomic_t stop_signal;

static void on_stop(int sig)
{
	stop_signal = sig;
}

struct slot {
	pid_t pid;          /* 0: free */
	int job, first;
	int timed_out;
	uint64_t start_ns;
	char *gpus;
};

/* The device names of the caller: CUDA_VISIBLE_DEVICES split at commas
 * when it names at least n devices (then lane GPU g is the caller's g-th),
 * else NULL (lane GPU g is device g). */
static char **visible_names(int n)
{
	const char *vis = getenv("CUDA_VISIBLE_DEVICES");
	if (!vis || !*vis)
		return NULL;
	char *copy = xstrdup(vis), *save = NULL;
	char **names = xcalloc(n + 1, sizeof(*names));
	int k = 0;
	for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save))
		if (k < n)
			names[k++] = xstrdup(t);
	free(copy);
	if (k < n) {
		for (int i = 0; i < k; i++)
			free(names[i]);
		free(names);
		return NULL;
	}
	return names;
}

static char *set_names(char **names, int first, int world)
{
	char *s = xstrdup("");
	for (int g = first; g < first + world; g++) {
		char *t = names ? xstrfmt("%s%s%s", s, *s ? "," : "", names[g]) :
			xstrfmt("%s%s%d", s, *s ? "," : "", g);
		free(s);
		s = t;
	}
	return s;
}

static pid_t spawn(const struct lanes_job *j, const char *gpus)
{
	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		setpgid(0, 0);
		/* the caller may ignore SIGPIPE; a launch must not inherit that */
		signal(SIGPIPE, SIG_DFL);
		setenv("CUDA_VISIBLE_DEVICES", gpus, 1);
		if (j->log) {
			int fd = open(j->log, O_WRONLY | O_CREAT | O_TRUNC, 0644);
			if (fd >= 0) {
				dup2(fd, 1);
				dup2(fd, 2);
				close(fd);
			}
		}
		execvp(j->argv[0], j->argv);
		fprintf(stderr, "cannot run %s: %s\n", j->argv[0], strerror(errno));
		_exit(127);
	}
	setpgid(pid, pid);   /* in both, so that a kill right after fork finds the group */
	return pid;
}

/* an MPS control daemon a timed launch started (mps.c): it goes to the
 * subreaper when it forks into the background */
static int is_mps_daemon(long pid)
{
	char *path = xstrfmt("/proc/%ld/comm", pid);
	char *comm = read_file(path, NULL);
	free(path);
	int r = comm && !strncmp(comm, "nvidia-cuda-mps", 15);
	free(comm);
	return r;
}

/* The ranks of a launch killed at its deadline live on in process groups
 * of their own (a rank stuck in a kernel never notices its parent go). As
 * the subreaper the caller inherits them: every child that is not a
 * running launch is such an orphan, and its group is killed -- but an MPS
 * daemon, which a running timed launch may be using (a killed launch's is
 * stopped by the next mps_start, which finds its owner gone), and the
 * caller's spare (lanes_spare) unless this is a stop (s NULL). */
static pid_t spare;   /* lanes_spare's */

void lanes_spare(pid_t pid)
{
	spare = pid;
}

static void kill_orphans(const struct slot *s, int ns)
{
	char *path = xstrfmt("/proc/self/task/%d/children", (int)getpid());
	size_t len;
	char *buf = read_file(path, &len);
	free(path);
	if (!buf)
		return;
	char *p = buf, *end;
	for (long pid; (pid = strtol(p, &end, 10)) > 0; p = end) {
		int mine = s && spare > 0 && pid == spare;   /* a stop (s NULL) kills it too */
		for (int i = 0; i < ns; i++)
			mine |= s[i].pid == pid;
		if (!mine && !is_mps_daemon(pid)) {
			kill(-(pid_t)pid, SIGKILL);
			kill((pid_t)pid, SIGKILL);
		}
	}
	free(buf);
}

/* a run of lanes_run: its jobs, slots and the GPUs' loads */
struct lanes {
	struct lanes_job *jobs;
	int n, ngpus;
	struct slot *s;
	int ns;             /* slots: at most this many launches at once */
	int *load, *cap;    /* per GPU: launches on it, the smallest share among them */
	char **names;       /* the caller's device names, or NULL (visible_names) */
	int next, running;  /* the next job to start; launches running */
};

/* Start the launches that fit, in order, until one does not. 0, or -1
 * (said) when a fork fails. */
static int start_fitting(struct lanes *L)
{
	while (L->next < L->n && L->running < L->ns) {
		struct lanes_job *j = &L->jobs[L->next];
		int first = lanes_place(L->load, L->cap, L->ngpus, j->world, j->share);
		if (first < 0)
			break;
		int k = 0;
		while (L->s[k].pid)
			k++;
		struct slot *s = &L->s[k];
		*s = (struct slot){ .job = L->next, .first = first, .start_ns = now_ns(),
				    .gpus = set_names(L->names, first, j->world) };
		s->pid = spawn(j, s->gpus);
		if (s->pid < 0) {
			/* out of processes: end as if stopped, the caller
			 * keeps what was reported */
			error("cannot fork: %s", strerror(errno));
			s->pid = 0;
			free(s->gpus);
			s->gpus = NULL;
			return -1;
		}
		for (int g = first; g < first + j->world; g++) {
			L->cap[g] = L->load[g] && L->cap[g] < j->share ? L->cap[g] : j->share;
			L->load[g]++;
		}
		L->running++;
		L->next++;
	}
	return 0;
}

/* kill the group of every launch past its timeout */
static void enforce_timeouts(struct lanes *L)
{
	for (int k = 0; k < L->ns; k++) {
		struct slot *s = &L->s[k];
		if (s->pid && !s->timed_out && L->jobs[s->job].timeout_s > 0 &&
		    (now_ns() - s->start_ns) / 1e9 > L->jobs[s->job].timeout_s) {
			kill(-s->pid, SIGKILL);
			s->timed_out = 1;
		}
	}
}

/* The launch of slot k ended with wait status st: what it left is killed,
 * its GPUs freed (the set's shares recomputed from the launches left on
 * it), and done() told. */
static void finish(struct lanes *L, int k, int st, lanes_done_fn done, void *ctx)
{
	struct slot *s = &L->s[k];
	kill(-s->pid, SIGKILL);   /* anything the launch left in its group */
	if (s->timed_out)
		kill_orphans(L->s, L->ns);
	struct lanes_job *j = &L->jobs[s->job];
	struct lanes_done d = {
		.job = s->job,
		.status = s->timed_out ? -2 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st),
		.seconds = (now_ns() - s->start_ns) / 1e9,
		.gpus = s->gpus,
	};
	for (int g = s->first; g < s->first + j->world; g++) {
		L->load[g]--;
		L->cap[g] = INT_MAX;
	}
	s->pid = 0;
	L->running--;
	for (int o = 0; o < L->ns; o++) {
		const struct slot *t = &L->s[o];
		for (int g = s->first; t->pid && g < s->first + j->world; g++)
			if (g >= t->first && g < t->first + L->jobs[t->job].world &&
			    L->jobs[t->job].share < L->cap[g])
				L->cap[g] = L->jobs[t->job].share;
	}
	done(ctx, &d);
	free(s->gpus);
	s->gpus = NULL;
}

/* stopped (scancel, ^C): every launch's group goes, and the ranks they
 * orphan; nothing is reported for them, so a resumed sweep runs them
 * again */
static void kill_all(struct lanes *L)
{
	for (int k = 0; k < L->ns; k++)
		if (L->s[k].pid)
			kill(-L->s[k].pid, SIGKILL);
	kill_orphans(NULL, 0);
	while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
		;
}

int lanes_run(struct lanes_job *jobs, int n, int ngpus, int maxrun, lanes_done_fn done, void *ctx)
{
	for (int i = 0; i < n; i++)
		if (jobs[i].world < 1 || jobs[i].world > ngpus || jobs[i].share < 1)
			return error("a launch of %d GPUs does not fit on %d", jobs[i].world, ngpus);
	/* at most one launch per GPU per share: ngpus * max share bounds the slots */
	int maxshare = 1;
	for (int i = 0; i < n; i++)
		if (jobs[i].share > maxshare)
			maxshare = jobs[i].share;
	struct lanes L = { .jobs = jobs, .n = n, .ngpus = ngpus, .ns = ngpus * maxshare };
	if (maxrun > 0 && maxrun < L.ns)
		L.ns = maxrun;
	L.s = xcalloc(L.ns, sizeof(*L.s));
	L.load = xcalloc(ngpus, sizeof(int));
	L.cap = xcalloc(ngpus, sizeof(int));
	L.names = visible_names(ngpus);

	struct sigaction sa = { .sa_handler = on_stop }, old[3];
	static const int sigs[3] = { SIGTERM, SIGINT, SIGHUP };
	sigemptyset(&sa.sa_mask);
	stop_signal = 0;
	for (int k = 0; k < 3; k++)
		sigaction(sigs[k], &sa, &old[k]);
	prctl(PR_SET_CHILD_SUBREAPER, 1);

	int forked = 1;
	while ((L.next < n || L.running) && !stop_signal && forked) {
		if (start_fitting(&L) < 0)
			forked = 0;
		int st;
		pid_t pid = waitpid(-1, &st, WNOHANG);
		if (pid <= 0) {
			/* nothing ended: enforce the timeouts, then nap 50 ms */
			enforce_timeouts(&L);
			struct timespec ts = { 0, 50000000 };
			nanosleep(&ts, NULL);
			continue;
		}
		int k;
		for (k = 0; k < L.ns && L.s[k].pid != pid; k++)
			;
		if (k < L.ns)   /* else an orphaned rank, reaped */
			finish(&L, k, st, done, ctx);
	}
	int rc = 0;
	if (stop_signal || !forked) {
		kill_all(&L);
		rc = stop_signal ? 128 + stop_signal : -1;
	}
	for (int k = 0; k < 3; k++)
		sigaction(sigs[k], &old[k], NULL);
	for (int k = 0; k < L.ns; k++)
		free(L.s[k].gpus);
	if (L.names)
		for (int g = 0; g < ngpus; g++)
			free(L.names[g]);
	free(L.names);
	free(L.s);
	free(L.load);
	free(L.cap);
	return rc;
}

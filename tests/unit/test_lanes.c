/*
 * test_lanes.c -- src/lanes.c: where a launch goes (sets of W, shares,
 * timed launches alone, a W = 4 launch among W = 2 ones), and real runs
 * of small shell commands: no two launches of share 1 on a GPU at once
 * (each takes a lock directory named after its GPUs and fails when it is
 * taken), every set used, the caller's CUDA_VISIBLE_DEVICES mapped, exit
 * statuses and timeouts reported.
 */
#define _GNU_SOURCE
#include "../../src/lanes.h"
#include "../../src/util.h"
#include "t.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

struct seen {
	int n, status[16];
	char gpus[16][32];
	double seconds[16];
};

static void record(void *ctx, const struct lanes_done *d)
{
	struct seen *s = ctx;
	s->status[d->job] = d->status;
	s->seconds[d->job] = d->seconds;
	snprintf(s->gpus[d->job], sizeof(s->gpus[0]), "%s", d->gpus);
	s->n++;
}

static void placement(void)
{
	int load[8] = { 0 }, cap[8];
	for (int g = 0; g < 8; g++)
		cap[g] = INT_MAX;
	/* empty: the first set; a set busy with a share-1 launch: the next */
	CHECK(lanes_place(load, cap, 4, 2, 1) == 0);
	load[0] = load[1] = 1;
	cap[0] = cap[1] = 1;
	CHECK(lanes_place(load, cap, 4, 2, 1) == 2);
	CHECK(lanes_place(load, cap, 4, 2, 2) == 2);   /* the share-1 launch forbids company */
	load[2] = load[3] = 1;
	cap[2] = cap[3] = 1;
	CHECK(lanes_place(load, cap, 4, 2, 2) == -1);
	CHECK(lanes_place(load, cap, 4, 4, 2) == -1);
	/* untimed launches of share 2: two per set, the emptier set first */
	cap[0] = cap[1] = cap[2] = cap[3] = 2;
	load[2] = load[3] = 0;
	CHECK(lanes_place(load, cap, 4, 2, 2) == 2);
	load[2] = load[3] = 1;
	CHECK(lanes_place(load, cap, 4, 2, 2) == 0);   /* a tie: the lowest */
	CHECK(lanes_place(load, cap, 4, 2, 1) == -1);  /* a timed one waits for an empty set */
	load[0] = load[1] = 2;
	CHECK(lanes_place(load, cap, 4, 2, 2) == 2);
	load[2] = load[3] = 2;
	CHECK(lanes_place(load, cap, 4, 2, 2) == -1);
	CHECK(lanes_place(load, cap, 4, 2, 3) == -1);  /* its own share cannot lift theirs */
	/* W = 4 on 8 GPUs over one W = 2 launch of share 2 on GPUs 4,5 */
	memset(load, 0, sizeof(load));
	load[4] = load[5] = 1;
	cap[4] = cap[5] = 2;
	CHECK(lanes_place(load, cap, 8, 4, 2) == 0);
	load[0] = 1;
	cap[0] = 1;
	CHECK(lanes_place(load, cap, 8, 4, 2) == 4);
	CHECK(lanes_place(load, cap, 8, 4, 1) == -1);
	CHECK(lanes_place(load, cap, 8, 8, 2) == -1);
	/* sets are aligned: W = 3 on 8 GPUs uses 0-2 and 3-5, never 6-7 */
	memset(load, 0, sizeof(load));
	load[0] = load[3] = 1;
	cap[0] = cap[3] = 1;
	CHECK(lanes_place(load, cap, 8, 3, 1) == -1);
	CHECK(lanes_place(load, cap, 8, 9, 1) == -1);
	CHECK(lanes_place(load, cap, 8, 0, 1) == -1);
}

static char **sh(const char *script)
{
	char **argv = xcalloc(4, sizeof(char *));
	argv[0] = "/bin/sh";
	argv[1] = "-c";
	argv[2] = (char *)script;
	return argv;
}

int main(void)
{
	placement();

	char dir[] = "/tmp/pkb-test-lanes-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	/* 8 launches of W = 2, share 1, on 4 GPUs: each holds a lock on its
	 * set for 0.2 s and fails if the lock is taken */
	char *lock = xstrfmt("mkdir %s/lock.$CUDA_VISIBLE_DEVICES || exit 3; sleep 0.2; "
			     "rmdir %s/lock.$CUDA_VISIBLE_DEVICES", dir, dir);
	struct lanes_job jobs[8];
	for (int i = 0; i < 8; i++)
		jobs[i] = (struct lanes_job){ .world = 2, .share = 1, .argv = sh(lock) };
	struct seen s = { 0 };
	unsetenv("CUDA_VISIBLE_DEVICES");
	uint64_t t0 = now_ns();
	CHECK(lanes_run(jobs, 8, 4, 0, record, &s) == 0);
	double wall = (now_ns() - t0) / 1e9;
	CHECK(s.n == 8);
	int on01 = 0, on23 = 0, bad = 0;
	for (int i = 0; i < 8; i++) {
		bad += s.status[i] != 0;
		on01 += !strcmp(s.gpus[i], "0,1");
		on23 += !strcmp(s.gpus[i], "2,3");
	}
	CHECKF(!bad, "%d launches met another on their GPUs", bad);
	CHECKF(on01 + on23 == 8 && on01 && on23, "sets used: %d on 0,1, %d on 2,3", on01, on23);
	/* two at a time: about 4 x 0.2 s, not 8 x 0.2 s */
	CHECKF(wall > 0.75 && wall < 1.5, "8 launches of 0.2 s in two lanes took %.2f s", wall);

	/* share 2: two launches on a set at once (the lock is per launch here) */
	char *count = xstrfmt("mkdir %s/l.$CUDA_VISIBLE_DEVICES.a 2>/dev/null || "
			      "mkdir %s/l.$CUDA_VISIBLE_DEVICES.b || exit 3; sleep 0.3", dir, dir);
	struct lanes_job two[4];
	for (int i = 0; i < 4; i++)
		two[i] = (struct lanes_job){ .world = 2, .share = 2, .argv = sh(count) };
	memset(&s, 0, sizeof(s));
	t0 = now_ns();
	CHECK(lanes_run(two, 4, 4, 0, record, &s) == 0);
	wall = (now_ns() - t0) / 1e9;
	CHECKF(wall < 0.55, "4 launches of 0.3 s, two per set on two sets, took %.2f s", wall);
	bad = 0;
	for (int i = 0; i < 4; i++)
		bad += s.status[i] != 0;
	CHECKF(!bad, "%d launches found a third on their set", bad);
	/* maxrun 1: one at a time, whatever the shares */
	for (int i = 0; i < 4; i++)
		two[i].argv = sh("sleep 0.3");
	memset(&s, 0, sizeof(s));
	t0 = now_ns();
	CHECK(lanes_run(two, 4, 4, 1, record, &s) == 0);
	wall = (now_ns() - t0) / 1e9;
	CHECKF(wall > 1.15, "maxrun 1: 4 launches of 0.3 s took %.2f s", wall);

	/* the caller's CUDA_VISIBLE_DEVICES: lane GPUs are positions in it */
	setenv("CUDA_VISIBLE_DEVICES", "7,5,3,1", 1);
	struct lanes_job m[2] = {
		{ .world = 2, .share = 1, .argv = sh("test \"$CUDA_VISIBLE_DEVICES\" = 7,5 -o "
						      "\"$CUDA_VISIBLE_DEVICES\" = 3,1") },
		{ .world = 2, .share = 1, .argv = sh("exit 5") },
	};
	memset(&s, 0, sizeof(s));
	CHECK(lanes_run(m, 2, 4, 0, record, &s) == 0);
	CHECKF(!strcmp(s.gpus[0], "7,5") && !strcmp(s.gpus[1], "3,1"), "gpus %s and %s",
	       s.gpus[0], s.gpus[1]);
	CHECK(s.status[0] == 0);
	CHECK(s.status[1] == 5);
	unsetenv("CUDA_VISIBLE_DEVICES");

	/* a timeout: the group is killed, status -2, well before the sleep */
	struct lanes_job slow = { .world = 1, .share = 1, .argv = sh("sleep 30"), .timeout_s = 0.3 };
	memset(&s, 0, sizeof(s));
	t0 = now_ns();
	CHECK(lanes_run(&slow, 1, 1, 0, record, &s) == 0);
	CHECK(s.status[0] == -2);
	CHECKF((now_ns() - t0) / 1e9 < 2, "the timeout took %.2f s", (now_ns() - t0) / 1e9);
	/* the caller's spare child (the sweep's `pkb hold`) outlives the kill
	 * of orphans after a timeout; without lanes_spare it is killed */
	for (int spared = 1; spared >= 0; spared--) {
		pid_t keep = fork();
		if (keep == 0) {
			sleep(30);
			_exit(0);
		}
		lanes_spare(spared ? keep : 0);
		memset(&s, 0, sizeof(s));
		CHECK(lanes_run(&slow, 1, 1, 0, record, &s) == 0 && s.status[0] == -2);
		lanes_spare(0);
		int st = 0;
		pid_t got = 0;
		for (int k = 0; k < 100 && !got; k++)   /* a SIGKILL lands within 1 s */
			if (!(got = waitpid(keep, &st, WNOHANG)))
				usleep(10000);
		CHECKF(spared ? got == 0 : got == keep && WIFSIGNALED(st),
		       "the %s child: waitpid %d", spared ? "spared" : "unspared", (int)got);
		kill(keep, SIGKILL);
		waitpid(keep, NULL, 0);
	}
	/* a job that cannot fit: refused before anything starts */
	struct lanes_job big = { .world = 4, .share = 1, .argv = sh("true") };
	memset(&s, 0, sizeof(s));
	int err = dup(2), nul = open("/dev/null", O_WRONLY);   /* its error line is expected */
	dup2(nul, 2);
	CHECK(lanes_run(&big, 1, 2, 0, record, &s) == -1);
	dup2(err, 2);
	close(nul);
	close(err);
	CHECK(s.n == 0);
	/* a command that does not exist: 127 */
	char *none[] = { "/nonexistent/pkb-test", NULL };
	struct lanes_job nx = { .world = 1, .share = 1, .argv = none, .log = "/dev/null" };
	memset(&s, 0, sizeof(s));
	CHECK(lanes_run(&nx, 1, 1, 0, record, &s) == 0);
	CHECK(s.status[0] == 127);

	char *clean = xstrfmt("rm -rf %s", dir);
	CHECK(system(clean) == 0);
	return t_done("test_lanes");
}

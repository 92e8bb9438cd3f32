/*
 * test_mps.c -- mps.c against a fake nvidia-cuda-mps-control
 * (tests/cli/fake-mps/, first on PATH; its daemon is a python3 listening
 * on the control socket): a private daemon started and
 * stopped, a user's reused and left alone, PKB_MPS=off, no program, the
 * failures (no control pipe, -d failing or hanging, a daemon dead or deaf
 * at stop) within their bounds, the clean-up of a killed pkb's folders,
 * and a stop under a subreaper (the daemon a zombie of ours).
 * Everything happens under a private TMPDIR in /tmp.
 */
#define _GNU_SOURCE
#include "mps.h"
#include "util.h"
#include "t.h"

#include <dirent.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#define PIPE_VAR "CUDA_MPS_PIPE_DIRECTORY"
#define LOG_VAR  "CUDA_MPS_LOG_DIRECTORY"
#define VIS_VAR  "CUDA_VISIBLE_DEVICES"

static int is_gone(pid_t pid)
{
	if (kill(pid, 0) < 0 && errno == ESRCH)
		return 1;
	char *p = xstrfmt("/proc/%d/stat", (int)pid);
	char *s = read_file(p, NULL);
	free(p);
	char *rp = s ? strrchr(s, ')') : NULL;
	int z = !s || (rp && (rp[2] == 'Z' || rp[2] == 'X'));
	free(s);
	return z;
}

/* gone within 2 s (a killed grandchild is reaped by init, not at once) */
static int gone_soon(pid_t pid)
{
	for (int i = 0; i < 200 && !is_gone(pid); i++)
		usleep(10000);
	return is_gone(pid);
}

static pid_t pid_in(const char *dir, const char *name)
{
	char *p = xstrfmt("%s/%s", dir, name);
	char *s = read_file(p, NULL);
	free(p);
	pid_t pid = s ? (pid_t)atoi(s) : 0;
	free(s);
	return pid;
}

static int exists(const char *path)
{
	struct stat st;
	return lstat(path, &st) == 0;
}

static int count_folders(const char *tmp)
{
	DIR *d = opendir(tmp);
	int n = 0;
	struct dirent *e;
	while (d && (e = readdir(d)))
		n += !strncmp(e->d_name, "pkb-mps-", 8);
	if (d)
		closedir(d);
	return n;
}

static int env_is(const char *name, const char *want)
{
	const char *v = getenv(name);
	return want ? v && !strcmp(v, want) : !v;
}

/* a pid that was just in use and is gone now */
static pid_t dead_pid(void)
{
	pid_t pid = fork();
	if (pid == 0)
		_exit(0);
	waitpid(pid, NULL, 0);
	return pid;
}

static void write_str(const char *path, const char *s)
{
	if (write_file_atomic(path, s, strlen(s)) < 0)
		fprintf(stderr, "cannot write %s\n", path);
}

/* a unix socket bound at path; listening, or closed at once (the file
 * stays: the control a dead daemon leaves) */
static int socket_at(const char *path, int listening)
{
	struct sockaddr_un a = { .sun_family = AF_UNIX };
	snprintf(a.sun_path, sizeof a.sun_path, "%s", path);
	unlink(path);
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || (listening && listen(fd, 8) < 0))
		perror(path);
	if (!listening) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static double since(double t0)
{
	return now_s() - t0;
}

int main(void)
{
	char tmp[] = "/tmp/pkb-mps-test-XXXXXX";
	if (!mkdtemp(tmp)) {
		perror("mkdtemp");
		return 1;
	}
	setenv("TMPDIR", tmp, 1);
	const char *old_path = getenv("PATH");
	char *path = xstrfmt("%s/tests/cli/fake-mps:%s", pkb_root(), old_path ? old_path : "/usr/bin:/bin");
	setenv("PATH", path, 1);
	char *pids = xstrfmt("%s/fake-pids", tmp);
	unsetenv("PKB_FAKE_MPS_MODE");
	unsetenv("PKB_MPS");
	unsetenv(LOG_VAR);
	/* no variable: the default folder is asked; a real daemon there would
	 * be reused, so then point at an empty folder instead */
	char *nowhere = xstrfmt("%s/nowhere", tmp);
	const char *pipe_before = NULL;
	if (exists("/tmp/nvidia-mps/control")) {
		printf("test_mps: a daemon answers at /tmp/nvidia-mps; using %s\n", nowhere);
		setenv(PIPE_VAR, nowhere, 1);
		pipe_before = nowhere;
	} else {
		unsetenv(PIPE_VAR);
	}
	setenv(VIS_VAR, "5,7", 1);
	char err[512];

	/* ---- our own daemon -------------------------------------------------- */
	struct mps m = { .wait_s = 2 };
	CHECK(!strcmp(mps_describe(&m), "not started"));
	setenv("OPENAI_API_KEY", "sk-pkb-test-secret", 1);
	setenv("CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT", "75", 1);
	int rc = mps_start(&m, err, sizeof err);
	unsetenv("OPENAI_API_KEY");
	unsetenv("CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT");
	CHECKF(rc == 0 && m.active && m.ours, "rc %d: %s", rc, err);
	char *prefix = xstrfmt("%s/pkb-mps-", tmp);
	CHECKF(!strncmp(m.pipe_dir, prefix, strlen(prefix)), "pipe_dir %s", m.pipe_dir);
	char dir[512];
	snprintf(dir, sizeof dir, "%s", m.dir);
	struct stat st;
	CHECK(stat(dir, &st) == 0 && (st.st_mode & 0777) == 0700);
	CHECK(stat(m.pipe_dir, &st) == 0 && (st.st_mode & 0777) == 0700);
	char *control = xstrfmt("%s/control", m.pipe_dir);
	CHECK(lstat(control, &st) == 0 && S_ISSOCK(st.st_mode));
	CHECK(env_is(PIPE_VAR, m.pipe_dir) && env_is(LOG_VAR, m.log_dir));
	/* the daemon got the folders: it logged into ours */
	char *clog = xstrfmt("%s/control.log", m.log_dir);
	CHECK(exists(clog));
	/* with the ranks' environment, not the parent's: no secret */
	char *cenv_path = xstrfmt("%s/control.env", m.log_dir);
	char *cenv = read_file(cenv_path, NULL);
	CHECKF(cenv && strstr(cenv, "PATH=") && !strstr(cenv, "sk-pkb-test-secret"),
	       "the daemon's environment: %s", cenv ? "holds the secret" : "not written");
	/* the L2 set-aside pinned to 0, whatever the parent asked */
	CHECKF(cenv && strstr(cenv, "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=0\n") &&
	       !strstr(cenv, "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT=75"),
	       "the daemon's L2 set-aside: %s", cenv ? "not pinned to 0" : "not written");
	free(cenv);
	free(cenv_path);
	/* a client's device list counts among the daemon's */
	CHECK(env_is(VIS_VAR, "0,1"));
	pid_t daemon = pid_in(m.pipe_dir, "nvidia-cuda-mps-control.pid");
	CHECK(daemon > 0 && !is_gone(daemon));
	CHECK(pid_in(dir, "owner") == getpid());
	CHECK(!strncmp(mps_describe(&m), "running: pkb's own daemon", 25) &&
	      strstr(mps_describe(&m), m.pipe_dir));
	CHECK(mps_start(&m, err, sizeof err) == 0 && m.ours);   /* already active */

	/* a second start finds it through the variable and leaves it alone */
	struct mps u = { 0 };
	rc = mps_start(&u, err, sizeof err);
	CHECKF(rc == 0 && u.active && !u.ours, "rc %d: %s", rc, err);
	CHECK(!strcmp(u.pipe_dir, m.pipe_dir));
	CHECK(strstr(mps_describe(&u), "did not start") != NULL);
	mps_stop(&u);
	CHECK(!u.active && !is_gone(daemon) && exists(control) && env_is(PIPE_VAR, m.pipe_dir));
	CHECK(env_is(VIS_VAR, "0,1"));

	/* stop: the daemon goes, the folder goes, the variables are back */
	char pipe_dir[512];
	snprintf(pipe_dir, sizeof pipe_dir, "%s", m.pipe_dir);
	double t0 = now_s();
	mps_stop(&m);
	CHECKF(since(t0) < 1.5, "stop took %.2f s", since(t0));
	CHECK(gone_soon(daemon));
	CHECK(!exists(dir) && !m.active && !m.ours);
	CHECK(env_is(PIPE_VAR, pipe_before) && env_is(LOG_VAR, NULL) && env_is(VIS_VAR, "5,7"));
	CHECK(!strncmp(mps_describe(&m), "stopped", 7) && strstr(mps_describe(&m), pipe_dir));
	mps_stop(&m);   /* twice */
	CHECK(!m.active && env_is(PIPE_VAR, pipe_before) && env_is(VIS_VAR, "5,7"));
	CHECK(count_folders(tmp) == 0);
	free(control);
	free(clog);

	/* ---- the user's folder ---------------------------------------------- */
	/* the control a daemon leaves at quit, nobody listening: not an
	 * answer, so pkb starts its own and puts the user's variable back */
	char *user = xstrfmt("%s/user", tmp);
	mkdir(user, 0700);
	char *uc = xstrfmt("%s/control", user), *up = xstrfmt("%s/nvidia-cuda-mps-control.pid", user);
	socket_at(uc, 0);
	setenv(PIPE_VAR, user, 1);
	unsetenv(VIS_VAR);
	struct mps s = { .wait_s = 2 };
	rc = mps_start(&s, err, sizeof err);
	CHECKF(rc == 0 && s.ours && strcmp(s.pipe_dir, user), "rc %d: %s", rc, err);
	CHECK(env_is(VIS_VAR, NULL));   /* unset stays unset */
	mps_stop(&s);
	CHECK(env_is(PIPE_VAR, user) && env_is(VIS_VAR, NULL));
	/* a listener, but the pid file names a dead daemon: not an answer */
	int lfd = socket_at(uc, 1);
	char *dp = xstrfmt("%d\n", (int)dead_pid());
	write_str(up, dp);
	free(dp);
	rc = mps_start(&s, err, sizeof err);
	CHECKF(rc == 0 && s.ours, "rc %d: %s", rc, err);
	mps_stop(&s);
	/* a listener and no pid file (an older daemon): reused, untouched */
	unlink(up);
	rc = mps_start(&s, err, sizeof err);
	CHECKF(rc == 0 && s.active && !s.ours && !strcmp(s.pipe_dir, user), "rc %d: %s", rc, err);
	CHECK(count_folders(tmp) == 0);
	mps_stop(&s);
	CHECK(exists(uc) && env_is(PIPE_VAR, user));
	close(lfd);
	setenv(PIPE_VAR, nowhere, 1);

	/* ---- what pkb doctor says, starting nothing --------------------------- */
	char line[600];
	int before = count_folders(tmp);
	CHECKF(mps_probe(line, sizeof line) == 0 && strstr(line, "nvidia-cuda-mps-control") &&
	       strstr(line, "private daemon"), "probe: %s", line);
	CHECK(count_folders(tmp) == before);

	/* ---- no MPS ---------------------------------------------------------- */
	setenv("PKB_MPS", "off", 1);
	CHECKF(mps_probe(line, sizeof line) == 1 && strstr(line, "PKB_MPS=off"), "probe: %s", line);
	struct mps o = { 0 };
	rc = mps_start(&o, err, sizeof err);
	CHECKF(rc == 1 && !o.active && strstr(err, "PKB_MPS=off"), "rc %d: %s", rc, err);
	CHECK(!strncmp(mps_describe(&o), "off", 3) && count_folders(tmp) == 0);
	setenv("PKB_MPS", "maybe", 1);
	rc = mps_start(&o, err, sizeof err);
	CHECKF(rc == -1 && strstr(err, "'maybe'"), "rc %d: %s", rc, err);
	setenv("PKB_MPS", "on", 1);
	setenv("PATH", "/nonexistent", 1);
	CHECKF(mps_probe(line, sizeof line) == 1 && strstr(line, "not found"), "probe: %s", line);
	rc = mps_start(&o, err, sizeof err);
	CHECKF(rc == 1 && !o.active && strstr(err, "not found"), "rc %d: %s", rc, err);
	CHECK(!strncmp(mps_describe(&o), "not found", 9) && count_folders(tmp) == 0);
	mps_stop(&o);
	CHECK(env_is(PIPE_VAR, nowhere));
	setenv("PATH", path, 1);
	unsetenv("PKB_MPS");

	/* ---- a daemon that fails ------------------------------------------- */
	/* never makes its control pipe: -1 within the bound, its process
	 * killed (the fake notes its pid in PKB_FAKE_MPS_PIDS), nothing left */
	setenv("PKB_FAKE_MPS_MODE", "nopipe", 1);
	setenv("PKB_FAKE_MPS_PIDS", pids, 1);
	struct mps f = { .wait_s = 1 };
	t0 = now_s();
	rc = mps_start(&f, err, sizeof err);
	double took = since(t0);
	CHECKF(rc == -1 && strstr(err, "no control pipe"), "rc %d: %s", rc, err);
	CHECKF(took >= 0.9 && took < 2.5, "%.2f s", took);
	pid_t lost = pid_in(tmp, "fake-pids");
	CHECK(lost > 0 && gone_soon(lost));
	CHECK(!f.active && count_folders(tmp) == 0 && env_is(PIPE_VAR, nowhere));
	CHECK(!strncmp(mps_describe(&f), "failed: ", 8) && strstr(mps_describe(&f), "no control pipe"));
	mps_stop(&f);   /* after a failed start */
	CHECK(!f.active && env_is(PIPE_VAR, nowhere));
	unsetenv("PKB_FAKE_MPS_PIDS");

	/* -d fails: its status and its last line */
	setenv("PKB_FAKE_MPS_MODE", "fail", 1);
	rc = mps_start(&f, err, sizeof err);
	CHECKF(rc == -1 && strstr(err, "status 1") && strstr(err, "cannot start the daemon"),
	       "rc %d: %s", rc, err);
	CHECK(count_folders(tmp) == 0);
	/* -d never returns: killed at the bound */
	setenv("PKB_FAKE_MPS_MODE", "hang", 1);
	t0 = now_s();
	rc = mps_start(&f, err, sizeof err);
	took = since(t0);
	CHECKF(rc == -1 && strstr(err, "did not return"), "rc %d: %s", rc, err);
	CHECKF(took >= 0.9 && took < 2.5, "%.2f s", took);
	CHECK(count_folders(tmp) == 0);
	unsetenv("PKB_FAKE_MPS_MODE");

	/* ---- stops that must not hang --------------------------------------- */
	/* the daemon died first: stop does not ask it (the client would hang
	 * here) and still cleans up */
	struct mps d = { .wait_s = 3 };
	rc = mps_start(&d, err, sizeof err);
	CHECKF(rc == 0 && d.ours, "rc %d: %s", rc, err);
	snprintf(dir, sizeof dir, "%s", d.dir);
	daemon = pid_in(d.pipe_dir, "nvidia-cuda-mps-control.pid");
	CHECK(daemon > 0 && kill(daemon, SIGKILL) == 0 && gone_soon(daemon));
	setenv("PKB_FAKE_MPS_MODE", "deafquit", 1);
	t0 = now_s();
	mps_stop(&d);
	CHECKF(since(t0) < 1, "stop took %.2f s", since(t0));
	CHECK(!exists(dir) && env_is(PIPE_VAR, nowhere));
	/* a daemon deaf to quit: killed after the bound */
	unsetenv("PKB_FAKE_MPS_MODE");
	d.wait_s = 0.5;
	rc = mps_start(&d, err, sizeof err);
	CHECKF(rc == 0 && d.ours, "rc %d: %s", rc, err);
	snprintf(dir, sizeof dir, "%s", d.dir);
	daemon = pid_in(d.pipe_dir, "nvidia-cuda-mps-control.pid");
	setenv("PKB_FAKE_MPS_MODE", "deafquit", 1);
	t0 = now_s();
	mps_stop(&d);
	took = since(t0);
	CHECKF(took >= 0.4 && took < 3, "stop took %.2f s", took);
	CHECK(daemon > 0 && gone_soon(daemon) && !exists(dir));
	unsetenv("PKB_FAKE_MPS_MODE");

	/* ---- a killed pkb's folders ----------------------------------------- */
	/* stale: a live daemon whose owner is gone (pkb killed): stopped, removed */
	struct mps k = { .wait_s = 2 };
	rc = mps_start(&k, err, sizeof err);
	CHECKF(rc == 0 && k.ours, "rc %d: %s", rc, err);
	char stale[512];
	snprintf(stale, sizeof stale, "%s", k.dir);
	pid_t stale_daemon = pid_in(k.pipe_dir, "nvidia-cuda-mps-control.pid");
	char *owner = xstrfmt("%s/owner", stale);
	dp = xstrfmt("%d\n", (int)dead_pid());
	write_str(owner, dp);
	free(owner);
	setenv(PIPE_VAR, nowhere, 1);   /* as if this process never had it */
	unsetenv(LOG_VAR);
	/* stale too, no daemon left: removed */
	char *empty = xstrfmt("%s/pkb-mps-AAAAAA", tmp);
	mkdir(empty, 0700);
	owner = xstrfmt("%s/owner", empty);
	write_str(owner, dp);
	free(owner);
	/* stale, but its pid file names a process that is not its daemon (the
	 * number reused): the folder goes, the process is not signalled */
	char *reused = xstrfmt("%s/pkb-mps-BBBBBB", tmp);
	char *rpipe = xstrfmt("%s/pipe", reused);
	mkdir(reused, 0700);
	mkdir(rpipe, 0700);
	owner = xstrfmt("%s/owner", reused);
	write_str(owner, dp);
	free(owner);
	pid_t bystander = fork();
	if (bystander == 0) {
		execlp("sleep", "sleep", "30", (char *)NULL);
		_exit(127);
	}
	char *bp = xstrfmt("%s/nvidia-cuda-mps-control.pid", rpipe), *bs = xstrfmt("%d\n", (int)bystander);
	write_str(bp, bs);
	free(bp);
	free(bs);
	/* live owner (another pkb), and a name not ours: both stay */
	char *live = xstrfmt("%s/pkb-mps-CCCCCC", tmp), *odd = xstrfmt("%s/pkb-mps-DD", tmp);
	mkdir(live, 0700);
	mkdir(odd, 0700);
	owner = xstrfmt("%s/owner", live);
	bs = xstrfmt("%d\n", (int)getpid());
	write_str(owner, bs);
	free(owner);
	free(bs);
	owner = xstrfmt("%s/owner", odd);
	write_str(owner, dp);
	free(owner);
	free(dp);

	struct mps c = { .wait_s = 2 };
	rc = mps_start(&c, err, sizeof err);
	CHECKF(rc == 0 && c.ours, "rc %d: %s", rc, err);
	CHECK(!exists(stale) && gone_soon(stale_daemon));
	CHECK(!exists(empty) && !exists(reused));
	CHECK(!is_gone(bystander));
	CHECK(exists(live) && exists(odd));
	mps_stop(&c);
	CHECK(count_folders(tmp) == 2 && env_is(PIPE_VAR, nowhere));
	kill(bystander, SIGKILL);
	waitpid(bystander, NULL, 0);

	/* under a subreaper (pkb sweep's lanes) the daemon becomes our child
	 * and stays a zombie until reaped: gone for stop, which must not wait
	 * for it */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	struct mps z = { .wait_s = 2 };
	rc = mps_start(&z, err, sizeof err);
	CHECKF(rc == 0 && z.ours, "rc %d: %s", rc, err);
	daemon = pid_in(z.pipe_dir, "nvidia-cuda-mps-control.pid");
	t0 = now_s();
	mps_stop(&z);
	CHECKF(since(t0) < 1.5, "stop took %.2f s", since(t0));
	CHECK(daemon > 0 && gone_soon(daemon) && count_folders(tmp) == 2);
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;

	free(rpipe);
	free(reused);
	free(empty);
	free(live);
	free(odd);
	free(uc);
	free(up);
	free(user);
	free(prefix);
	free(nowhere);
	free(pids);
	free(path);
	rm_rf(tmp);
	return t_done("test_mps");
}

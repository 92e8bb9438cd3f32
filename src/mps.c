/*
 * mps.c -- see mps.h and docs/MPS.md. The daemon is driven only through
 * nvidia-cuda-mps-control, as NVIDIA's MPS docs do: `-d` starts it (it
 * forks itself into the background and exits), `quit` on the control
 * program's stdin stops it. Its end is found by its pipe folder: the
 * `control` socket it listens on there and the nvidia-cuda-mps-control.pid
 * file it writes there. Seen on 2x H200, CUDA 13.0 (docs/MPS.md): the
 * daemon calls setsid (our kill of the -d process group misses it), removes
 * its pid file at `quit` but leaves `control` behind, and a `quit` with no
 * daemon says "Cannot find MPS control daemon process" at once. So a
 * daemon answers when a connect() to `control` succeeds, not when the file
 * exists.
 *
 * pkb's private daemon lives in one folder, $TMPDIR/pkb-mps-XXXXXX (mode
 * 0700): pipe/ (CUDA_MPS_PIPE_DIRECTORY), log/ (CUDA_MPS_LOG_DIRECTORY,
 * with pkb's own logs of the control program) and `owner`, the pid of the
 * pkb that made it. A pkb killed before mps_stop leaves the daemon and the
 * folder; the next mps_start that finds the owner gone stops that daemon
 * and removes the folder (clean_stale).
 *
 * A pid is only signalled when its process is our daemon: its environment
 * names our private pipe folder, which no other process can (the folder
 * is new and private), so a pid the kernel reused is never killed.
 */
#define _GNU_SOURCE
#include "mps.h"
#include "sandbox.h"   /* defines: sandbox_env_build */
#include "util.h"   /* defines: xstrfmt, strvec, rm_rf, now_ns, run_logged_child, write_file_atomic */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

#define MPS_BIN          "nvidia-cuda-mps-control"
#define MPS_PID_FILE     "nvidia-cuda-mps-control.pid"
#define MPS_DEFAULT_PIPE "/tmp/nvidia-mps"   /* the daemon's own default */
/* a unix socket's path is at most 107 bytes and the daemon and its server
 * put theirs in the pipe folder: keep the folder short (else /tmp) */
#define MPS_PIPE_MAX 64
/* the server's L2 set-aside for persisting accesses, in percent */
#define MPS_L2_PERSIST_VAR "CUDA_DEVICE_DEFAULT_PERSISTING_L2_CACHE_PERCENTAGE_LIMIT"

/* what mps_start sets and mps_stop puts back, in struct mps's saved[] order */
enum { V_PIPE, V_LOG, V_VISIBLE };
static const char *const mps_vars[3] = {
	[V_PIPE] = "CUDA_MPS_PIPE_DIRECTORY",
	[V_LOG] = "CUDA_MPS_LOG_DIRECTORY",
	[V_VISIBLE] = "CUDA_VISIBLE_DEVICES",
};

/* ---- small helpers --------------------------------------------------------- */

static void nap_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	nanosleep(&ts, NULL);
}

static void set_desc(struct mps *m, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void set_desc(struct mps *m, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(m->desc, sizeof m->desc, fmt, ap);
	va_end(ap);
}

/* The pid a small regular file holds ("1234\n"); 0 when it is absent, not
 * a regular file (never opened for reading: a FIFO would block) or not a
 * pid. */
static pid_t read_pid(const char *dir, const char *name)
{
	char *p = xstrfmt("%s/%s", dir, name);
	int fd = open(p, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	free(p);
	if (fd < 0)
		return 0;
	char buf[32] = { 0 };
	struct stat st;
	ssize_t got = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) ? read(fd, buf, sizeof buf - 1) : -1;
	close(fd);
	if (got <= 0)
		return 0;
	buf[strcspn(buf, " \n")] = 0;
	long long v;
	return parse_int_in(buf, 1, INT_MAX, &v) == 0 ? (pid_t)v : 0;
}

enum pid_state { PID_GONE, PID_OURS, PID_OTHER };

/* What pid is now: gone (no such process, or a zombie nobody reaped yet:
 * a subreaper's orphan), the daemon of pipe_dir (its environment names
 * that folder), or another process (the number reused; or unreadable). */
static enum pid_state pid_state(pid_t pid, const char *pipe_dir)
{
	if (pid <= 0 || (kill(pid, 0) < 0 && errno == ESRCH))
		return PID_GONE;
	char *p = xstrfmt("/proc/%d/stat", (int)pid);
	char *s = read_file(p, NULL);
	free(p);
	if (!s)
		return PID_GONE;   /* it went between the two looks */
	char *rp = strrchr(s, ')');
	int dead = rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X');
	free(s);
	if (dead)
		return PID_GONE;
	p = xstrfmt("/proc/%d/environ", (int)pid);
	size_t len = 0;
	s = read_file(p, &len);
	free(p);
	if (!s)
		return PID_OTHER;
	char *want = xstrfmt("%s=%s", mps_vars[V_PIPE], pipe_dir);
	enum pid_state r = PID_OTHER;
	for (size_t i = 0; i < len && r == PID_OTHER; i += strlen(s + i) + 1)
		if (!strcmp(s + i, want))
			r = PID_OURS;
	free(want);
	free(s);
	return r;
}

/* Something listens on pipe_dir/control. A unix socket refuses a connect
 * (ECONNREFUSED) once its listener is gone, and the file stays; a connect
 * is all a daemon sees (its log: "Accepting connection"). A named pipe
 * (the control of daemons long ago) cannot be asked without disturbing
 * its reader: it counts as there. */
static int control_answers(const char *pipe_dir)
{
	char *p = xstrfmt("%s/control", pipe_dir);
	struct stat st;
	int r = 0;
	if (lstat(p, &st) == 0 && S_ISFIFO(st.st_mode)) {
		r = 1;
	} else if (lstat(p, &st) == 0 && S_ISSOCK(st.st_mode)) {
		struct sockaddr_un a = { .sun_family = AF_UNIX };
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
		if (fd >= 0 && strlen(p) < sizeof a.sun_path) {
			memcpy(a.sun_path, p, strlen(p) + 1);
			/* refused: nobody listens; another error (a full backlog,
			 * another socket type): somebody does */
			r = connect(fd, (struct sockaddr *)&a, sizeof a) == 0 || errno != ECONNREFUSED;
		}
		if (fd >= 0)
			close(fd);
	}
	free(p);
	return r;
}

/* a daemon answers at pipe_dir: its `control` takes connections and its
 * pid file, when there is one, names a live process (of any user: root's
 * daemon) */
static int daemon_answers(const char *pipe_dir)
{
	if (!control_answers(pipe_dir))
		return 0;
	pid_t pid = read_pid(pipe_dir, MPS_PID_FILE);
	return !pid || kill(pid, 0) == 0 || errno == EPERM;
}

/* the first executable `name` on PATH into out (""; -1 when none) */
static int find_program(const char *name, char *out, size_t n)
{
	const char *path = getenv("PATH");
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (const char *p = path;;) {
		const char *e = strchrnul(p, ':');
		int len = (int)(e - p);
		int w = snprintf(out, n, "%.*s/%s", len ? len : 1, len ? p : ".", name);
		struct stat st;
		if (w > 0 && (size_t)w < n && stat(out, &st) == 0 && S_ISREG(st.st_mode) &&
		    access(out, X_OK) == 0)
			return 0;
		if (!*e)
			break;
		p = e + 1;
	}
	out[0] = 0;
	return -1;
}

/* where the private folders go: $TMPDIR when absolute and short enough
 * for the daemon's sockets, else /tmp; without trailing slashes, so that
 * a folder's name is spelt the same by every pkb (pid_state compares it) */
static void tmp_base(char out[MPS_PIPE_MAX])
{
	const char *t = getenv("TMPDIR");
	size_t len = t ? strlen(t) : 0;
	while (len > 1 && t[len - 1] == '/')
		len--;
	if (!t || t[0] != '/' || len + strlen("/pkb-mps-XXXXXX/pipe") >= MPS_PIPE_MAX)
		t = "/tmp", len = 4;
	snprintf(out, MPS_PIPE_MAX, "%.*s", (int)len, t);
}

/* ---- the control program --------------------------------------------------- */

static int stdin_from(void *arg, char *why, size_t n)
{
	if (dup2(*(int *)arg, 0) < 0) {
		snprintf(why, n, "cannot set stdin: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Run the control program against folder dir (pipe/ and log/ of pkb's
 * layout) with argument arg (NULL: none) and stdin from fd `in`; its
 * output into log/pkb-<what>.log. run_logged_child's status. */
static int run_control(const char *bin, const char *arg, const char *dir, int in,
		       const char *what, double wait_s)
{
	/* the ranks' allowlist (sandbox.h), not the parent's environment: the
	 * daemon's /proc/<pid>/environ is readable by the solution processes
	 * that keep all of /proc (NCCL's), and the parent's holds API keys */
	struct strvec env = STRVEC_INIT;
	/* set below, whatever the parent has: the folders, and the L2
	 * set-aside for persisting accesses, which under MPS is fixed when the
	 * server starts and no client can change (CUDA Programming Guide, L2
	 * cache control): 0, so that no solution's lines outlive the cold
	 * timing's flush (issue 44, item 7) */
	static const char *const pinned[] = { "CUDA_MPS_PIPE_DIRECTORY=",
					      "CUDA_MPS_LOG_DIRECTORY=", MPS_L2_PERSIST_VAR "=" };
	char **allowed = sandbox_env_build(environ);
	for (char **e = allowed; *e; e++) {
		int keep = 1;
		for (size_t i = 0; i < sizeof pinned / sizeof *pinned; i++)
			keep &= strncmp(*e, pinned[i], strlen(pinned[i])) != 0;
		if (keep)
			strvec_push(&env, *e);
	}
	sandbox_env_free(allowed);
	strvec_pushf(&env, "%s=%s/pipe", mps_vars[V_PIPE], dir);
	strvec_pushf(&env, "%s=%s/log", mps_vars[V_LOG], dir);
	strvec_push(&env, MPS_L2_PERSIST_VAR "=0");
	char *log = xstrfmt("%s/log/pkb-%s.log", dir, what);
	char *argv[] = { (char *)bin, (char *)arg, NULL };
	struct run_child c = { .envp = env.v, .setup = stdin_from, .arg = &in };
	int rc = run_logged_child(argv, log, wait_s, &c);
	free(log);
	strvec_free(&env);
	return rc;
}

/* Stop the daemon of pkb's folder dir, each wait at most wait_s: `quit`
 * while its control answers and it is not known to be gone, then a wait
 * until it is; one still there is killed. Returns at once for a daemon
 * already dead. */
static void daemon_stop(const char *bin, const char *dir, double wait_s)
{
	char *pipe_dir = xstrfmt("%s/pipe", dir);
	pid_t pid = read_pid(pipe_dir, MPS_PID_FILE);
	/* no pid file (an older daemon, or one that never wrote it): its
	 * control is all there is to go by */
	int live = pid ? pid_state(pid, pipe_dir) == PID_OURS : control_answers(pipe_dir);
	/* when its control does not answer, quit cannot reach it: no wait */
	int asked = 0, fd[2];
	if (live && *bin && control_answers(pipe_dir) && pipe2(fd, O_CLOEXEC) == 0) {
		static const char quit[] = "quit\n";
		asked = write(fd[1], quit, sizeof quit - 1) == (ssize_t)(sizeof quit - 1);
		close(fd[1]);
		if (asked)
			run_control(bin, NULL, dir, fd[0], "quit", wait_s);
		close(fd[0]);
	}
	uint64_t until = now_ns() + (uint64_t)(wait_s * 1e9);
	while (live && asked && now_ns() < until) {
		live = pid ? pid_state(pid, pipe_dir) == PID_OURS : control_answers(pipe_dir);
		if (live)
			nap_ms(10);
	}
	if (pid && pid_state(pid, pipe_dir) == PID_OURS) {
		kill(pid, SIGKILL);
		for (int i = 0; i < 100 && pid_state(pid, pipe_dir) == PID_OURS; i++)
			nap_ms(10);
	}
	free(pipe_dir);
}

/* Folders of private daemons whose pkb died before mps_stop: ours (our
 * uid, our name) with an `owner` whose process is gone. Their daemon is
 * stopped and the folder removed. A folder whose owner lives (another pkb
 * now), or that names none yet (one being made), is left alone. */
static void clean_stale(const char *tmp, const char *bin, double wait_s)
{
	DIR *d = opendir(tmp);
	if (!d)
		return;
	struct dirent *e;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "pkb-mps-", 8) || strlen(e->d_name) != 14)
			continue;
		char *dir = xstrfmt("%s/%s", tmp, e->d_name);
		struct stat st;
		pid_t owner = 0;
		if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == getuid())
			owner = read_pid(dir, "owner");
		if (owner > 0 && owner != getpid() && kill(owner, 0) < 0 && errno == ESRCH) {
			daemon_stop(bin, dir, wait_s);
			rm_rf(dir);
		}
		free(dir);
	}
	closedir(d);
}

/* ---- start and stop -------------------------------------------------------- */

/* the variables as they are, for mps_stop to put back */
static void save_vars(struct mps *m)
{
	for (int i = 0; i < 3; i++) {
		const char *v = getenv(mps_vars[i]);
		m->had[i] = v != NULL;
		snprintf(m->saved[i], sizeof m->saved[i], "%s", v ? v : "");
	}
}

static void restore_vars(const struct mps *m)
{
	for (int i = 0; i < 3; i++) {
		if (m->had[i])
			setenv(mps_vars[i], m->saved[i], 1);
		else
			unsetenv(mps_vars[i]);
	}
}

/* CUDA_VISIBLE_DEVICES of K devices becomes "0,..,K-1": the daemon was
 * started with the old list and numbers those devices 0..K-1 for its
 * clients; a client's own list counts among them (NVIDIA's MPS docs,
 * CUDA_VISIBLE_DEVICES). Unset or empty stays. */
static void renumber_visible(void)
{
	const char *vis = getenv(mps_vars[V_VISIBLE]);
	if (!vis || !*vis)
		return;
	int k = 1;
	for (const char *c = vis; *c; c++)
		k += *c == ',';
	struct strbuf b = STRBUF_INIT;
	for (int i = 0; i < k; i++)
		strbuf_addf(&b, "%s%d", i ? "," : "", i);
	setenv(mps_vars[V_VISIBLE], b.s, 1);
	strbuf_free(&b);
}

/* the private folder: dir with owner, pipe/ and log/ (the owner first, so
 * that clean_stale never takes a folder being made for a dead one) */
static int make_folder(struct mps *m, char *err, size_t n)
{
	char tmp[MPS_PIPE_MAX];
	tmp_base(tmp);
	snprintf(m->dir, sizeof m->dir, "%s/pkb-mps-XXXXXX", tmp);
	if (!mkdtemp(m->dir)) {
		snprintf(err, n, "cannot make a folder '%s': %s", m->dir, strerror(errno));
		m->dir[0] = 0;
		return -1;
	}
	char *owner = xstrfmt("%s/owner", m->dir), *pid = xstrfmt("%d\n", (int)getpid());
	int bad = write_file_atomic(owner, pid, strlen(pid));
	free(owner);
	free(pid);
	/* m->dir is shorter than MPS_PIPE_MAX: no truncation */
	snprintf(m->pipe_dir, sizeof m->pipe_dir, "%.*s/pipe", MPS_PIPE_MAX, m->dir);
	snprintf(m->log_dir, sizeof m->log_dir, "%.*s/log", MPS_PIPE_MAX, m->dir);
	if (bad || mkdir(m->pipe_dir, 0700) < 0 || mkdir(m->log_dir, 0700) < 0) {
		snprintf(err, n, "cannot fill the folder '%s': %s", m->dir, strerror(errno));
		return -1;
	}
	return 0;
}

/* the last line of pkb's log of the control program, for a message */
static char *last_log_line(const struct mps *m, const char *what)
{
	char *p = xstrfmt("%s/pkb-%s.log", m->log_dir, what);
	char *s = read_file(p, NULL);
	free(p);
	if (!s)
		return xstrdup("");
	size_t len = strlen(s);
	while (len && (s[len - 1] == '\n' || s[len - 1] == '\r'))
		s[--len] = 0;
	char *nl = strrchr(s, '\n');
	char *line = xstrfmt("%s%s", *s ? ": " : "", nl ? nl + 1 : s);
	free(s);
	return line;
}

int mps_probe(char *line, size_t n)
{
	const char *pipe_env = getenv(mps_vars[V_PIPE]);
	const char *at = pipe_env && *pipe_env ? pipe_env : MPS_DEFAULT_PIPE;
	if (daemon_answers(at)) {
		snprintf(line, n, "a daemon answers, pipes in %s (timed launches use it)", at);
		return 0;
	}
	const char *mode = getenv("PKB_MPS");
	if (mode && !strcmp(mode, "off")) {
		snprintf(line, n, "off (PKB_MPS=off): --measure-perf cannot run");
		return 1;
	}
	char bin[512];
	if (find_program("nvidia-cuda-mps-control", bin, sizeof bin) < 0) {
		snprintf(line, n, "nvidia-cuda-mps-control not found on PATH: --measure-perf "
			 "cannot run (docs/MPS.md)");
		return 1;
	}
	snprintf(line, n, "%s (a private daemon for each timed launch)", bin);
	return 0;
}

int mps_start(struct mps *m, char *err, size_t n)
{
	if (m->active)
		return 0;
	double wait_s = m->wait_s > 0 ? m->wait_s : 5;
	memset(m, 0, sizeof *m);
	m->wait_s = wait_s;
	if (n)
		err[0] = 0;

	/* the user's daemon, where this process's children would find it */
	const char *pipe_env = getenv(mps_vars[V_PIPE]);
	const char *at = pipe_env && *pipe_env ? pipe_env : MPS_DEFAULT_PIPE;
	if (daemon_answers(at)) {
		const char *log = getenv(mps_vars[V_LOG]);
		snprintf(m->pipe_dir, sizeof m->pipe_dir, "%s", at);
		snprintf(m->log_dir, sizeof m->log_dir, "%s", log ? log : "");
		m->active = 1;
		set_desc(m, "running: a daemon pkb did not start, pipes in %s", at);
		return 0;
	}
	const char *mode = getenv("PKB_MPS");
	if (mode && !strcmp(mode, "off")) {
		snprintf(err, n, "PKB_MPS=off");
		set_desc(m, "off: PKB_MPS=off");
		return 1;
	}
	if (mode && *mode && strcmp(mode, "on")) {
		snprintf(err, n, "PKB_MPS takes 'on' or 'off', not '%s'", mode);
		set_desc(m, "failed: PKB_MPS takes 'on' or 'off', not '%s'", mode);
		return -1;
	}
	if (find_program(MPS_BIN, m->bin, sizeof m->bin) < 0) {
		snprintf(err, n, MPS_BIN " not found on PATH");
		set_desc(m, "not found: no " MPS_BIN " on PATH");
		return 1;
	}
	char tmp[MPS_PIPE_MAX];
	tmp_base(tmp);
	clean_stale(tmp, m->bin, wait_s);

	uint64_t until = now_ns() + (uint64_t)(wait_s * 1e9);
	if (make_folder(m, err, n) < 0)
		goto fail;
	int in = open("/dev/null", O_RDONLY | O_CLOEXEC);
	int rc = run_control(m->bin, "-d", m->dir, in, "start", wait_s);
	if (in >= 0)
		close(in);
	if (rc != 0) {
		char *line = last_log_line(m, "start");
		if (rc == -2)
			snprintf(err, n, "%s -d did not return in %g s%s", m->bin, wait_s, line);
		else if (rc < 0)
			snprintf(err, n, "cannot run %s -d", m->bin);
		else
			snprintf(err, n, "%s -d failed with status %d%s", m->bin, rc, line);
		free(line);
		goto fail;
	}
	/* -d forks the daemon and returns; the daemon listens on control */
	while (!control_answers(m->pipe_dir) && now_ns() < until)
		nap_ms(5);
	if (!control_answers(m->pipe_dir)) {
		snprintf(err, n, "%s -d made no control pipe in %s within %g s", m->bin,
			 m->pipe_dir, wait_s);
		goto fail;
	}
	save_vars(m);
	setenv(mps_vars[V_PIPE], m->pipe_dir, 1);
	setenv(mps_vars[V_LOG], m->log_dir, 1);
	renumber_visible();
	m->ours = m->active = 1;
	set_desc(m, "running: pkb's own daemon, pipes in %s", m->pipe_dir);
	return 0;

fail:
	if (m->dir[0]) {
		daemon_stop(m->bin, m->dir, wait_s);
		rm_rf(m->dir);
	}
	m->dir[0] = m->pipe_dir[0] = m->log_dir[0] = 0;
	set_desc(m, "failed: %s", n ? err : "");
	return -1;
}

void mps_stop(struct mps *m)
{
	if (m->active && m->ours) {
		daemon_stop(m->bin, m->dir, m->wait_s > 0 ? m->wait_s : 5);
		rm_rf(m->dir);
		restore_vars(m);
		set_desc(m, "stopped: pkb's own daemon, pipes were in %s", m->pipe_dir);
		m->dir[0] = m->pipe_dir[0] = m->log_dir[0] = 0;
	}
	m->active = m->ours = 0;
}

const char *mps_describe(const struct mps *m)
{
	return m->desc[0] ? m->desc : "not started";
}

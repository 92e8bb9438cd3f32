/*
 * rundir.c -- see rundir.h. Moved out of cmd_generate.c when pkb agent
 * came to write the same kind of directory.
 */
#define _GNU_SOURCE   /* gmtime_r, fsync */
#include "rundir.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

static void fsync_dir_of(const char *path)
{
	char *dir = xstrdup(path), *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY);
	if (dfd >= 0) {
		fsync(dfd);
		close(dfd);
	}
	free(dir);
}

int rundir_write(const char *path, const void *buf, size_t len)
{
	char *tmp = xstrfmt("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644), rc = -1;
	if (fd < 0)
		goto out;
	if (write_all(fd, buf, len) < 0) {
		close(fd);
		goto out;
	}
	if (fsync(fd) < 0 || close(fd) < 0 || rename(tmp, path) < 0)
		goto out;
	fsync_dir_of(path);
	rc = 0;
out:
	if (rc) {
		int e = errno;
		unlink(tmp);
		errno = e;
	}
	free(tmp);
	return rc;
}

int rundir_write_json(const char *path, json_t *v)
{
	char *txt = json_dumps(v, JSON_INDENT(1) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10));
	int rc = txt ? rundir_write(path, txt, strlen(txt)) : -1;
	free(txt);
	if (rc)
		error("cannot write '%s': %s", path, strerror(errno));
	return rc;
}

int rundir_append_line(const char *path, const char *line)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return error("cannot open '%s': %s", path, strerror(errno));
	char *l = xstrfmt("%s\n", line);
	int rc = write_all(fd, l, strlen(l)) < 0 || fsync(fd) < 0 ? -1 : 0;
	free(l);
	if (close(fd) < 0)
		rc = -1;
	if (rc)
		return error("cannot append to '%s': %s", path, strerror(errno));
	fsync_dir_of(path);
	return 0;
}

json_t *rundir_read_jsonl(const char *path)
{
	json_t *a = json_array();
	size_t len;
	char *txt = read_file(path, &len);
	if (!txt)
		return a;
	for (char *l = txt, *next; *l; l = next) {
		char *nl = strchr(l, '\n');
		next = nl ? nl + 1 : l + strlen(l);
		if (nl)
			*nl = 0;
		if (!*l)
			continue;
		json_t *v = json_loads(l, 0, NULL);
		/* a kill inside write() tears only the last line */
		if (!v && !*next && !nl)
			break;
		if (!json_is_object(v)) {
			json_decref(v);
			json_decref(a);
			free(txt);
			error("'%s': a line is not a JSON object: %.60s", path, l);
			return NULL;
		}
		json_array_append_new(a, v);
	}
	free(txt);
	return a;
}

int rundir_trim_torn(const char *path)
{
	size_t len;
	char *txt = read_file(path, &len);
	if (!txt || !len || txt[len - 1] == '\n') {
		free(txt);
		return 0;
	}
	size_t keep = len;
	while (keep && txt[keep - 1] != '\n')
		keep--;
	free(txt);
	if (truncate(path, (off_t)keep) < 0)
		return error("cannot cut '%s': %s", path, strerror(errno));
	return 1;
}

void rundir_utc_now(char *buf, size_t n)
{
	time_t t = time(NULL);
	struct tm tm;
	strftime(buf, n, "%Y-%m-%dT%H:%M:%SZ", gmtime_r(&t, &tm));
}

int rundir_lock(const char *dir)
{
	char *path = xstrfmt("%s/.lock", dir);
	int fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	free(path);
	if (fd < 0 || flock(fd, LOCK_EX | LOCK_NB) < 0) {
		if (fd >= 0)
			close(fd);
		return -1;
	}
	return fd;
}

void rundir_remove_stale(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (!strstr(e->d_name, ".tmp."))
			continue;
		char *p = xstrfmt("%s/%s", dir, e->d_name);
		unlink(p);
		free(p);
	}
	if (d)
		closedir(d);
}

/* name the first argument that differs, for the message */
static void first_diff(json_t *old, json_t *new, char *buf, size_t n)
{
	const char *key;
	json_t *v;
	snprintf(buf, n, "?");
	json_object_foreach(new, key, v) {
		json_t *o = json_object_get(old, key);
		if (!o || !json_equal(o, v)) {
			char *a = o ? json_dumps(o, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10))
				    : xstrdup("none");
			char *b = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT | JSON_REAL_PRECISION(10));
			snprintf(buf, n, "%s: %.60s in the run, %.60s now", key, a, b);
			free(a);
			free(b);
			return;
		}
	}
}

int rundir_open(const char *dir, json_t *args, json_t *extra, int force)
{
	char *path = xstrfmt("%s/run.json", dir);
	char date[32];
	rundir_utc_now(date, sizeof date);
	json_t *old = NULL;
	if (access(path, F_OK) == 0) {
		json_error_t je;
		old = json_load_file(path, 0, &je);
		if (!old) {
			error("'%s' is not JSON: %s", path, je.text);
			free(path);
			return -1;
		}
		json_t *oa = json_object_get(old, "args");
		if (!json_equal(oa, args) && !force) {
			char d[256];
			first_diff(oa, args, d, sizeof d);
			error("the run '%s' was started with other arguments (%s)", dir, d);
			hint("give another --run, or --force to go on in this one with these arguments");
			json_decref(old);
			free(path);
			return -1;
		}
	}
	json_t *doc = json_pack("{s:s,s:s,s:s,s:O}", "pkb_version", PKB_VERSION, "created",
				old && json_is_string(json_object_get(old, "created"))
				? json_string_value(json_object_get(old, "created")) : date,
				"updated", date, "args", args);
	if (extra)
		json_object_update(doc, extra);
	json_decref(old);
	int rc = rundir_write_json(path, doc);
	json_decref(doc);
	free(path);
	return rc;
}

char *rundir_store_prompt(const char *dir, const char *sha256, const char *template_sha256,
			  const char *system, const char *user)
{
	char *rel = xstrfmt("prompts/%s.json", sha256);
	char *sub = xstrfmt("%s/prompts", dir), *path = xstrfmt("%s/%s", dir, rel);
	int rc = 0;
	if (access(path, F_OK) != 0) {
		if (mkdir_p(sub) < 0) {
			rc = error("cannot create '%s': %s", sub, strerror(errno));
		} else {
			rundir_remove_stale(sub);
			json_t *o = json_pack("{s:s,s:s,s:s,s:s}", "prompt_sha256", sha256,
					      "template_sha256", template_sha256, "system", system,
					      "user", user);
			rc = rundir_write_json(path, o);
			json_decref(o);
		}
	}
	free(sub);
	free(path);
	if (rc) {
		free(rel);
		return NULL;
	}
	return rel;
}

void rundir_redact(char *s, size_t *len, const char *key)
{
	if (!key || !*key || !s)
		return;
	size_t kl = strlen(key);
	const char *mask = "[redacted]";
	size_t ml = strlen(mask);
	for (char *p = strstr(s, key); p; p = strstr(p, key)) {
		if (kl >= ml) {
			memcpy(p, mask, ml);
			memmove(p + ml, p + kl, strlen(p + kl) + 1);
			*len -= kl - ml;
			p += ml;
		} else {
			memset(p, '*', kl);
			p += kl;
		}
	}
}

/*
 * results.c -- see results.h.
 */
#define _GNU_SOURCE
#include "results.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

char **results_files(const char *dir, int *n)
{
	struct stat st;
	char **f = xcalloc(2, sizeof(*f));
	*n = 0;
	if (stat(dir, &st) == 0 && !S_ISDIR(st.st_mode)) {
		f[(*n)++] = xstrdup(dir);
		return f;
	}
	f[(*n)++] = xstrfmt("%s/results.jsonl", dir);
	char *sd = xstrfmt("%s/" RESULTS_SHARD_DIR, dir);
	DIR *d = opendir(sd);
	if (d) {
		struct dirent *e;
		while ((e = readdir(d))) {
			size_t l = strlen(e->d_name);
			if (l < 7 || strcmp(e->d_name + l - 6, ".jsonl"))
				continue;
			char *path = xstrfmt("%s/%s", sd, e->d_name);
			if (stat(path, &st) != 0 || !S_ISREG(st.st_mode)) {
				free(path);   /* not a file a task wrote */
				continue;
			}
			f = xrealloc(f, (*n + 2) * sizeof(*f));
			f[(*n)++] = path;
		}
		closedir(d);
		qsort(f + 1, *n - 1, sizeof(*f), cmp_str);
	}
	free(sd);
	f[*n] = NULL;
	return f;
}

void results_files_free(char **files)
{
	for (char **p = files; p && *p; p++)
		free(*p);
	free(files);
}

int results_read(const char *path, json_t *recs, size_t *good, size_t *len, int *bad)
{
	size_t n = 0, g = 0;
	int b = 0, line = 0;
	char *buf = read_file(path, &n);
	if (good)
		*good = 0;
	if (len)
		*len = 0;
	if (bad)
		*bad = 0;
	if (!buf)
		return errno == ENOENT ? 0 : -1;
	for (char *p = buf, *nl; p < buf + n; p = nl + 1) {
		if (!(nl = memchr(p, '\n', buf + n - p)))
			break;   /* a torn last line */
		line++;
		json_t *r = json_loadb(p, nl - p, 0, NULL);
		if (r && json_is_string(json_object_get(r, "key"))) {
			json_array_append_new(recs, r);
			g = nl + 1 - buf;
			continue;
		}
		json_decref(r);
		/* a bad line that ends the file is a torn write; one before
		 * good records is not (one record is one write) */
		if (nl + 1 < buf + n && !b)
			b = line;
	}
	free(buf);
	if (good)
		*good = g;
	if (len)
		*len = n;
	if (bad)
		*bad = b;
	return 0;
}

int results_append(int fd, json_t *rec)
{
	char *line = json_dumps(rec, JSON_COMPACT);
	if (!line)
		return error("cannot serialise a record");
	size_t n = strlen(line);
	line = xrealloc(line, n + 2);
	line[n] = '\n';
	line[n + 1] = 0;
	ssize_t w = write(fd, line, n + 1);   /* one write: a kill tears at most this line */
	free(line);
	if (w != (ssize_t)(n + 1) || fsync(fd) != 0)
		return error("cannot write a record: %s", strerror(errno));
	return 0;
}

/*
 * refcache.c -- the reference's trial outputs kept across evaluations
 * (refcache.h says what and why). An entry's file:
 *
 *   the identity, as text (refcache_id_text)
 *   "outputs N\n", then each output's byte count, one per line
 *   the outputs' bytes, in order
 *   the SHA-256 of everything above (32 bytes)
 */
#define _GNU_SOURCE   /* O_CLOEXEC */
#include "refcache.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* an entry larger than this is not kept: a sweep's shapes are far below */
#define REFCACHE_MAX_BYTES (1ull << 30)

static char *id_text(const struct refcache_id *id)
{
	return xstrfmt("pkb-refcache 1\nobject %s\npkb %s\nproblem %d\nworld %d\nrank %d\n"
		       "trial %d\ndtype %s\nm %lld\nn %lld\nseed %llu\ngpu %s\nversions %s\n",
		       id->object_sha, id->pkb_sha, id->problem, id->world, id->rank, id->trial,
		       id->dtype, id->m, id->n, (unsigned long long)id->seed, id->gpu, id->versions);
}

/* the identity and the output sizes: the file's head */
static char *head_text(const struct refcache_id *id, int n_out, const size_t *bytes)
{
	struct strbuf b = STRBUF_INIT;
	char *t = id_text(id);
	strbuf_addf(&b, "%soutputs %d\n", t, n_out);
	free(t);
	for (int i = 0; i < n_out; i++)
		strbuf_addf(&b, "%zu\n", bytes[i]);
	return strbuf_take(&b);
}

void refcache_name(const struct refcache_id *id, char out[65])
{
	char *t = id_text(id);
	sha256_hex(t, strlen(t), out);
	free(t);
}

static char *entry_path(const char *dir, const struct refcache_id *id)
{
	char name[65];
	refcache_name(id, name);
	return xstrfmt("%s/%s", dir, name);
}

int refcache_load(const char *dir, const struct refcache_id *id, int n_out,
		  const size_t *bytes, void *const *host)
{
	char *path = entry_path(dir, id), *head = head_text(id, n_out, bytes);
	size_t hl = strlen(head), want = hl + 32;
	for (int i = 0; i < n_out; i++)
		want += bytes[i];
	int hit = 0;
	struct stat st;
	size_t len = 0;
	char *buf = NULL;
	if (stat(path, &st) == 0 && (size_t)st.st_size == want &&
	    (buf = read_file(path, &len)) && len == want && !memcmp(buf, head, hl)) {
		unsigned char sum[32];
		sha256(buf, len - 32, sum);
		if (!memcmp(sum, buf + len - 32, 32)) {
			size_t off = hl;
			for (int i = 0; i < n_out; i++) {
				memcpy(host[i], buf + off, bytes[i]);
				off += bytes[i];
			}
			hit = 1;
		}
	}
	free(buf);
	free(head);
	free(path);
	return hit;
}

/* write all of p[0..len) to fd and into the digest; 0 or -1 */
static int put(int fd, EVP_MD_CTX *md, const void *p, size_t len)
{
	return EVP_DigestUpdate(md, p, len) ? write_all(fd, p, len) : -1;
}

int refcache_store(const char *dir, const struct refcache_id *id, int n_out,
		   const size_t *bytes, const void *const *host, char *err, size_t n)
{
	unsigned long long total = 0;
	for (int i = 0; i < n_out; i++)
		total += bytes[i];
	if (total > REFCACHE_MAX_BYTES) {
		snprintf(err, n, "%llu bytes of outputs: more than an entry keeps", total);
		return -1;
	}
	if (mkdir_p(dir) < 0) {
		snprintf(err, n, "cannot make %s: %s", dir, strerror(errno));
		return -1;
	}
	char *path = entry_path(dir, id), *head = head_text(id, n_out, bytes);
	char *tmp = xstrfmt("%s.tmp.%d", path, (int)getpid());
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	EVP_MD_CTX *md = EVP_MD_CTX_new();
	int bad = fd < 0 || !md || !EVP_DigestInit_ex(md, EVP_sha256(), NULL) ||
		  put(fd, md, head, strlen(head)) < 0;
	for (int i = 0; i < n_out && !bad; i++)
		bad = put(fd, md, host[i], bytes[i]) < 0;
	unsigned char sum[32];
	unsigned int sl = 0;
	if (!bad)
		bad = !EVP_DigestFinal_ex(md, sum, &sl) || sl != 32 || write(fd, sum, 32) != 32;
	int e = errno;
	if (fd >= 0 && close(fd) < 0 && !bad)
		bad = 1, e = errno;
	if (!bad && rename(tmp, path) < 0)
		bad = 1, e = errno;
	if (bad) {
		unlink(tmp);
		snprintf(err, n, "cannot write %s: %s", path, strerror(e));
	}
	EVP_MD_CTX_free(md);
	free(tmp);
	free(head);
	free(path);
	return bad ? -1 : 0;
}

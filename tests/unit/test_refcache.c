/*
 * test_refcache.c -- the reference's outputs kept across evaluations
 * (src/refcache.c): a stored entry reads back bit for bit; every change of
 * identity or of the expected sizes, and every torn, altered or swapped
 * file, reads as a miss.
 */
#define _GNU_SOURCE   /* mkdtemp */
#include "../../src/refcache.h"
#include "../../src/util.h"
#include "t.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static struct refcache_id base_id(void)
{
	struct refcache_id id = { .problem = 1, .world = 4, .rank = 2, .trial = 1, .m = 1024,
				  .n = 1024, .seed = 0x0123456789abcdefull };
	memset(id.object_sha, 'a', 64);
	memset(id.pkb_sha, 'c', 64);
	snprintf(id.dtype, sizeof id.dtype, "bf16");
	snprintf(id.gpu, sizeof id.gpu, "NVIDIA H100 80GB HBM3");
	snprintf(id.versions, sizeof id.versions, "pkb 0.1, CUDA 13000/13000, NCCL 22809");
	return id;
}

/* load into fresh zeroed buffers; 1 on a hit with the bytes equal to src */
static int loads_equal(const char *dir, const struct refcache_id *id, int n_out,
		       const size_t *bytes, void *const *src)
{
	void *got[2];
	for (int i = 0; i < n_out; i++)
		got[i] = calloc(1, bytes[i] + 1);
	int hit = refcache_load(dir, id, n_out, bytes, got);
	int same = hit;
	for (int i = 0; i < n_out && same; i++)
		same = !memcmp(got[i], src[i], bytes[i]);
	for (int i = 0; i < n_out; i++)
		free(got[i]);
	return hit ? (same ? 1 : -1) : 0;
}

int main(void)
{
	char tmpl[] = "/tmp/pkb-refcache-XXXXXX";
	char *tmp = mkdtemp(tmpl);
	CHECK(tmp != NULL);
	char *dir = xstrfmt("%s/ref/deeper", tmp);
	char err[300];

	size_t bytes[2] = { 4096, 37 };
	unsigned char *a = malloc(bytes[0]), *b = malloc(bytes[1]);
	for (size_t i = 0; i < bytes[0]; i++)
		a[i] = (unsigned char)(i * 7 + 3);
	for (size_t i = 0; i < bytes[1]; i++)
		b[i] = (unsigned char)(255 - i);
	void *src[2] = { a, b };
	struct refcache_id id = base_id();

	/* nothing stored: a miss; stored: the same bytes (the folder made) */
	CHECK(loads_equal(dir, &id, 2, bytes, src) == 0);
	CHECKF(refcache_store(dir, &id, 2, bytes, (const void *const *)src, err, sizeof err) == 0,
	       "%s", err);
	CHECK(loads_equal(dir, &id, 2, bytes, src) == 1);

	/* every field of the identity names another entry */
	struct refcache_id o;
#define OTHER(stmt) do { o = base_id(); stmt; CHECKF(loads_equal(dir, &o, 2, bytes, src) == 0, \
				 "%s read as a hit", #stmt); } while (0)
	OTHER(o.object_sha[10] = 'b');
	OTHER(o.pkb_sha[63] = 'd');
	OTHER(o.problem = 2);
	OTHER(o.world = 2);
	OTHER(o.rank = 3);
	OTHER(o.trial = 2);
	OTHER(snprintf(o.dtype, sizeof o.dtype, "fp16"));
	OTHER(o.m = 1025);
	OTHER(o.n = 512);
	OTHER(o.seed ^= 1);
	OTHER(snprintf(o.gpu, sizeof o.gpu, "NVIDIA H200"));
	OTHER(snprintf(o.versions, sizeof o.versions, "pkb 0.2"));

	/* other sizes or another count of outputs: a miss */
	size_t other[2] = { 4096, 36 };
	CHECK(loads_equal(dir, &id, 2, other, src) == 0);
	CHECK(loads_equal(dir, &id, 1, bytes, src) == 0);

	char name[65];
	refcache_name(&id, name);
	CHECK(strlen(name) == 64);
	char *path = xstrfmt("%s/%s", dir, name);
	size_t len;
	char *good = read_file(path, &len);
	CHECK(good && len > bytes[0] + bytes[1] + 32);

	/* one bit of an output flipped: the digest says so */
	good[len - 32 - 5] ^= 1;
	CHECK(write_file_atomic(path, good, len) == 0);
	CHECK(loads_equal(dir, &id, 2, bytes, src) == 0);
	good[len - 32 - 5] ^= 1;
	/* torn: cut short */
	CHECK(write_file_atomic(path, good, len - 1) == 0);
	CHECK(loads_equal(dir, &id, 2, bytes, src) == 0);
	/* another entry's file under this name (a collision, a copy): the
	 * identity inside differs */
	struct refcache_id id2 = base_id();
	id2.trial = 2;
	CHECK(refcache_store(dir, &id2, 2, bytes, (const void *const *)src, err, sizeof err) == 0);
	char name2[65];
	refcache_name(&id2, name2);
	CHECK(strcmp(name, name2) != 0);
	char *path2 = xstrfmt("%s/%s", dir, name2);
	CHECK(rename(path2, path) == 0);
	CHECK(loads_equal(dir, &id, 2, bytes, src) == 0);
	/* stored again: a hit again, no temporary left behind */
	CHECK(refcache_store(dir, &id, 2, bytes, (const void *const *)src, err, sizeof err) == 0);
	CHECK(loads_equal(dir, &id, 2, bytes, src) == 1);
	char *tmpf = xstrfmt("%s.tmp.%d", path, (int)getpid());
	CHECK(access(tmpf, F_OK) != 0);

	/* an unwritable folder: -1 with a reason, nothing else */
	char *ro = xstrfmt("%s/ro", tmp);
	CHECK(mkdir(ro, 0500) == 0);
	char *rodir = xstrfmt("%s/sub", ro);
	int r = refcache_store(rodir, &id, 2, bytes, (const void *const *)src, err, sizeof err);
	if (geteuid() != 0)
		CHECKF(r < 0 && strstr(err, "cannot"), "r %d: %s", r, err);

	/* the object's digest (util.c) */
	char sha[65];
	CHECK(sha256_file_hex(path, sha) == 0 && strlen(sha) == 64);
	CHECK(sha256_file_hex("/nonexistent/pkb.so", sha) < 0);

	free(good);
	free(path);
	free(path2);
	free(tmpf);
	free(ro);
	free(rodir);
	free(a);
	free(b);
	free(dir);
	rm_rf(tmp);
	return t_done("test_refcache");
}

#define _GNU_SOURCE
/*
 * test_safetensors.c -- safetensors round trips and malformed files.
 * With arguments, `test_safetensors write DIR same|differ|badmeta` writes a fake
 * `pkb run --save` folder for the CLI tests of `pkb compare`.
 */
#include "t.h"
#include "dtype.h"
#include "safetensors.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* a safetensors file of one header string (not padded) and raw data */
static void write_raw(const char *path, const char *hdr, const void *data, size_t n)
{
	size_t hl = strlen(hdr);
	char *buf = xmalloc(8 + hl + n);
	for (int i = 0; i < 8; i++)
		buf[i] = (char)((uint64_t)hl >> (8 * i));
	memcpy(buf + 8, hdr, hl);
	memcpy(buf + 8 + hl, data, n);
	write_file_atomic(path, buf, 8 + hl + n);
	free(buf);
}

/* a complex64 output of 4 elements; `differ`: only the imaginary part of the
 * last element changes (the half that a halved count never reads) */
static int write_c64_run(const char *dir, int differ)
{
	mkdir_p(dir);
	float out[8] = { 1, -1, 2, -2, 3, -3, 4, -4 };
	if (differ)
		out[7] = 40;
	struct st_tensor t = { .name = "out", .dtype = PKB_C64, .ndim = 1, .shape = { 4 },
			       .data = out, .bytes = sizeof out };
	const char *k[] = { "pkb_problem", "world", "rank", "m", "n", "dtype" };
	const char *v[] = { "59", "2", "0", "2", "2", "fp32" };
	char *path = xstrfmt("%s/rank_0_outputs.safetensors", dir);
	int r = st_write(path, &t, 1, k, v, 6);
	free(path);
	return r < 0;
}

static int write_fake_run(const char *dir, int differ, const char *world)
{
	mkdir_p(dir);
	for (int r = 0; r < 2; r++) {
		uint16_t out[64];
		for (int i = 0; i < 64; i++)
			out[i] = float_to_bf16((float)(i * (r + 1)) / 8);
		if (differ && r == 1)
			out[5] = float_to_bf16(100);
		struct st_tensor t = { .name = "out", .dtype = PKB_BF16, .ndim = 2,
				       .shape = { 8, 8 }, .data = out, .bytes = sizeof out };
		const char *k[] = { "pkb_problem", "world", "rank", "m", "n", "dtype" };
		char rk[8];
		snprintf(rk, sizeof rk, "%d", r);
		const char *v[] = { "1", world, rk, "8", "8", "bf16" };
		char *path = xstrfmt("%s/rank_%d_outputs.safetensors", dir, r);
		if (st_write(path, &t, 1, k, v, 6) < 0)
			return 1;
		free(path);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "write") && !strncmp(argv[3], "c64", 3))
		return write_c64_run(argv[2], !strcmp(argv[3], "c64differ"));
	if (argc == 4 && !strcmp(argv[1], "write"))
		return write_fake_run(argv[2], !strcmp(argv[3], "differ"),
				      !strcmp(argv[3], "badmeta") ? "2x" : "2");

	char dir[] = "/tmp/pkb-test-st.XXXXXX";
	mkdtemp(dir);
	char *path = xstrfmt("%s/a.safetensors", dir);
	float a[6] = { 1, 2, 3, 4, 5, 6 };
	int64_t b[3] = { -1, 7, 1ll << 40 };
	uint16_t c[1] = { 0x3f80 };
	struct st_tensor t[3] = {
		{ .name = "x", .dtype = PKB_FP32, .ndim = 2, .shape = { 2, 3 }, .data = a, .bytes = sizeof a },
		{ .name = "idx", .dtype = PKB_I64, .ndim = 1, .shape = { 3 }, .data = b, .bytes = sizeof b },
		{ .name = "s", .dtype = PKB_BF16, .ndim = 0, .data = c, .bytes = 2 },
	};
	const char *k[] = { "pkb_problem" }, *v[] = { "7" };
	CHECK(st_write(path, t, 3, k, v, 1) == 0);
	struct st_file f;
	char err[256];
	CHECK(st_read(path, &f, err, sizeof err) == 0);
	CHECK(f.n == 3);
	const struct st_tensor *x = st_find(&f, "x"), *idx = st_find(&f, "idx"), *s = st_find(&f, "s");
	CHECK(x && x->dtype == PKB_FP32 && x->ndim == 2 && x->shape[1] == 3 && !memcmp(x->data, a, sizeof a));
	CHECK(idx && idx->dtype == PKB_I64 && !memcmp(idx->data, b, sizeof b));
	CHECK(s && s->ndim == 0 && bf16_to_float(*(const uint16_t *)s->data) == 1.0f);
	CHECK(!strcmp(f.t[0].name, "x") && !strcmp(f.t[1].name, "idx"));   /* order kept */
	CHECK(st_meta(&f, "pkb_problem") && !strcmp(st_meta(&f, "pkb_problem"), "7"));
	/* the data section starts 8-byte aligned */
	uint64_t hl;
	memcpy(&hl, f.buf, 8);
	CHECK(hl % 8 == 0);
	st_free(&f);

	/* malformed files are errors with a message, never crashes */
	/* malformed files are errors with a message, never crashes: empty, header
	 * past the end, absurd header length, not an object, data missing, bad dtype */
	static const struct { const char *b; size_t n; } bad[] = {
		{ "", 0 },
		{ "\005\000\000\000\000\000\000\000{}", 10 },
		{ "\377\000\000\000\000\000\000\000{}", 10 },
		{ "\002\000\000\000\000\000\000\000[]", 10 },
		{ "7\000\000\000\000\000\000\000{\"x\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}", 63 },
		{ "6\000\000\000\000\000\000\000{\"x\":{\"dtype\":\"Q99\",\"shape\":[1],\"data_offsets\":[0,4]}}\000\000\000\000", 66 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		char *p = xstrfmt("%s/bad%zu.safetensors", dir, i);
		write_file_atomic(p, bad[i].b, bad[i].n);
		err[0] = 0;
		CHECKF(st_read(p, &f, err, sizeof err) < 0 && err[0], "malformed file %zu accepted", i);
		free(p);
	}
	CHECK(st_read("/nonexistent/x.safetensors", &f, err, sizeof err) < 0);

	/* shapes: a byte size that overflows (2^62 x 4 fp32 wraps to 0 bytes,
	 * which offsets [0, 0] would match), a float and a string dimension */
	static const char *const bad_shapes[] = {
		"{\"x\":{\"dtype\":\"F32\",\"shape\":[4611686018427387904,4],\"data_offsets\":[0,0]}}",
		"{\"x\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,0]}}",
		"{\"x\":{\"dtype\":\"F32\",\"shape\":[1e30,4],\"data_offsets\":[0,0]}}",
		"{\"x\":{\"dtype\":\"F32\",\"shape\":[\"x\",4],\"data_offsets\":[0,0]}}",
		"{\"x\":{\"dtype\":\"F32\",\"shape\":[0,4],\"data_offsets\":[0.0,0]}}",
	};
	for (size_t i = 0; i < sizeof bad_shapes / sizeof *bad_shapes; i++) {
		char *p = xstrfmt("%s/shape%zu.safetensors", dir, i);
		write_raw(p, bad_shapes[i], "", 0);
		err[0] = 0;
		CHECKF(st_read(p, &f, err, sizeof err) < 0 && err[0], "bad shape %zu accepted", i);
		free(p);
	}

	/* a header not padded to 8 bytes: the data sits at an odd address and
	 * every element still loads (UBSan checks the alignment here) */
	{
		double dv[3] = { 1.5, -2.25, 1e300 };
		char *p = xstrfmt("%s/odd.safetensors", dir);
		write_raw(p, "{\"d\":{\"dtype\":\"F64\",\"shape\":[3],\"data_offsets\":[0,24]}}",
			  dv, sizeof dv);
		CHECK(st_read(p, &f, err, sizeof err) == 0);
		const struct st_tensor *d = st_find(&f, "d");
		CHECK(d && ((uintptr_t)d->data & 7) != 0);
		CHECK(d && dtype_load(PKB_FP64, d->data, 0) == 1.5 &&
		      dtype_load(PKB_FP64, d->data, 2) == 1e300);
		st_free(&f);
		free(p);
	}
	rm_rf(dir);
	free(path);
	return t_done("test_safetensors");
}

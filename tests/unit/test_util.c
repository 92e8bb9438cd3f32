/*
 * test_util.c -- util.c's shared pieces: the growable string and argv,
 * SHA-256 (FIPS 180-2's vectors) and the clock.
 */
#include "util.h"
#include "t.h"

#include <stdlib.h>
#include <string.h>

int main(void)
{
	/* strbuf: NULL until something is added, bytes with NULs kept */
	struct strbuf b = STRBUF_INIT;
	CHECK(b.s == NULL && b.len == 0);
	char *e = strbuf_take(&b);
	CHECK(!strcmp(e, ""));
	free(e);
	strbuf_addstr(&b, "ab");
	strbuf_add(&b, "c\0d", 3);
	strbuf_addf(&b, "-%d-%s", 42, "x");
	CHECK(b.len == 10 && !memcmp(b.s, "abc\0d-42-x", 11));
	for (int i = 0; i < 1000; i++)
		strbuf_addf(&b, "%04d", i);
	CHECK(b.len == 4010 && !strncmp(b.s + 4006, "0999", 5));
	char *t = strbuf_take(&b);
	CHECK(b.s == NULL && b.len == 0 && t[4009] == '9');
	free(t);
	strbuf_addstr(&b, "y");
	strbuf_free(&b);
	CHECK(b.s == NULL && b.len == 0);

	/* strvec: copies, NULL-terminated at every size */
	struct strvec a = STRVEC_INIT;
	char arg[] = "--gpus";
	strvec_push(&a, arg);
	arg[0] = 'X';
	strvec_pushf(&a, "%d", 4);
	CHECK(a.n == 2 && !strcmp(a.v[0], "--gpus") && !strcmp(a.v[1], "4") && !a.v[2]);
	for (int i = 0; i < 100; i++)
		strvec_pushf(&a, "w%d", i);
	CHECK(a.n == 102 && !strcmp(a.v[101], "w99") && !a.v[102]);
	strvec_free(&a);
	CHECK(!a.v && !a.n);

	/* SHA-256 */
	char hex[65];
	sha256_hex("abc", 3, hex);
	CHECK(!strcmp(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"));
	sha256_hex("", 0, hex);
	CHECK(!strcmp(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
	const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
	sha256_hex(two, strlen(two), hex);
	CHECK(!strcmp(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"));

	double t0 = now_s();
	CHECK(t0 > 0 && now_s() >= t0 && (double)now_ns() / 1e9 >= t0);
	return t_done("test_util");
}

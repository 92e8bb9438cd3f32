/*
 * fuzz_safetensors.c -- libFuzzer target: any byte string given to the
 * safetensors reader is an error with a message or a file whose every tensor
 * lies inside the buffer; never a crash, a leak or undefined behaviour
 * (built with ASan and UBSan). Every element of every accepted tensor is
 * loaded, as `pkb compare` does.
 */
#include "dtype.h"
#include "safetensors.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = xmalloc(size ? size : 1);
	memcpy(buf, data, size);
	struct st_file f;
	char err[256] = "";
	if (st_parse(buf, size, "fuzz", &f, err, sizeof err) < 0) {
		if (!err[0])
			abort();   /* an error must say why */
		return 0;
	}
	for (int i = 0; i < f.n; i++) {
		const struct st_tensor *t = &f.t[i];
		const char *lo = f.buf, *hi = f.buf + size, *p = t->data;
		if (p < lo || p > hi || t->bytes > (size_t)(hi - p))
			abort();   /* a tensor outside the file */
		size_t es = pkb_dtype_size(t->dtype);
		int64_t n = (int64_t)(t->bytes / es) * (dtype_is_complex(t->dtype) ? 2 : 1);
		volatile double sink = 0;
		for (int64_t k = 0; k < n; k++)
			sink += dtype_load(t->dtype, t->data, k);
		(void)sink;
	}
	st_free(&f);
	return 0;
}

/*
 * safetensors.c -- see safetensors.h. The header is built and parsed with
 * jansson; offsets and sizes are checked against the file before any
 * tensor is handed out.
 */
#include "safetensors.h"
#include "dtype.h"   /* defines: dtype_st_name, dtype_parse */
#include "util.h"    /* defines: xmalloc, read_file, write_file_atomic */

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int st_write(const char *path, const struct st_tensor *t, int n,
	     const char *const *meta_keys, const char *const *meta_vals, int n_meta)
{
	json_t *h = json_object();
	if (n_meta) {
		json_t *m = json_object();
		for (int i = 0; i < n_meta; i++)
			json_object_set_new(m, meta_keys[i], json_string(meta_vals[i]));
		json_object_set_new(h, "__metadata__", m);
	}
	size_t off = 0;
	for (int i = 0; i < n; i++) {
		json_t *e = json_object(), *shape = json_array();
		json_object_set_new(e, "dtype", json_string(dtype_st_name(t[i].dtype)));
		for (int d = 0; d < t[i].ndim; d++)
			json_array_append_new(shape, json_integer(t[i].shape[d]));
		json_object_set_new(e, "shape", shape);
		json_object_set_new(e, "data_offsets",
				    json_pack("[II]", (json_int_t)off, (json_int_t)(off + t[i].bytes)));
		json_object_set_new(h, t[i].name, e);
		off += t[i].bytes;
	}
	char *hdr = json_dumps(h, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(h);
	size_t hl = strlen(hdr), pad = (8 - hl % 8) % 8;   /* align the data */
	size_t total = 8 + hl + pad + off;
	char *buf = xmalloc(total);
	uint64_t hlen = hl + pad;
	for (int i = 0; i < 8; i++)
		buf[i] = (char)(hlen >> (8 * i));
	memcpy(buf + 8, hdr, hl);
	memset(buf + 8 + hl, ' ', pad);
	free(hdr);
	char *p = buf + 8 + hlen;
	for (int i = 0; i < n; i++) {
		if (t[i].bytes)
			memcpy(p, t[i].data, t[i].bytes);
		p += t[i].bytes;
	}
	int r = write_file_atomic(path, buf, total);
	free(buf);
	return r;
}

static int fail(char *err, size_t n, const char *path, const char *what)
{
	snprintf(err, n, "'%s': %s", path, what);
	return -1;
}

int st_read(const char *path, struct st_file *f, char *err, size_t errlen)
{
	memset(f, 0, sizeof *f);
	size_t len;
	char *buf = read_file(path, &len);
	if (!buf)
		return fail(err, errlen, path, strerror(errno));
	return st_parse(buf, len, path, f, err, errlen);
}

int st_parse(char *buf, size_t len, const char *path, struct st_file *f, char *err,
	     size_t errlen)
{
	memset(f, 0, sizeof *f);
	f->buf = buf;
	if (len < 8) {
		st_free(f);
		return fail(err, errlen, path, "too short for a safetensors file");
	}
	uint64_t hl = 0;
	for (int i = 0; i < 8; i++)
		hl |= (uint64_t)(unsigned char)buf[i] << (8 * i);
	if (hl > len - 8) {
		st_free(f);
		return fail(err, errlen, path, "header length past the end of the file");
	}
	json_error_t je;
	json_t *h = json_loadb(buf + 8, (size_t)hl, 0, &je);
	if (!json_is_object(h)) {
		json_decref(h);
		st_free(f);
		return fail(err, errlen, path, "header is not a JSON object");
	}
	const char *data = buf + 8 + hl;
	size_t data_len = len - 8 - hl;
	size_t cap = json_object_size(h);
	f->t = xcalloc(cap, sizeof *f->t);
	const char *key;
	json_t *v;
	json_object_foreach(h, key, v) {
		if (!strcmp(key, "__metadata__")) {
			size_t mn = json_object_size(v);
			f->meta_keys = xcalloc(mn, sizeof(char *));
			f->meta_vals = xcalloc(mn, sizeof(char *));
			const char *mk;
			json_t *mv;
			json_object_foreach(v, mk, mv) {
				if (!json_is_string(mv))
					continue;
				f->meta_keys[f->n_meta] = xstrdup(mk);
				f->meta_vals[f->n_meta++] = xstrdup(json_string_value(mv));
			}
			continue;
		}
		const char *dt = json_string_value(json_object_get(v, "dtype"));
		json_t *shape = json_object_get(v, "shape"), *offs = json_object_get(v, "data_offsets");
		int t = dt ? dtype_parse(dt) : -1;
		if (t < 0 || !json_is_array(shape) || json_array_size(shape) > PKB_MAX_DIMS ||
		    !json_is_array(offs) || json_array_size(offs) != 2) {
			json_decref(h);
			st_free(f);
			return fail(err, errlen, path, "malformed tensor entry");
		}
		struct st_tensor *s = &f->t[f->n++];
		s->name = xstrdup(key);
		s->dtype = (pkb_dtype)t;
		s->ndim = (int)json_array_size(shape);
		/* every dimension a JSON integer >= 0, and the byte size of the
		 * whole tensor representable: [2^62, 4] must not wrap to 0 bytes */
		uint64_t want = pkb_dtype_size(s->dtype);
		for (int d = 0; d < s->ndim; d++) {
			json_t *dim = json_array_get(shape, (size_t)d);
			s->shape[d] = json_is_integer(dim) ? json_integer_value(dim) : -1;
			const char *why = s->shape[d] < 0 ? "a dimension is not an integer >= 0"
				: __builtin_mul_overflow(want, (uint64_t)s->shape[d], &want)
				? "tensor size overflows" : NULL;
			if (why) {
				json_decref(h);
				st_free(f);
				return fail(err, errlen, path, why);
			}
		}
		json_t *ja = json_array_get(offs, 0), *jb = json_array_get(offs, 1);
		json_int_t a = json_is_integer(ja) ? json_integer_value(ja) : -1;
		json_int_t b = json_is_integer(jb) ? json_integer_value(jb) : -1;
		if (a < 0 || b < a || (uint64_t)b > data_len || (uint64_t)(b - a) != want) {
			json_decref(h);
			st_free(f);
			return fail(err, errlen, path, "tensor data out of bounds or of the wrong size");
		}
		s->data = data + a;
		s->bytes = (size_t)(b - a);
	}
	json_decref(h);
	return 0;
}

const struct st_tensor *st_find(const struct st_file *f, const char *name)
{
	for (int i = 0; i < f->n; i++)
		if (!strcmp(f->t[i].name, name))
			return &f->t[i];
	return NULL;
}

const char *st_meta(const struct st_file *f, const char *key)
{
	for (int i = 0; i < f->n_meta; i++)
		if (!strcmp(f->meta_keys[i], key))
			return f->meta_vals[i];
	return NULL;
}

void st_free(struct st_file *f)
{
	for (int i = 0; i < f->n; i++)
		free(f->t[i].name);
	for (int i = 0; i < f->n_meta; i++) {
		free(f->meta_keys[i]);
		free(f->meta_vals[i]);
	}
	free(f->t);
	free(f->meta_keys);
	free(f->meta_vals);
	free(f->buf);
	memset(f, 0, sizeof *f);
}

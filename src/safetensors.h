/*
 * safetensors.h -- read and write safetensors files (8-byte little-endian
 * header length, a JSON header of {name: {dtype, shape, data_offsets}} plus
 * "__metadata__" with string values, then the raw bytes).
 */
#ifndef PKB_SAFETENSORS_H
#define PKB_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>
#include "pkb.h"   /* defines: pkb_dtype, PKB_MAX_DIMS */

struct st_tensor {
	char *name;
	pkb_dtype dtype;
	int ndim;
	int64_t shape[PKB_MAX_DIMS];
	const void *data;   /* into the file's buffer (read) or the caller's (write) */
	size_t bytes;
};

struct st_file {
	int n;
	struct st_tensor *t;
	int n_meta;
	char **meta_keys, **meta_vals;
	char *buf;          /* the whole file, when read */
};

/* tensors are written in the order given; meta may be NULL */
int st_write(const char *path, const struct st_tensor *t, int n,
	     const char *const *meta_keys, const char *const *meta_vals, int n_meta);
/* 0, or -1 with err set (a malformed file is an error, never a crash) */
int st_read(const char *path, struct st_file *f, char *err, size_t errlen);
/* the same for a file already in memory: `buf` (from malloc) is owned by f
 * from here on, freed by st_free or on error; `label` names it in messages */
int st_parse(char *buf, size_t len, const char *label, struct st_file *f, char *err,
	     size_t errlen);
const struct st_tensor *st_find(const struct st_file *f, const char *name);
const char *st_meta(const struct st_file *f, const char *key);
void st_free(struct st_file *f);

#endif

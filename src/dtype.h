/*
 * dtype.h -- host-side facts about pkb_dtype: names (ours and safetensors'),
 * unit roundoff, and conversion of one element to double.
 */
#ifndef PKB_DTYPE_H
#define PKB_DTYPE_H

#include <stdint.h>
#include "pkb.h"   /* defines: pkb_dtype */

const char *dtype_name(pkb_dtype t);          /* "bf16" */
const char *dtype_st_name(pkb_dtype t);       /* safetensors: "BF16" */
int dtype_parse(const char *s);               /* ours or safetensors'; -1 if unknown */
int dtype_is_float(pkb_dtype t);
int dtype_is_complex(pkb_dtype t);
double dtype_unit_roundoff(pkb_dtype t);      /* 0 for integers */
/* element i of a host buffer, as double (complex: component i of the pairs) */
double dtype_load(pkb_dtype t, const void *buf, int64_t i);
/* mean |x| and max |x| over the finite elements of n elements (complex:
 * 2n components), and the count of non-finite ones */
void dtype_stats(pkb_dtype t, const void *buf, int64_t n, double *mean_abs, double *amax,
		 int64_t *nonfinite);
float bf16_to_float(uint16_t h);
uint16_t float_to_bf16(float f);              /* round to nearest even */
uint16_t float_to_fp16(float f);              /* round to nearest even, subnormals,
						 +-Inf past 65504 (no _Float16:
						 clang 14 lacks it on x86) */
/* element i of a float buffer of dtype t (fp32, fp64, bf16, fp16) = v,
 * rounded to nearest even: what gen_host writes */
void dtype_store(pkb_dtype t, void *buf, int64_t i, double v);
float fp16_to_float(uint16_t h);
float fp8e4m3_to_float(uint8_t b);
float fp8e5m2_to_float(uint8_t b);

#endif

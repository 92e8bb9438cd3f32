/*
 * dtype.c -- see dtype.h. Conversions follow IEEE 754 and the OCP FP8 spec
 * (e4m3: no infinities, S.1111.111 is NaN; e5m2: IEEE-like).
 */
#include "dtype.h"

#include <math.h>
#include <string.h>

static const struct {
	const char *name, *st;
	double u;
	int is_float;
} info[PKB_DTYPE_COUNT] = {
	[PKB_BF16] = { "bf16", "BF16", 0x1p-8, 1 },
	[PKB_FP16] = { "fp16", "F16", 0x1p-11, 1 },
	[PKB_FP32] = { "fp32", "F32", 0x1p-24, 1 },
	[PKB_FP64] = { "fp64", "F64", 0x1p-53, 1 },
	[PKB_I8] = { "int8", "I8", 0, 0 },
	[PKB_U8] = { "uint8", "U8", 0, 0 },
	[PKB_I32] = { "int32", "I32", 0, 0 },
	[PKB_I64] = { "int64", "I64", 0, 0 },
	[PKB_BOOL] = { "bool", "BOOL", 0, 0 },
	[PKB_FP8_E4M3] = { "fp8_e4m3", "F8_E4M3", 0x1p-4, 1 },
	[PKB_FP8_E5M2] = { "fp8_e5m2", "F8_E5M2", 0x1p-3, 1 },
	[PKB_C64] = { "complex64", "C64", 0x1p-24, 1 },
};

const char *dtype_name(pkb_dtype t)
{
	return (unsigned)t < PKB_DTYPE_COUNT ? info[t].name : "?";
}

const char *dtype_st_name(pkb_dtype t)
{
	return (unsigned)t < PKB_DTYPE_COUNT ? info[t].st : "?";
}

int dtype_parse(const char *s)
{
	static const struct { const char *alias; pkb_dtype t; } aliases[] = {
		{ "bfloat16", PKB_BF16 }, { "float16", PKB_FP16 }, { "half", PKB_FP16 },
		{ "float32", PKB_FP32 }, { "float", PKB_FP32 }, { "float64", PKB_FP64 },
		{ "double", PKB_FP64 },
	};
	for (int t = 0; t < PKB_DTYPE_COUNT; t++)
		if (!strcmp(s, info[t].name) || !strcmp(s, info[t].st))
			return t;
	for (size_t i = 0; i < sizeof aliases / sizeof *aliases; i++)
		if (!strcmp(s, aliases[i].alias))
			return aliases[i].t;
	return -1;
}

int dtype_is_float(pkb_dtype t)
{
	return (unsigned)t < PKB_DTYPE_COUNT && info[t].is_float;
}

int dtype_is_complex(pkb_dtype t)
{
	return t == PKB_C64;
}

double dtype_unit_roundoff(pkb_dtype t)
{
	return (unsigned)t < PKB_DTYPE_COUNT ? info[t].u : 0;
}

float bf16_to_float(uint16_t h)
{
	uint32_t u = (uint32_t)h << 16;
	float f;
	memcpy(&f, &u, 4);
	return f;
}

uint16_t float_to_bf16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	if ((u & 0x7fffffffu) > 0x7f800000u)
		return (uint16_t)((u >> 16) | 0x40);   /* quiet NaN */
	u += 0x7fffu + ((u >> 16) & 1);
	return (uint16_t)(u >> 16);
}

uint16_t float_to_fp16(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	uint16_t s = (uint16_t)((u >> 16) & 0x8000u);
	uint32_t a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return s | 0x7e00;   /* quiet NaN */
	if (a >= 0x477ff000u)
		return s | 0x7c00;   /* from 65520 (halfway past 65504, to even) */
	if (a < 0x38800000u) {
		/* below 2^-14: subnormal steps of 2^-24, scaled exactly */
		float v;
		memcpy(&v, &a, 4);
		return s | (uint16_t)rintf(v * 16777216.0f);
	}
	uint32_t m = a & 0x7fffffu, h = ((a >> 23) - 112) << 10 | m >> 13, rest = m & 0x1fffu;
	if (rest > 0x1000u || (rest == 0x1000u && (h & 1)))
		h++;   /* a carry into the exponent is the next binade */
	return s | (uint16_t)h;
}

void dtype_store(pkb_dtype t, void *buf, int64_t i, double v)
{
	switch (t) {
	case PKB_FP64: ((double *)buf)[i] = v; break;
	case PKB_BF16: ((uint16_t *)buf)[i] = float_to_bf16((float)v); break;
	case PKB_FP16: ((uint16_t *)buf)[i] = float_to_fp16((float)v); break;
	default: ((float *)buf)[i] = (float)v; break;
	}
}

float fp16_to_float(uint16_t h)
{
	int s = h >> 15, e = (h >> 10) & 0x1f, m = h & 0x3ff;
	float v;
	if (e == 0)
		v = ldexpf((float)m, -24);
	else if (e == 31)
		v = m ? NAN : INFINITY;
	else
		v = ldexpf((float)(m | 0x400), e - 25);
	return s ? -v : v;
}

float fp8e4m3_to_float(uint8_t b)
{
	int s = b >> 7, e = (b >> 3) & 0xf, m = b & 7;
	float v;
	if (e == 15 && m == 7)
		return NAN;
	if (e == 0)
		v = ldexpf((float)m, -9);
	else
		v = ldexpf((float)(m | 8), e - 10);
	return s ? -v : v;
}

float fp8e5m2_to_float(uint8_t b)
{
	int s = b >> 7, e = (b >> 2) & 0x1f, m = b & 3;
	float v;
	if (e == 31)
		v = m ? NAN : INFINITY;
	else if (e == 0)
		v = ldexpf((float)m, -16);
	else
		v = ldexpf((float)(m | 4), e - 17);
	return s ? -v : v;
}

/* One element, loaded through memcpy: a safetensors file whose header is
 * not padded to 8 bytes puts its data at any address (a memcpy of a fixed
 * size compiles to one plain load). */
#define DEFINE_LOAD(name, type) \
	static inline type name(const void *buf, int64_t i) \
	{ type v; memcpy(&v, (const char *)buf + i * (int64_t)sizeof v, sizeof v); return v; }
DEFINE_LOAD(load_u8, uint8_t)
DEFINE_LOAD(load_i8, int8_t)
DEFINE_LOAD(load_u16, uint16_t)
DEFINE_LOAD(load_i32, int32_t)
DEFINE_LOAD(load_i64, int64_t)
DEFINE_LOAD(load_f32, float)
DEFINE_LOAD(load_f64, double)

double dtype_load(pkb_dtype t, const void *buf, int64_t i)
{
	switch (t) {
	case PKB_BF16: return bf16_to_float(load_u16(buf, i));
	case PKB_FP16: return fp16_to_float(load_u16(buf, i));
	case PKB_FP32: case PKB_C64: return load_f32(buf, i);
	case PKB_FP64: return load_f64(buf, i);
	case PKB_I8: return load_i8(buf, i);
	case PKB_U8: case PKB_BOOL: return load_u8(buf, i);
	case PKB_I32: return load_i32(buf, i);
	case PKB_I64: return (double)load_i64(buf, i);
	case PKB_FP8_E4M3: return fp8e4m3_to_float(load_u8(buf, i));
	case PKB_FP8_E5M2: return fp8e5m2_to_float(load_u8(buf, i));
	default: return NAN;
	}
}

void dtype_stats(pkb_dtype t, const void *buf, int64_t n, double *mean_abs, double *amax,
		 int64_t *nonfinite)
{
	if (dtype_is_complex(t))
		n *= 2;
	double sum = 0, mx = 0;
	int64_t bad = 0;
	for (int64_t k = 0; k < n; k++) {
		double v = fabs(dtype_load(t, buf, k));
		if (!isfinite(v)) {
			bad++;
			continue;
		}
		sum += v;
		mx = v > mx ? v : mx;
	}
	*mean_abs = n ? sum / (double)n : 0;
	*amax = mx;
	*nonfinite = bad;
}

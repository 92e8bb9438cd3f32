/*
 * pybridge.c -- see pybridge.h. The handful of CPython's C API calls pkb
 * makes are looked up in the libpython the interpreter names (its stable,
 * documented entry points); objects are passed as opaque pointers.
 */
#define _GNU_SOURCE
#include "pybridge.h"
#include "util.h"   /* defines: xstrfmt, read_file, run_redirected */

#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* asked of the interpreter: where its shared library is (LIBDIR, or the
 * multiarch folder where Debian keeps libpython3.X.so.1.0 beside a static
 * python3.X), its prefixes and its path */
static const char probe_py[] =
	"import json, os, sys, sysconfig\n"
	"v = sysconfig.get_config_var\n"
	"names = [n for n in (v('INSTSONAME'), v('LDLIBRARY')) if n and '.so' in n]\n"
	"names += ['libpython%d.%d.so.1.0' % sys.version_info[:2]]\n"
	"dirs = [d for d in (v('LIBDIR'), os.path.join(v('LIBDIR') or '/', v('MULTIARCH') or ''),\n"
	"        v('LIBPL')) if d]\n"
	"lib = next((os.path.join(d, n) for n in names for d in dirs\n"
	"            if os.path.isfile(os.path.join(d, n))), '')\n"
	"print(json.dumps({'lib': lib, 'version': '%d.%d.%d' % sys.version_info[:3],\n"
	"                  'prefix': sys.prefix, 'base_prefix': sys.base_prefix,\n"
	"                  'exec_prefix': sys.exec_prefix, 'path': sys.path}))\n";

void pybridge_probe_free(struct pybridge_probe *pr)
{
	for (int i = 0; i < pr->n_dirs; i++)
		free(pr->dirs[i]);
	free(pr->path_json);
	memset(pr, 0, sizeof *pr);
}

static void add_dir(struct pybridge_probe *pr, const char *d)
{
	if (!d || d[0] != '/' || pr->n_dirs >= PYBRIDGE_MAX_DIRS || access(d, R_OK) != 0)
		return;
	for (int i = 0; i < pr->n_dirs; i++)
		if (!strcmp(pr->dirs[i], d))
			return;
	pr->dirs[pr->n_dirs++] = xstrdup(d);
}

int pybridge_probe(const char *python, struct pybridge_probe *pr, char *err, size_t n)
{
	memset(pr, 0, sizeof *pr);
	char tmpl[] = "/tmp/pkb-pyprobe.XXXXXX";
	int fd = mkstemp(tmpl);
	if (fd < 0) {
		snprintf(err, n, "cannot make a temporary file for the Python probe");
		return -1;
	}
	close(fd);
	char *argv[] = { (char *)python, "-I", "-c", (char *)probe_py, NULL };
	int rc = run_redirected(argv, "/dev/null", tmpl, "/dev/null", 60);
	char *out = rc == 0 ? read_file(tmpl, NULL) : NULL;
	unlink(tmpl);
	json_error_t je;
	json_t *j = out ? json_loads(out, 0, &je) : NULL;
	free(out);
	if (!j) {
		snprintf(err, n, "'%s' cannot be run as Python (status %d): the triton backend needs "
			 "python3 with torch and Triton ($PKB_PYTHON or python3 on PATH)", python, rc);
		return -1;
	}
	snprintf(pr->lib, sizeof pr->lib, "%s", json_string_value(json_object_get(j, "lib")) ?: "");
	snprintf(pr->version, sizeof pr->version, "%s",
		 json_string_value(json_object_get(j, "version")) ?: "?");
	snprintf(pr->home, sizeof pr->home, "%s",
		 json_string_value(json_object_get(j, "base_prefix")) ?: "");
	add_dir(pr, json_string_value(json_object_get(j, "prefix")));
	add_dir(pr, json_string_value(json_object_get(j, "base_prefix")));
	add_dir(pr, json_string_value(json_object_get(j, "exec_prefix")));
	json_t *path = json_object_get(j, "path"), *e;
	size_t i;
	json_array_foreach(path, i, e)
		add_dir(pr, json_string_value(e));
	pr->path_json = json_dumps(path ? path : json_array(), JSON_COMPACT);
	json_decref(j);
	if (!pr->lib[0]) {
		snprintf(err, n, "Python %s at '%s' has no shared libpython (libpython%.4s.so): pkb "
			 "embeds it to host a triton candidate (Debian: apt-get install "
			 "libpython3-dev)", pr->version, python, pr->version);
		return -1;
	}
	return 0;
}

/* ---- the interpreter -------------------------------------------------------- */

static struct {
	void (*initialize_ex)(int);
	int (*run_simple)(const char *);
	void *(*import)(const char *);
	void *(*getattr)(void *, const char *);
	void *(*call_function)(void *, const char *, ...);
	const char *(*as_utf8)(void *);
	void (*decref)(void *);
	void (*err_print)(void);
	void *shim;     /* the module pkb_triton */
} py;

#define SYM(field, name)                                                              \
	do {                                                                          \
		*(void **)&py.field = dlsym(h, name);                                 \
		if (!py.field) {                                                      \
			snprintf(err, n, "'%s' lacks %s: not a CPython library", lib, \
				 name);                                               \
			return -1;                                                    \
		}                                                                     \
	} while (0)

static int load_lib(const char *lib, char *err, size_t n)
{
	/* global: the extension modules torch and Triton load resolve the C
	 * API against it */
	void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
	if (!h) {
		snprintf(err, n, "cannot load '%s': %s", lib, dlerror());
		return -1;
	}
	SYM(initialize_ex, "Py_InitializeEx");
	SYM(run_simple, "PyRun_SimpleString");
	SYM(import, "PyImport_ImportModule");
	SYM(getattr, "PyObject_GetAttrString");
	SYM(call_function, "PyObject_CallFunction");
	SYM(as_utf8, "PyUnicode_AsUTF8");
	SYM(decref, "Py_DecRef");
	SYM(err_print, "PyErr_Print");
	return 0;
}

/* `text` as a Python expression of bytes (hex: no quoting to get wrong) */
static char *py_bytes(const char *text)
{
	size_t len = strlen(text);
	char *hex = xmalloc(2 * len + 1);
	for (size_t i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", (unsigned char)text[i]);
	char *s = xstrfmt("bytes.fromhex('%s')", hex);
	free(hex);
	return s;
}

int pybridge_start(const struct pybridge_probe *pr, const char *shim_dir, const char *setup_json,
		   char *err, size_t n)
{
	if (py.shim) {
		snprintf(err, n, "Python is already started in this process");
		return -1;
	}
	if (load_lib(pr->lib, err, n) < 0)
		return -1;
	/* the interpreter's own prefix (a venv's base), not pkb's folder; no
	 * user site; no .pyc written (the candidate's folder is read-only) */
	setenv("PYTHONHOME", pr->home, 1);
	setenv("PYTHONNOUSERSITE", "1", 1);
	setenv("PYTHONDONTWRITEBYTECODE", "1", 1);
	py.initialize_ex(0);   /* 0: Python installs no signal handler */
	char *path = py_bytes(pr->path_json), *shim = py_bytes(shim_dir);
	char *code = xstrfmt("import json, sys\nsys.path[:] = [%s.decode()] + json.loads(%s)\n"
			     "sys.dont_write_bytecode = True\n", shim, path);
	int rc = py.run_simple(code);
	free(code);
	free(path);
	free(shim);
	if (rc != 0) {
		snprintf(err, n, "Python %s could not set its path", pr->version);
		return -1;
	}
	py.shim = py.import("pkb_triton");
	if (!py.shim) {
		py.err_print();
		snprintf(err, n, "Python %s cannot import pkb_triton from '%s'", pr->version,
			 shim_dir);
		return -1;
	}
	return pybridge_call("setup", setup_json, err, n);
}

int pybridge_call(const char *fn, const char *json, char *err, size_t n)
{
	if (!py.shim) {
		snprintf(err, n, "Python is not started");
		return -1;
	}
	void *f = py.getattr(py.shim, fn);
	void *r = f ? py.call_function(f, "s", json) : NULL;
	if (f)
		py.decref(f);
	if (!r) {
		py.err_print();
		snprintf(err, n, "pkb_triton.%s raised (the log has Python's traceback)", fn);
		return -1;
	}
	const char *msg = py.as_utf8(r);
	int rc = 0;
	if (!msg) {
		py.err_print();
		snprintf(err, n, "pkb_triton.%s returned no string", fn);
		rc = -1;
	} else if (*msg) {
		snprintf(err, n, "%s", msg);
		rc = -1;
	}
	py.decref(r);
	return rc;
}

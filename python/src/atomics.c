/*
 * atomics.c: the atomics tracker (libnano_tracker.so, nano/atomics.h) read
 * from Python. The tracker is not linked: it is looked up at run time in the
 * global scope (dlopen(NULL): the program, what it was linked and preloaded
 * with, and libraries loaded RTLD_GLOBAL), the scope where instrumented code
 * binds its weak hooks. So it is found exactly when the counts are real: the
 * process runs under LD_PRELOAD=libnano_tracker.so (or links it). A copy
 * that only some extension's own dependencies pulled in (RTLD_LOCAL) does not
 * count, and is not used. Every function raises RuntimeError naming the
 * library when it is not there.
 */
#include "nanoprobe.h"

#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nano/atomics.h>

/* The tracker's API, resolved once, all or nothing. */
static struct {
  int resolved;
  void (*reset)(void);
  uint64_t (*count)(const char *);
  int (*dump)(FILE *, enum nano_format);
  int (*dump_path)(const char *, enum nano_format);
  int (*foreach_site)(nano_site_visitor, void *);
  const char *(*kind_name)(unsigned);
  const char *(*order_name)(unsigned);
} np_tracker;

/* Resolves the tracker's functions. Returns 0, or -1 with RuntimeError. */
static int np_tracker_resolve(void) {
  void *global;
  if (np_tracker.resolved)
    return 0;
  /* The handle of the main program stays valid for the life of the process. */
  global = dlopen(NULL, RTLD_NOW);
  if (!global) {
    PyErr_Format(PyExc_RuntimeError, "dlopen of the main program failed: %s", dlerror());
    return -1;
  }
  /* dlsym returns void *; POSIX guarantees it converts to a function pointer. */
  *(void **)&np_tracker.reset = dlsym(global, "nano_tracker_reset");
  *(void **)&np_tracker.count = dlsym(global, "nano_tracker_count");
  *(void **)&np_tracker.dump = dlsym(global, "nano_tracker_dump");
  *(void **)&np_tracker.dump_path = dlsym(global, "nano_tracker_dump_path");
  *(void **)&np_tracker.foreach_site = dlsym(global, "nano_tracker_foreach_site");
  *(void **)&np_tracker.kind_name = dlsym(global, "nano_kind_name");
  *(void **)&np_tracker.order_name = dlsym(global, "nano_order_name");
  if (!np_tracker.reset || !np_tracker.count || !np_tracker.dump || !np_tracker.dump_path ||
      !np_tracker.foreach_site || !np_tracker.kind_name || !np_tracker.order_name) {
    PyErr_SetString(PyExc_RuntimeError,
                    "the atomics tracker is not loaded in this process: run it under "
                    "LD_PRELOAD=<build>/runtime/tracker/libnano_tracker.so "
                    "(nano_tracker_* not found)");
    return -1;
  }
  np_tracker.resolved = 1;
  return 0;
}

/* atomics_loaded() -> bool. */
static PyObject *np_atomics_loaded(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  if (np_tracker_resolve() < 0) {
    PyErr_Clear();
    Py_RETURN_FALSE;
  }
  Py_RETURN_TRUE;
}

/* atomics_reset(): zeroes every count. */
static PyObject *np_atomics_reset(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  if (np_tracker_resolve() < 0)
    return NULL;
  np_tracker.reset();
  Py_RETURN_NONE;
}

/* atomics_count(kind_name) -> int: total of one kind (0 for an unknown name). */
static PyObject *np_atomics_count(PyObject *self, PyObject *arg) {
  const char *name;
  (void)self;
  if (np_tracker_resolve() < 0 || !(name = PyUnicode_AsUTF8(arg)))
    return NULL;
  return PyLong_FromUnsignedLongLong(np_tracker.count(name));
}

/* atomics_kinds() -> list of every kind name, in enum order. */
static PyObject *np_atomics_kinds(PyObject *self, PyObject *unused) {
  PyObject *list;
  (void)self, (void)unused;
  if (np_tracker_resolve() < 0 || !(list = PyList_New(0)))
    return NULL;
  for (unsigned k = 0; k < NANO_KIND_COUNT; k++) {
    const char *n = np_tracker.kind_name(k);
    PyObject *s;
    if (!n)
      continue;
    if (!(s = PyUnicode_FromString(n)) || PyList_Append(list, s) < 0) {
      Py_XDECREF(s);
      Py_DECREF(list);
      return NULL;
    }
    Py_DECREF(s);
  }
  return list;
}

/* Visitor of atomics_sites: appends one dict per site to the list `arg`.
 * Returns non-zero (stopping the walk) on a Python error. */
static int np_atomics_visit(const struct nano_site *site, uint64_t count, void *arg) {
  const char *kind = np_tracker.kind_name(site->kind);
  const char *order = np_tracker.order_name(site->order);
  PyObject *d =
      Py_BuildValue("{s:I,s:s,s:s,s:I,s:s,s:I,s:I,s:s,s:s,s:K}", "id", (unsigned)site->id, "kind",
                    kind ? kind : "?", "order", order ? order : "?", "size", (unsigned)site->size,
                    "file", site->file ? site->file : "", "line", (unsigned)site->line, "column",
                    (unsigned)site->column, "function", site->function ? site->function : "",
                    "module", site->module && site->module->name ? site->module->name : "", "count",
                    (unsigned long long)count);
  int rc = d ? PyList_Append((PyObject *)arg, d) : -1;
  Py_XDECREF(d);
  return rc < 0;
}

/* atomics_sites() -> list of dicts, one per registered site, with its count. */
static PyObject *np_atomics_sites(PyObject *self, PyObject *unused) {
  PyObject *list;
  (void)self, (void)unused;
  if (np_tracker_resolve() < 0 || !(list = PyList_New(0)))
    return NULL;
  if (np_tracker.foreach_site(np_atomics_visit, list) != 0) {
    Py_DECREF(list);
    return NULL;
  }
  return list;
}

/* Parses a format name ("text" or "json"). Returns 0, or -1 with ValueError. */
static int np_atomics_format(const char *s, enum nano_format *out) {
  if (strcmp(s, "text") == 0)
    *out = NANO_FORMAT_TEXT;
  else if (strcmp(s, "json") == 0)
    *out = NANO_FORMAT_JSON;
  else {
    PyErr_Format(PyExc_ValueError, "atomics dump format '%s': expected 'text' or 'json'", s);
    return -1;
  }
  return 0;
}

/* atomics_dump(format) -> str: the tracker's dump as text. */
static PyObject *np_atomics_dump(PyObject *self, PyObject *args) {
  const char *fmt;
  enum nano_format f;
  char *buf = NULL;
  size_t len = 0;
  FILE *mem;
  int rc;
  PyObject *r;
  (void)self;
  if (!PyArg_ParseTuple(args, "s:atomics_dump", &fmt) || np_atomics_format(fmt, &f) < 0 ||
      np_tracker_resolve() < 0)
    return NULL;
  if (!(mem = open_memstream(&buf, &len)))
    return PyErr_SetFromErrno(PyExc_OSError);
  rc = np_tracker.dump(mem, f);
  if (fclose(mem) != 0 || rc != 0) {
    free(buf);
    return PyErr_SetFromErrno(PyExc_OSError);
  }
  r = PyUnicode_DecodeUTF8(buf, (Py_ssize_t)len, "replace");
  free(buf);
  return r;
}

/* atomics_dump_path(path, format): writes the dump to a file ("stdout" and
 * "stderr" name the streams). OSError naming the path when that fails. */
static PyObject *np_atomics_dump_path(PyObject *self, PyObject *args) {
  const char *path, *fmt;
  enum nano_format f;
  (void)self;
  if (!PyArg_ParseTuple(args, "ss:atomics_dump_path", &path, &fmt) ||
      np_atomics_format(fmt, &f) < 0 || np_tracker_resolve() < 0)
    return NULL;
  fflush(stdout);
  if (np_tracker.dump_path(path, f) != 0)
    return PyErr_SetFromErrnoWithFilename(PyExc_OSError, path);
  Py_RETURN_NONE;
}

PyMethodDef np_atomics_methods[] = {
    {"atomics_loaded", np_atomics_loaded, METH_NOARGS, "atomics_loaded() -> bool"},
    {"atomics_reset", np_atomics_reset, METH_NOARGS, "atomics_reset(): zero every count"},
    {"atomics_count", np_atomics_count, METH_O, "atomics_count(kind_name) -> int"},
    {"atomics_kinds", np_atomics_kinds, METH_NOARGS, "atomics_kinds() -> list of kind names"},
    {"atomics_sites", np_atomics_sites, METH_NOARGS, "atomics_sites() -> list of site dicts"},
    {"atomics_dump", np_atomics_dump, METH_VARARGS, "atomics_dump(format) -> str"},
    {"atomics_dump_path", np_atomics_dump_path, METH_VARARGS,
     "atomics_dump_path(path, format): write the dump to a file"},
    {NULL, NULL, 0, NULL}};

/*
 * module.c: the extension module nanoprobe._nanoprobe.
 *
 * Thin bindings of the tracer's C API (rpd.h, libnano_rpd.so): the trace
 * file, reference-counted start/stop, flush, user ranges, marks and
 * signposts. The Python-level classes (nanoprobe.Tracer, nanoprobe.Profiler)
 * are written in Python on top of these functions; nothing here is on the
 * profiler's hot path (see profiler.c).
 */
#include "nanoprobe.h"

#include <stdio.h>
#include <stdlib.h>

#include <rpd.h>

PyObject *np_module;

/* The domain of signpost marks: they are marks like any other user mark, in
 * a domain of their own so that reports can tell them apart. */
#define NP_SIGNPOST_DOMAIN "signpost"

/*
 * set_filename(path, append=False): sets the trace file before the tracer's
 * writer opens. Raises RuntimeError when the writer is already open.
 */
static PyObject *np_set_filename(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"path", "append", NULL};
  const char *path;
  int append = 0;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|p:set_filename", names, &path, &append))
    return NULL;
  if (rpd_set_filename(path, append) != 0) {
    PyErr_Format(PyExc_RuntimeError,
                 "cannot set the trace file to '%s': the tracer's file is already open "
                 "(set it before the first start)",
                 path);
    return NULL;
  }
  Py_RETURN_NONE;
}

/* start(): one more reference to recording; returns the new count. */
static PyObject *np_start(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  int n = rpdstart();
  if (n < 0) {
    PyErr_SetString(PyExc_RuntimeError, "the tracer could not start recording (see stderr)");
    return NULL;
  }
  return PyLong_FromLong(n);
}

/* stop(wait=True): one reference less; returns the new count. Raises
 * RuntimeError when recording is not started (the count would go below
 * zero), or when a stop to 0 waited for the file and the rows could not be
 * written (recording has stopped all the same). wait=False: a stop to 0 does
 * not wait for the file (rpdstop_nowait). The GIL is released while waiting. */
static PyObject *np_stop(PyObject *self, PyObject *args, PyObject *kwargs) {
  static char *kwlist[] = {"wait", NULL};
  int wait = 1;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|p:stop", kwlist, &wait))
    return NULL;
  int n = rpdstop_nowait();
  if (n < 0) {
    PyErr_SetString(PyExc_RuntimeError, "stop() without a matching start(): recording is not on");
    return NULL;
  }
  if (n == 0 && wait) {
    int rc;
    Py_BEGIN_ALLOW_THREADS rc = rpdflush();
    Py_END_ALLOW_THREADS if (rc != 0) {
      PyErr_SetString(PyExc_RuntimeError,
                      "recording stopped, but the tracer could not write the trace file (see "
                      "stderr)");
      return NULL;
    }
  }
  return PyLong_FromLong(n);
}

/* flush(): returns when everything recorded so far is committed to the file.
 * The GIL is released meanwhile: the writer may wait for other threads. */
static PyObject *np_flush(PyObject *self, PyObject *unused) {
  int rc;
  (void)self, (void)unused;
  Py_BEGIN_ALLOW_THREADS rc = rpdflush();
  Py_END_ALLOW_THREADS if (rc != 0) {
    PyErr_SetString(PyExc_RuntimeError, "the tracer could not flush the trace file (see stderr)");
    return NULL;
  }
  Py_RETURN_NONE;
}

/* range_push(name, args=None, domain=None): opens a range on this thread. */
static PyObject *np_range_push(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"name", "args", "domain", NULL};
  const char *name, *text = NULL, *domain = NULL;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zz:range_push", names, &name, &text, &domain))
    return NULL;
  rpd_rangePush(domain, name, text);
  Py_RETURN_NONE;
}

/* range_pop(): closes the innermost range of this thread (none open: no-op). */
static PyObject *np_range_pop(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  rpd_rangePop();
  Py_RETURN_NONE;
}

/* mark(name, args=None, domain=None): a zero-duration mark. */
static PyObject *np_mark(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"name", "args", "domain", NULL};
  const char *name, *text = NULL, *domain = NULL;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|zz:mark", names, &name, &text, &domain))
    return NULL;
  rpd_mark(domain, name, text);
  Py_RETURN_NONE;
}

/* signpost(header, message=None): a mark in domain "signpost" with the text
 * "header" or "header: message" (apiName "UserMarker", the text in args, like
 * every user mark, so that rpd export and rpd report show it). */
static PyObject *np_signpost(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"header", "message", NULL};
  const char *header, *message = NULL;
  char *text = NULL;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|z:signpost", names, &header, &message))
    return NULL;
  if (message && asprintf(&text, "%s: %s", header, message) < 0)
    return PyErr_NoMemory();
  rpd_mark(NP_SIGNPOST_DOMAIN, text ? text : header, NULL);
  free(text);
  Py_RETURN_NONE;
}

/* name_thread(name, native_id=0): names an OS thread in the trace (0: this
 * one), as rpd_name_thread. */
static PyObject *np_name_thread(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"name", "native_id", NULL};
  const char *name;
  int tid = 0;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "s|i:name_thread", names, &name, &tid))
    return NULL;
  if (!*name) {
    PyErr_SetString(PyExc_ValueError, "name_thread: the name is empty");
    return NULL;
  }
  if (rpd_name_thread(tid, name) != 0)
    return PyErr_NoMemory();
  Py_RETURN_NONE;
}

/* now(): the tracer's clock (CLOCK_MONOTONIC, nanoseconds). */
static PyObject *np_now(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return PyLong_FromLongLong((long long)rpd_now());
}

static PyMethodDef np_module_methods[] = {
    {"set_filename", (PyCFunction)(void (*)(void))np_set_filename, METH_VARARGS | METH_KEYWORDS,
     "set_filename(path, append=False): the trace file, before the first start"},
    {"start", np_start, METH_NOARGS, "start() -> int: one more reference to recording"},
    {"stop", (PyCFunction)(void (*)(void))np_stop, METH_VARARGS | METH_KEYWORDS,
     "stop(wait=True) -> int: one reference less; at 0, wait for the file unless wait=False"},
    {"flush", np_flush, METH_NOARGS, "flush(): commit everything recorded so far"},
    {"range_push", (PyCFunction)(void (*)(void))np_range_push, METH_VARARGS | METH_KEYWORDS,
     "range_push(name, args=None, domain=None): open a range on this thread"},
    {"range_pop", np_range_pop, METH_NOARGS, "range_pop(): close this thread's innermost range"},
    {"mark", (PyCFunction)(void (*)(void))np_mark, METH_VARARGS | METH_KEYWORDS,
     "mark(name, args=None, domain=None): a zero-duration mark"},
    {"signpost", (PyCFunction)(void (*)(void))np_signpost, METH_VARARGS | METH_KEYWORDS,
     "signpost(header, message=None): a mark 'header: message' in domain 'signpost'"},
    {"now", np_now, METH_NOARGS, "now() -> int: the trace clock in nanoseconds"},
    {"name_thread", (PyCFunction)(void (*)(void))np_name_thread, METH_VARARGS | METH_KEYWORDS,
     "name_thread(name, native_id=0): the thread's name in the trace (0: this thread)"},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef np_moduledef = {
    PyModuleDef_HEAD_INIT,
    "_nanoprobe",
    "nanoprobe's C core: tracer control, the profiler, the atomics tracker.",
    -1,
    np_module_methods,
    NULL,
    NULL,
    NULL,
    NULL};

PyMODINIT_FUNC PyInit__nanoprobe(void) {
  PyObject *m = PyModule_Create(&np_moduledef);
  if (!m)
    return NULL;
  if (PyModule_AddFunctions(m, np_profiler_methods) < 0 ||
      PyModule_AddFunctions(m, np_atomics_methods) < 0 || np_profiler_init(m) < 0 ||
      PyModule_AddStringConstant(m, "__version__", NANO_VERSION) < 0) {
    Py_DECREF(m);
    return NULL;
  }
  np_module = m;
  return m;
}

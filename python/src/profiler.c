/*
 * profiler.c: nanoprobe's Python profiler. Every Python function call (and,
 * by option, every call of a C function from Python) becomes a range in the
 * trace: domain "python", name "module.qualname", args "file:line". In line
 * mode every executed line inside a profiled function is a range of its own,
 * nested in the function's range, named "module.qualname:line" (args
 * "file:line"). C calls are named "module.name" or "type.name", args
 * "<built-in>".
 *
 * Design. The hot path is one lookup of a per-code-object record and one
 * rpd_rangePushInterned: the strings of a code object are interned with the
 * tracer once, on its first call, and kept in the code object's co_extra
 * slot. Every thread keeps a stack of the entries it pushed (thread-local, no
 * lock; the GIL serialises the shared state). An entry records the key of its
 * frame (the frame object on 3.11, the code object under sys.monitoring) and
 * what it pushed (a function range, a line range); a return event pops only
 * when it matches the top entry. That keeps ranges properly nested whatever
 * happens: frames that were running before the profiler was enabled return
 * without a push, generators and coroutines push on every resume and pop on
 * every yield, exceptions and sys.exit unwind frame by frame. disable() closes
 * the ranges still open on the calling thread at once; other threads close
 * theirs as their frames return ("draining") and then detach.
 *
 * Backends. Python 3.11: PyEval_SetProfile (function calls, C calls) and, in
 * line mode, PyEval_SetTrace (calls and lines), installed on every existing
 * thread and, through threading.setprofile, on threads started later.
 * Python 3.12+: sys.monitoring (PY_START/RESUME/THROW, PY_RETURN/YIELD/UNWIND,
 * LINE, CALL/C_RETURN/C_RAISE), which covers every thread of the interpreter
 * and passes code objects without materialising frame objects.
 *
 * Frames of nanoprobe's own package (the runner of `python -m nanoprobe`, the
 * Tracer and Profiler classes) and calls of the extension's own functions are
 * never recorded, so that Tracer.range_push/range_pop called from profiled
 * code keep their own nesting.
 */
#include "nanoprobe.h"

#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rpd.h>

#if PY_VERSION_HEX >= 0x030C0000
#define NP_MONITORING 1
#define np_code_get_extra PyUnstable_Code_GetExtra
#define np_code_set_extra PyUnstable_Code_SetExtra
#define np_request_extra_index PyUnstable_Eval_RequestCodeExtraIndex
#else
#define NP_MONITORING 0
#define np_code_get_extra _PyCode_GetExtra
#define np_code_set_extra _PyCode_SetExtra
#define np_request_extra_index _PyEval_RequestCodeExtraIndex
#endif

/* ---- per code object: interned strings --------------------------------- */

/* What a code object's ranges are called; lives in the code object's co_extra
 * slot and is freed with it. Handles are the tracer's (rpd_intern). */
struct np_code {
  uint32_t name;   /* "module.qualname"                                  */
  uint32_t args;   /* "file:firstline"                                   */
  int skip;        /* code of nanoprobe's own package: never recorded    */
  int firstline;   /* co_firstlineno                                     */
  char *label;     /* "module.qualname", for line names                  */
  char *file;      /* co_filename                                        */
  uint32_t nlines; /* entries of lines[] (pairs)                         */
  uint32_t *lines; /* per line (line - firstline): name, args handles    */
};

static Py_ssize_t np_extra_index = -1;
static char *np_internal_prefix; /* directory of the nanoprobe package */

/* co_extra free function: releases one struct np_code. */
static void np_code_free(void *p) {
  struct np_code *c = p;
  if (!c)
    return;
  free(c->label);
  free(c->file);
  free(c->lines);
  free(c);
}

/* Returns a malloc'ed copy of the UTF-8 text of `o` (a str), or of `dflt`
 * when `o` is not a str or cannot be encoded. NULL only when out of memory. */
static char *np_strdup_str(PyObject *o, const char *dflt) {
  const char *s = NULL;
  if (o && PyUnicode_Check(o)) {
    s = PyUnicode_AsUTF8(o);
    if (!s)
      PyErr_Clear();
  }
  return strdup(s ? s : dflt);
}

/* Builds and attaches the record of `co`, whose frame has the module globals
 * `globals` (may be NULL: module "?"). Returns it, or NULL (no exception set)
 * when out of memory or when the code object refuses extra data. */
static struct np_code *np_code_create(PyCodeObject *co, PyObject *globals) {
  struct np_code *c = calloc(1, sizeof *c);
  PyObject *modname = globals ? PyDict_GetItemString(globals, "__name__") : NULL;
  PyObject *qualname = PyObject_GetAttrString((PyObject *)co, "co_qualname");
  char *module = np_strdup_str(modname, "?");
  char *qual = np_strdup_str(qualname, "?");
  char *args = NULL;
  Py_XDECREF(qualname);
  if (!qualname)
    PyErr_Clear();
  if (!c || !module || !qual)
    goto fail;
  c->firstline = co->co_firstlineno;
  c->file = np_strdup_str(co->co_filename, "?");
  if (!c->file || asprintf(&c->label, "%s.%s", module, qual) < 0 ||
      asprintf(&args, "%s:%d", c->file, c->firstline) < 0) {
    c->label = NULL;
    args = NULL;
    goto fail;
  }
  c->skip =
      np_internal_prefix && strncmp(c->file, np_internal_prefix, strlen(np_internal_prefix)) == 0;
  c->name = rpd_intern(c->label);
  c->args = rpd_intern(args);
  if (np_code_set_extra((PyObject *)co, np_extra_index, c) < 0) {
    PyErr_Clear();
    goto fail;
  }
  free(module);
  free(qual);
  free(args);
  return c;
fail:
  free(module);
  free(qual);
  free(args);
  np_code_free(c);
  return NULL;
}

/* The record of `co`, created on first use. `frame` (3.11) gives the module
 * globals; without it the current frame's are used (sys.monitoring calls
 * back with the new frame current). NULL when it cannot be had. */
static struct np_code *np_code_info(PyCodeObject *co, PyFrameObject *frame) {
  void *extra = NULL;
  PyObject *globals;
  struct np_code *c;
  if (np_code_get_extra((PyObject *)co, np_extra_index, &extra) < 0) {
    PyErr_Clear();
    return NULL;
  }
  if (extra)
    return extra;
#if PY_VERSION_HEX >= 0x030D0000
  globals = frame ? PyFrame_GetGlobals(frame) : PyEval_GetFrameGlobals();
#else
  globals = frame ? PyFrame_GetGlobals(frame) : Py_XNewRef(PyEval_GetGlobals());
#endif
  if (!globals)
    PyErr_Clear();
  c = np_code_create(co, globals);
  Py_XDECREF(globals);
  return c;
}

/* The name and args handles of line `line` of `c` (out[0], out[1]), interned
 * on first use. Returns 0, or -1 when out of memory. */
static int np_line_handles(struct np_code *c, int line, uint32_t out[2]) {
  long idx = (long)line - c->firstline;
  char *name = NULL, *args = NULL;
  if (idx >= 0 && (unsigned long)idx < c->nlines && c->lines[2 * idx]) {
    out[0] = c->lines[2 * idx];
    out[1] = c->lines[2 * idx + 1];
    return 0;
  }
  if (asprintf(&name, "%s:%d", c->label, line) < 0)
    return -1;
  if (asprintf(&args, "%s:%d", c->file, line) < 0) {
    free(name);
    return -1;
  }
  out[0] = rpd_intern(name);
  out[1] = rpd_intern(args);
  free(name);
  free(args);
  if (idx < 0)
    return 0; /* before co_firstlineno: not cached, rare */
  if ((unsigned long)idx >= c->nlines) {
    uint32_t n = (uint32_t)idx + 32;
    uint32_t *p = realloc(c->lines, 2 * sizeof *p * n);
    if (!p)
      return 0;
    memset(p + 2 * c->nlines, 0, 2 * sizeof *p * (n - c->nlines));
    c->lines = p;
    c->nlines = n;
  }
  c->lines[2 * idx] = out[0];
  c->lines[2 * idx + 1] = out[1];
  return 0;
}

/* ---- per C function: interned names ------------------------------------- */

/* Open-addressing table PyMethodDef* -> name handle (C functions are named
 * once per definition). Guarded by the GIL. */
static struct {
  const PyMethodDef **keys;
  uint32_t *values;
  size_t cap, used;
} np_cnames;

/* Hash slot of `def` in a table of capacity `cap` (a power of two). */
static size_t np_cnames_slot(const PyMethodDef **keys, size_t cap, const PyMethodDef *def) {
  size_t i = ((uintptr_t)def >> 4) * 0x9E3779B97F4A7C15ull & (cap - 1);
  while (keys[i] && keys[i] != def)
    i = (i + 1) & (cap - 1);
  return i;
}

/* Doubles the table. Returns 0, or -1 when out of memory. */
static int np_cnames_grow(void) {
  size_t cap = np_cnames.cap ? 2 * np_cnames.cap : 256;
  const PyMethodDef **keys = calloc(cap, sizeof *keys);
  uint32_t *values = calloc(cap, sizeof *values);
  if (!keys || !values) {
    free(keys);
    free(values);
    return -1;
  }
  for (size_t i = 0; i < np_cnames.cap; i++) {
    if (np_cnames.keys[i]) {
      size_t j = np_cnames_slot(keys, cap, np_cnames.keys[i]);
      keys[j] = np_cnames.keys[i];
      values[j] = np_cnames.values[i];
    }
  }
  free(np_cnames.keys);
  free(np_cnames.values);
  np_cnames.keys = keys;
  np_cnames.values = values;
  np_cnames.cap = cap;
  return 0;
}

/* The name handle of C function `def` bound to `self` (a module, an object
 * or NULL) or defined by type `owner` (method descriptors): "module.name" or
 * "type.name". Returns 0 when out of memory. */
static uint32_t np_cname(const PyMethodDef *def, PyObject *self, PyTypeObject *owner) {
  size_t i;
  char *text = NULL;
  const char *prefix = NULL;
  uint32_t h;
  if (np_cnames.cap && np_cnames.keys[i = np_cnames_slot(np_cnames.keys, np_cnames.cap, def)])
    return np_cnames.values[i];
  if (2 * (np_cnames.used + 1) > np_cnames.cap && np_cnames_grow() < 0)
    return 0;
  if (owner)
    prefix = owner->tp_name;
  else if (self && PyModule_Check(self)) {
    prefix = PyModule_GetName(self);
    if (!prefix)
      PyErr_Clear();
  } else if (self && PyType_Check(self))
    prefix = ((PyTypeObject *)self)->tp_name;
  else if (self)
    prefix = Py_TYPE(self)->tp_name;
  if (prefix ? asprintf(&text, "%s.%s", prefix, def->ml_name) < 0
             : (text = strdup(def->ml_name)) == NULL)
    return 0;
  h = rpd_intern(text);
  free(text);
  i = np_cnames_slot(np_cnames.keys, np_cnames.cap, def);
  np_cnames.keys[i] = def;
  np_cnames.values[i] = h;
  np_cnames.used++;
  return h;
}

/* ---- per thread: the stack of pushed entries ---------------------------- */

#define NP_E_RANGE 1u /* a function (or C call) range is open for the entry */
#define NP_E_LINE 2u  /* a line range is open inside it                      */

struct np_entry {
  const void *key;      /* frame (3.11), code (monitoring) or C callable     */
  struct np_code *code; /* NULL for C calls                                  */
  uint32_t flags;
};

struct np_stack {
  struct np_entry *e;
  size_t n, cap;
};

/* initial-exec: the module is dlopen'ed, and the default model would call
 * __tls_get_addr on every access (3% of a profiled thread's time); 24 bytes
 * fit glibc's static TLS surplus for dlopen'ed objects. */
static _Thread_local struct np_stack np_tls __attribute__((tls_model("initial-exec")));
static pthread_key_t np_stack_key; /* frees a thread's array when it exits */

enum { NP_OFF, NP_ON, NP_DRAIN };
static int np_state = NP_OFF; /* NP_DRAIN: disabled, other threads still closing */
static int np_lines, np_ccalls;
static int np_nesting;     /* enables beyond the first (same settings), undone by disables */
static Py_ssize_t np_open; /* entries open over all threads */
static uint32_t np_domain;
static uint32_t np_builtin_args; /* "<built-in>": the args of C-call ranges */

/* Frees a thread's entry array at thread exit. */
static void np_stack_free(void *p) { free(p); }

/* Appends an entry to `s`. Returns it, or NULL when out of memory. */
static struct np_entry *np_stack_push(struct np_stack *s) {
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 64;
    struct np_entry *e = realloc(s->e, cap * sizeof *e);
    if (!e)
      return NULL;
    s->e = e;
    s->cap = cap;
    /* On failure the array leaks at thread exit; recording still works. */
    (void)pthread_setspecific(np_stack_key, e);
  }
  np_open++;
  return &s->e[s->n++];
}

/* Removes the top entry of `s` and closes the ranges it opened. */
static void np_stack_pop(struct np_stack *s) {
  struct np_entry *e = &s->e[--s->n];
  np_open--;
  if (e->flags & NP_E_LINE)
    rpd_rangePop();
  if (e->flags & NP_E_RANGE)
    rpd_rangePop();
}

/* A Python function with key `key` and record `c` starts or resumes. */
static void np_enter(struct np_stack *s, const void *key, struct np_code *c) {
  struct np_entry *e;
  if (!c || c->skip || !(e = np_stack_push(s)))
    return;
  e->key = key;
  e->code = c;
  e->flags = NP_E_RANGE;
  rpd_rangePushInterned(np_domain, c->name, c->args);
}

/* The function (or C call) with key `key` returns, yields or unwinds: pops
 * its entry when it is the top one (frames entered before enable have none). */
static void np_leave(struct np_stack *s, const void *key) {
  if (s->n && s->e[s->n - 1].key == key)
    np_stack_pop(s);
}

/* Line `line` of the function with key `key` starts: closes the previous
 * line range of that function and opens one for this line. A function with
 * no entry (the one that enabled the profiler, or one of its callers, once
 * everything above returned) gets an entry that carries only line ranges. */
static void np_line(struct np_stack *s, const void *key, PyCodeObject *co, PyFrameObject *frame,
                    int line) {
  struct np_entry *e;
  uint32_t h[2];
  if (s->n && s->e[s->n - 1].key == key)
    e = &s->e[s->n - 1];
  else if (s->n == 0) {
    struct np_code *c = np_code_info(co, frame);
    if (!c || c->skip || !(e = np_stack_push(s)))
      return;
    e->key = key;
    e->code = c;
    e->flags = 0;
  } else
    return;
  if (!e->code || np_line_handles(e->code, line, h) < 0)
    return;
  if (e->flags & NP_E_LINE)
    rpd_rangePop();
  rpd_rangePushInterned(np_domain, h[0], h[1]);
  e->flags |= NP_E_LINE;
}

/* A C function `callable` (PyCFunction, or a method descriptor under
 * sys.monitoring) is called from Python: pushes a range named after it,
 * except for the extension's own functions. */
static void np_enter_c(struct np_stack *s, PyObject *callable) {
  struct np_entry *e;
  uint32_t name;
  if (PyCFunction_Check(callable)) {
    PyCFunctionObject *f = (PyCFunctionObject *)callable;
    if (f->m_self == np_module)
      return;
    name = np_cname(f->m_ml, f->m_self, NULL);
  } else if (Py_IS_TYPE(callable, &PyMethodDescr_Type)) {
    PyMethodDescrObject *d = (PyMethodDescrObject *)callable;
    name = np_cname(d->d_method, NULL, PyDescr_TYPE(d));
  } else
    return;
  if (!name || !(e = np_stack_push(s)))
    return;
  e->key = callable;
  e->code = NULL;
  e->flags = NP_E_RANGE;
  rpd_rangePushInterned(np_domain, name, np_builtin_args);
}

/* Closes every range the calling thread's profiler entries hold open. */
static void np_close_thread(struct np_stack *s) {
  while (s->n)
    np_stack_pop(s);
}

/* fork: the child has only the forking thread, and its entries. */
static void np_atfork_child(void) { np_open = (Py_ssize_t)np_tls.n; }

/* ---- backend: PyEval_SetProfile / PyEval_SetTrace (Python 3.11) -------- */

#if !NP_MONITORING

/* CPython 3.11 declares _PyEval_SetProfile with PyAPI_DATA by mistake; it is
 * the function that sets the profile hook of any thread state. */
typedef int (*np_set_hook_fn)(PyThreadState *, Py_tracefunc, PyObject *);
#define np_set_profile_of ((np_set_hook_fn)(void *)&_PyEval_SetProfile)

static int np_profile_cb(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);
static int np_trace_cb(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg);

/* Whether this thread wants the profile hook (function calls when not in
 * line mode, C calls) and the trace hook (line mode). */
static int np_want_profile(void) { return np_state == NP_ON && (!np_lines || np_ccalls); }
static int np_want_trace(void) { return np_state == NP_ON && np_lines; }

/* Python frame `frame` starts or resumes. */
static void np_enter_frame(struct np_stack *s, PyFrameObject *frame) {
  PyCodeObject *co = PyFrame_GetCode(frame);
  np_enter(s, frame, np_code_info(co, frame));
  Py_DECREF(co);
}

/* Profile hook: function calls (unless in line mode) and C calls. Detaches
 * itself once unwanted and this thread has nothing left open. */
static int np_profile_cb(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
  struct np_stack *s = &np_tls;
  (void)obj;
  switch (what) {
  case PyTrace_CALL:
    if (np_state == NP_ON && !np_lines)
      np_enter_frame(s, frame);
    break;
  case PyTrace_RETURN:
    np_leave(s, frame);
    break;
  case PyTrace_C_CALL:
    if (np_state == NP_ON && np_ccalls)
      np_enter_c(s, arg);
    break;
  case PyTrace_C_RETURN:
  case PyTrace_C_EXCEPTION:
    np_leave(s, arg);
    break;
  }
  if (s->n == 0 && !np_want_profile() && np_set_profile_of(PyThreadState_Get(), NULL, NULL) < 0)
    PyErr_WriteUnraisable(NULL);
  return 0;
}

/* Trace hook (line mode): function calls and lines. */
static int np_trace_cb(PyObject *obj, PyFrameObject *frame, int what, PyObject *arg) {
  struct np_stack *s = &np_tls;
  (void)obj, (void)arg;
  switch (what) {
  case PyTrace_CALL:
    if (np_want_trace())
      np_enter_frame(s, frame);
    break;
  case PyTrace_RETURN:
    np_leave(s, frame);
    break;
  case PyTrace_LINE:
    if (np_want_trace()) {
      PyCodeObject *co = PyFrame_GetCode(frame);
      np_line(s, frame, co, frame, PyFrame_GetLineNumber(frame));
      Py_DECREF(co);
    }
    break;
  }
  if (s->n == 0 && !np_want_trace() && _PyEval_SetTrace(PyThreadState_Get(), NULL, NULL) < 0)
    PyErr_WriteUnraisable(NULL);
  return 0;
}

/* Installs the wanted hooks on thread state `ts`. Returns 0, or -1 with an
 * exception (an audit hook refused). */
static int np_attach(PyThreadState *ts) {
  if (np_want_profile() && np_set_profile_of(ts, np_profile_cb, NULL) < 0)
    return -1;
  if (np_want_trace() && _PyEval_SetTrace(ts, np_trace_cb, NULL) < 0)
    return -1;
  return 0;
}

/* Calls threading.setprofile(hook). Returns 0, or -1 with an exception. */
static int np_threading_setprofile(PyObject *hook) {
  PyObject *threading = PyImport_ImportModule("threading");
  PyObject *r;
  if (!threading)
    return -1;
  r = PyObject_CallMethod(threading, "setprofile", "O", hook);
  Py_DECREF(threading);
  Py_XDECREF(r);
  return r ? 0 : -1;
}

/* Starts the backend: hooks on every thread and on threads started later. */
static int np_backend_start(void) {
  PyThreadState *me = PyThreadState_Get();
  PyObject *hook = PyObject_GetAttrString(np_module, "_thread_hook");
  int rc;
  if (!hook)
    return -1;
  rc = np_threading_setprofile(hook);
  Py_DECREF(hook);
  if (rc < 0)
    return -1;
  for (PyThreadState *ts = PyInterpreterState_ThreadHead(PyThreadState_GetInterpreter(me)); ts;
       ts = PyThreadState_Next(ts))
    if (np_attach(ts) < 0)
      return -1;
  return 0;
}

/* Stops the backend on the calling thread (the others detach as they drain). */
static int np_backend_stop(void) {
  PyThreadState *ts = PyThreadState_Get();
  if (ts->c_profilefunc == np_profile_cb && np_set_profile_of(ts, NULL, NULL) < 0)
    return -1;
  if (ts->c_tracefunc == np_trace_cb && _PyEval_SetTrace(ts, NULL, NULL) < 0)
    return -1;
  np_state = np_open ? NP_DRAIN : NP_OFF;
  return np_threading_setprofile(Py_None);
}

/* Names the calling thread in the trace after its threading.Thread (the hook
 * runs once the thread is registered, so current_thread() is the Thread
 * object and creates nothing). A failure only leaves the OS name. */
static void np_name_current_thread(void) {
  PyObject *threading = PyImport_ImportModule("threading");
  PyObject *t = threading ? PyObject_CallMethod(threading, "current_thread", NULL) : NULL;
  PyObject *name = t ? PyObject_GetAttrString(t, "name") : NULL;
  const char *s = name && PyUnicode_Check(name) ? PyUnicode_AsUTF8(name) : NULL;
  if (s && *s)
    rpd_name_thread(0, s);
  Py_XDECREF(name);
  Py_XDECREF(t);
  Py_XDECREF(threading);
  PyErr_Clear();
}

/* _thread_hook(frame, event, arg): threading.setprofile's hook for threads
 * started while the profiler is on: replaces itself with the C hooks and
 * records the event it was called for. */
static PyObject *np_thread_hook(PyObject *self, PyObject *args) {
  PyObject *frame, *event, *arg;
  (void)self;
  if (!PyArg_ParseTuple(args, "OOO:_thread_hook", &frame, &event, &arg))
    return NULL;
  if (np_state != NP_ON) {
    if (np_set_profile_of(PyThreadState_Get(), NULL, NULL) < 0)
      return NULL;
    Py_RETURN_NONE;
  }
  if (np_set_profile_of(PyThreadState_Get(), NULL, NULL) < 0 || np_attach(PyThreadState_Get()) < 0)
    return NULL;
  np_name_current_thread();
  if (PyFrame_Check(frame) && PyUnicode_Check(event)) {
    if (PyUnicode_CompareWithASCIIString(event, "call") == 0)
      np_enter_frame(&np_tls, (PyFrameObject *)frame);
    else if (np_ccalls && PyUnicode_CompareWithASCIIString(event, "c_call") == 0)
      np_enter_c(&np_tls, arg);
  }
  Py_RETURN_NONE;
}

#define NP_BACKEND_NAME "setprofile"

/* ---- backend: sys.monitoring (Python 3.12+) ----------------------------- */

#else /* NP_MONITORING */

enum {
  NP_EV_PY_START,
  NP_EV_PY_RESUME,
  NP_EV_PY_THROW,
  NP_EV_PY_RETURN,
  NP_EV_PY_YIELD,
  NP_EV_PY_UNWIND,
  NP_EV_LINE,
  NP_EV_CALL,
  NP_EV_C_RETURN,
  NP_EV_C_RAISE,
  NP_EV_COUNT
};
static const char *const np_ev_names[NP_EV_COUNT] = {
    "PY_START",  "PY_RESUME", "PY_THROW", "PY_RETURN", "PY_YIELD",
    "PY_UNWIND", "LINE",      "CALL",     "C_RETURN",  "C_RAISE"};
static long np_ev_bits[NP_EV_COUNT]; /* sys.monitoring.events.<name> */
static int np_tool = -1;             /* the tool id held, -1 when none */
static PyObject *np_monitoring;      /* sys.monitoring */

static int np_mon_set_events(long mask);
static int np_mon_release(void);

/* After a pop while draining: releases the tool once nothing is open. */
static void np_mon_drained(void) {
  if (np_state == NP_DRAIN && np_open == 0 && np_mon_release() < 0)
    PyErr_WriteUnraisable(NULL);
}

/* PY_START, PY_RESUME, PY_THROW: (code, offset[, exception]). */
static PyObject *np_mon_start(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (np_state == NP_ON && nargs >= 1 && PyCode_Check(args[0]))
    np_enter(&np_tls, args[0], np_code_info((PyCodeObject *)args[0], NULL));
  Py_RETURN_NONE;
}

/* PY_RETURN, PY_YIELD, PY_UNWIND: (code, offset, value or exception). */
static PyObject *np_mon_return(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs >= 1) {
    np_leave(&np_tls, args[0]);
    np_mon_drained();
  }
  Py_RETURN_NONE;
}

/* LINE: (code, line). */
static PyObject *np_mon_line(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (np_state == NP_ON && np_lines && nargs >= 2 && PyCode_Check(args[0])) {
    long line = PyLong_AsLong(args[1]);
    if (line == -1 && PyErr_Occurred())
      return NULL;
    np_line(&np_tls, args[0], (PyCodeObject *)args[0], NULL, (int)line);
  }
  Py_RETURN_NONE;
}

/* CALL: (code, offset, callable, arg0). */
static PyObject *np_mon_call(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (np_state == NP_ON && np_ccalls && nargs >= 3)
    np_enter_c(&np_tls, args[2]);
  Py_RETURN_NONE;
}

/* C_RETURN, C_RAISE: (code, offset, callable, arg0). */
static PyObject *np_mon_creturn(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
  (void)self;
  if (nargs >= 3) {
    np_leave(&np_tls, args[2]);
    np_mon_drained();
  }
  Py_RETURN_NONE;
}

#define NP_FASTCALL(f) ((PyCFunction)(void (*)(void))(f))
static PyMethodDef np_mon_defs[NP_EV_COUNT] = {
    {"py_start", NP_FASTCALL(np_mon_start), METH_FASTCALL, NULL},
    {"py_resume", NP_FASTCALL(np_mon_start), METH_FASTCALL, NULL},
    {"py_throw", NP_FASTCALL(np_mon_start), METH_FASTCALL, NULL},
    {"py_return", NP_FASTCALL(np_mon_return), METH_FASTCALL, NULL},
    {"py_yield", NP_FASTCALL(np_mon_return), METH_FASTCALL, NULL},
    {"py_unwind", NP_FASTCALL(np_mon_return), METH_FASTCALL, NULL},
    {"line", NP_FASTCALL(np_mon_line), METH_FASTCALL, NULL},
    {"call", NP_FASTCALL(np_mon_call), METH_FASTCALL, NULL},
    {"c_return", NP_FASTCALL(np_mon_creturn), METH_FASTCALL, NULL},
    {"c_raise", NP_FASTCALL(np_mon_creturn), METH_FASTCALL, NULL}};

/* Looks up sys.monitoring and the event bits. Returns 0, or -1 with an exception. */
static int np_mon_init(void) {
  PyObject *events;
  if (np_monitoring)
    return 0;
  np_monitoring = Py_XNewRef(PySys_GetObject("monitoring"));
  if (!np_monitoring) {
    PyErr_SetString(PyExc_RuntimeError, "sys.monitoring is missing");
    return -1;
  }
  events = PyObject_GetAttrString(np_monitoring, "events");
  if (!events)
    return -1;
  for (int i = 0; i < NP_EV_COUNT; i++) {
    PyObject *v = PyObject_GetAttrString(events, np_ev_names[i]);
    np_ev_bits[i] = v ? PyLong_AsLong(v) : -1;
    Py_XDECREF(v);
    if (np_ev_bits[i] == -1) {
      Py_DECREF(events);
      if (!PyErr_Occurred())
        PyErr_Format(PyExc_RuntimeError, "sys.monitoring.events.%s is not an int", np_ev_names[i]);
      return -1;
    }
  }
  Py_DECREF(events);
  return 0;
}

/* sys.monitoring.set_events(tool, mask). Returns 0, or -1 with an exception. */
static int np_mon_set_events(long mask) {
  PyObject *r = PyObject_CallMethod(np_monitoring, "set_events", "il", np_tool, mask);
  Py_XDECREF(r);
  return r ? 0 : -1;
}

/* The event mask for the current mode; `draining` keeps only what pops. */
static long np_mon_mask(int draining) {
  long m = np_ev_bits[NP_EV_PY_RETURN] | np_ev_bits[NP_EV_PY_YIELD] | np_ev_bits[NP_EV_PY_UNWIND];
  if (!draining)
    m |= np_ev_bits[NP_EV_PY_START] | np_ev_bits[NP_EV_PY_RESUME] | np_ev_bits[NP_EV_PY_THROW];
  if (!draining && np_lines)
    m |= np_ev_bits[NP_EV_LINE];
  if (np_ccalls) /* C_RETURN and C_RAISE come with CALL */
    m |= np_ev_bits[NP_EV_CALL];
  return m;
}

/* Takes a free tool id (PROFILER_ID first) and registers the callbacks.
 * Returns 0, or -1 with an exception. */
static int np_mon_acquire(void) {
  static const int ids[] = {2, 3, 4, 5, 1};
  if (np_tool >= 0)
    return 0;
  for (size_t i = 0; i < sizeof ids / sizeof ids[0] && np_tool < 0; i++) {
    PyObject *r = PyObject_CallMethod(np_monitoring, "use_tool_id", "is", ids[i], "nanoprobe");
    if (r) {
      np_tool = ids[i];
      Py_DECREF(r);
    } else if (PyErr_ExceptionMatches(PyExc_ValueError))
      PyErr_Clear();
    else
      return -1;
  }
  if (np_tool < 0) {
    PyErr_SetString(PyExc_RuntimeError, "sys.monitoring: no free tool id for nanoprobe");
    return -1;
  }
  for (int i = 0; i < NP_EV_COUNT; i++) {
    PyObject *cb = PyCFunction_New(&np_mon_defs[i], NULL), *r;
    if (!cb)
      return -1;
    r = PyObject_CallMethod(np_monitoring, "register_callback", "ilO", np_tool, np_ev_bits[i], cb);
    Py_DECREF(cb);
    if (!r)
      return -1;
    Py_DECREF(r);
  }
  return 0;
}

/* Turns every event off and gives the tool id back. Returns 0, or -1 with an exception. */
static int np_mon_release(void) {
  PyObject *r;
  if (np_tool < 0)
    return 0;
  np_state = NP_OFF;
  if (np_mon_set_events(0) < 0)
    return -1;
  for (int i = 0; i < NP_EV_COUNT; i++) {
    r = PyObject_CallMethod(np_monitoring, "register_callback", "ilO", np_tool, np_ev_bits[i],
                            Py_None);
    if (!r)
      return -1;
    Py_DECREF(r);
  }
  r = PyObject_CallMethod(np_monitoring, "free_tool_id", "i", np_tool);
  Py_XDECREF(r);
  np_tool = -1;
  return r ? 0 : -1;
}

static int np_backend_start(void) {
  if (np_mon_init() < 0 || np_mon_acquire() < 0)
    return -1;
  return np_mon_set_events(np_mon_mask(0));
}

static int np_backend_stop(void) {
  if (np_open == 0)
    return np_mon_release();
  np_state = NP_DRAIN;
  return np_mon_set_events(np_mon_mask(1));
}

#define NP_BACKEND_NAME "sys.monitoring"

#endif /* NP_MONITORING */

/* ---- module functions ---------------------------------------------------- */

/* profiler_enable(lines=False, c_calls=False): starts profiling every thread.
 * Nests when already enabled with the same settings (the matching disable
 * does nothing); RuntimeError when enabled with other settings. */
static PyObject *np_profiler_enable(PyObject *self, PyObject *args, PyObject *kw) {
  static char *names[] = {"lines", "c_calls", NULL};
  int lines = 0, ccalls = 0;
  (void)self;
  if (!PyArg_ParseTupleAndKeywords(args, kw, "|pp:profiler_enable", names, &lines, &ccalls))
    return NULL;
  if (np_state == NP_ON) {
    if (lines != np_lines || ccalls != np_ccalls) {
      PyErr_Format(PyExc_RuntimeError,
                   "the nanoprobe profiler is already enabled with lines=%s, c_calls=%s",
                   np_lines ? "True" : "False", np_ccalls ? "True" : "False");
      return NULL;
    }
    np_nesting++;
    Py_RETURN_NONE;
  }
  if (!np_domain) {
    np_domain = rpd_intern("python");
    np_builtin_args = rpd_intern("<built-in>");
  }
  np_lines = lines;
  np_ccalls = ccalls;
  np_state = NP_ON;
  if (np_backend_start() < 0) {
    PyObject *type, *value, *tb;
    PyErr_Fetch(&type, &value, &tb);
    np_close_thread(&np_tls);
    if (np_backend_stop() < 0)
      PyErr_Clear();
    PyErr_Restore(type, value, tb);
    return NULL;
  }
  Py_RETURN_NONE;
}

/* profiler_disable(): undoes one enable; the last one closes the calling
 * thread's open ranges and stops profiling (other threads close theirs as
 * their frames return). A no-op when not enabled. */
static PyObject *np_profiler_disable(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  if (np_state != NP_ON)
    Py_RETURN_NONE;
  if (np_nesting > 0) {
    np_nesting--;
    Py_RETURN_NONE;
  }
  np_state = NP_DRAIN;
  np_close_thread(&np_tls);
  if (np_backend_stop() < 0)
    return NULL;
  Py_RETURN_NONE;
}

/* profiler_state() -> (enabled, open entries over all threads, backend). */
static PyObject *np_profiler_state(PyObject *self, PyObject *unused) {
  (void)self, (void)unused;
  return Py_BuildValue("(Nns)", PyBool_FromLong(np_state == NP_ON), np_open, NP_BACKEND_NAME);
}

/* _set_internal_prefix(path): frames whose file starts with path (the
 * package directory) are never recorded. */
static PyObject *np_set_internal_prefix(PyObject *self, PyObject *arg) {
  const char *p;
  char *copy;
  (void)self;
  if (!(p = PyUnicode_AsUTF8(arg)))
    return NULL;
  if (!(copy = strdup(p)))
    return PyErr_NoMemory();
  free(np_internal_prefix);
  np_internal_prefix = copy;
  Py_RETURN_NONE;
}

PyMethodDef np_profiler_methods[] = {
    {"profiler_enable", (PyCFunction)(void (*)(void))np_profiler_enable,
     METH_VARARGS | METH_KEYWORDS,
     "profiler_enable(lines=False, c_calls=False): profile every thread"},
    {"profiler_disable", np_profiler_disable, METH_NOARGS,
     "profiler_disable(): stop profiling; close this thread's open ranges"},
    {"profiler_state", np_profiler_state, METH_NOARGS,
     "profiler_state() -> (enabled, open entries, backend name)"},
    {"_set_internal_prefix", np_set_internal_prefix, METH_O,
     "_set_internal_prefix(path): never record frames of files under path"},
#if !NP_MONITORING
    {"_thread_hook", np_thread_hook, METH_VARARGS,
     "_thread_hook(frame, event, arg): threading.setprofile hook (internal)"},
#endif
    {NULL, NULL, 0, NULL}};

int np_profiler_init(PyObject *module) {
  static int done;
  int rc;
  (void)module;
  if (done)
    return 0;
  np_extra_index = np_request_extra_index(np_code_free);
  if (np_extra_index < 0) {
    PyErr_SetString(PyExc_RuntimeError, "nanoprobe: no code-object extra slot left");
    return -1;
  }
  if ((rc = pthread_key_create(&np_stack_key, np_stack_free)) != 0 ||
      (rc = pthread_atfork(NULL, NULL, np_atfork_child)) != 0) {
    errno = rc;
    PyErr_SetFromErrno(PyExc_OSError);
    return -1;
  }
  done = 1;
  return 0;
}

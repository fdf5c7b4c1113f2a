/*
 * nanoprobe.h: declarations shared by the C files of the extension module
 * nanoprobe._nanoprobe (module.c: tracer control and signposts, profiler.c:
 * the Python profiler, atomics.c: the atomics tracker read from Python).
 */
#ifndef NANOPROBE_EXT_H
#define NANOPROBE_EXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#ifdef Py_GIL_DISABLED
#error "nanoprobe's profiler relies on the GIL: free-threaded builds are not supported"
#endif

/* Method tables of profiler.c and atomics.c, NULL-terminated; module.c
 * concatenates them with its own. */
extern PyMethodDef np_profiler_methods[];
extern PyMethodDef np_atomics_methods[];

/* Prepares profiler.c (code-extra index). Returns 0, or -1 with an exception. */
int np_profiler_init(PyObject *module);

/* The module object, set once by module.c; the profiler uses it to leave
 * nanoprobe's own C functions out of C-call ranges. */
extern PyObject *np_module;

#endif /* NANOPROBE_EXT_H */

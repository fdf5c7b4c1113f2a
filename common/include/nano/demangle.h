/*
 * nano/demangle.h: C++ names demangled where the process has a demangler
 * (libstdc++'s __cxa_demangle, present in every C++ program), without
 * linking one.
 */
#ifndef NANO_DEMANGLE_H
#define NANO_DEMANGLE_H

/* The demangled form of an Itanium-mangled name ("_Z..."), malloc'd; NULL
 * for a name that is not mangled, one the demangler refuses, or where the
 * process has no demangler. */
char *nano_demangle(const char *name);

/* What a trace shows after the name of a kernel's instrumented twin. */
#define NANO_KERNEL_TWIN_MARK " [instrumented]"

/* The name a trace shows for GPU kernel `name`, malloc'd; NULL: `name` as
 * is. Demangled; a twin (nano/dh_format.h's naming rule) as the kernel the
 * program launched ("axpy(float*)" for "__nano_twin__Z4axpyPfPv": the
 * twin's trailing void* dropped) followed by NANO_KERNEL_TWIN_MARK, so that
 * traces keep the two apart under one name. */
char *nano_kernel_shown(const char *name);

#endif /* NANO_DEMANGLE_H */

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

#endif /* NANO_DEMANGLE_H */

/*
 * report.h: the parts of `rpd report` in files of their own.
 */
#ifndef NANO_RPD_REPORT_H
#define NANO_RPD_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "rpdtool.h"

#define RP_XSTR(x) #x
#define RP_STR(x) RP_XSTR(x)
#define RP_TOP 25 /* rows of the top tables */

/* ---- report.c: the page's helpers ---- */

/* Writes s HTML-escaped, as valid UTF-8 whatever the trace holds (a byte
 * that starts no well-formed sequence and control characters: U+FFFD). */
void rp_esc(FILE *f, const char *s);
/* A duration in ns in a readable unit; a table cell of it, sortable by ns. */
void rp_dur(FILE *f, double ns);
void rp_dur_cell(FILE *f, double ns);

/* ---- the sections in files of their own: each 0, or -1 after a message ---- */

/* report_calls.c: the call tree, its tables and flame graph. */
int rp_calls(const char *cmd, const struct rpdtool_trace *t, FILE *f);
/* report_analyses.c: instrumented dispatches, host atomics (and their library
 * callers), short calls summed. */
int rp_memory(const char *cmd, const struct rpdtool_trace *t, FILE *f);
int rp_atomics(const char *cmd, const struct rpdtool_trace *t, FILE *f);
int rp_atomic_callers(const char *cmd, const struct rpdtool_trace *t, FILE *f);
int rp_short_calls(const char *cmd, const struct rpdtool_trace *t, FILE *f);

/* report_timeline.c: writes the zoomable timeline for the trace spanning
 * [lo, hi]. 0, or -1 after a message. */
int rp_zoom_timeline(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t lo,
                     int64_t hi);

#endif

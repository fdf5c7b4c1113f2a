/*
 * report.h: the parts of `rpd report` in files of their own.
 */
#ifndef NANO_RPD_REPORT_H
#define NANO_RPD_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "rpdtool.h"

/* Writes the zoomable timeline (report_timeline.c) for the trace spanning
 * [lo, hi]. 0, or -1 after a message. */
int rp_zoom_timeline(const char *cmd, const struct rpdtool_trace *t, FILE *f, int64_t lo,
                     int64_t hi);

#endif

/*
 * analyzer.h: what the built-in analyzers (address_logger.c, heatmap.c,
 * memory_analysis.c) share. They see the runtime only through
 * nano/handler.h, like any plugin; these helpers are theirs alone.
 */
#ifndef NANO_ANALYZER_H
#define NANO_ANALYZER_H

#include <stdint.h>
#include <stdio.h>

#include "nano/handler.h"

/* The factories (nano/analyzers.h registers them by name). */
struct nano_handler *nano_address_logger_create(const struct nano_dispatch_info *info);
struct nano_handler *nano_heatmap_create(const struct nano_dispatch_info *info);
struct nano_handler *nano_kernel_timeline_create(const struct nano_dispatch_info *info);
struct nano_handler *nano_memory_analysis_create(const struct nano_dispatch_info *info);

/*
 * Reads option `key` of an analyzer's options ("page=4K:trace") as a size:
 * a decimal number with an optional K, M or G suffix (powers of 1024).
 * Returns 1 when given (*out set), 0 when absent, -1 when malformed (a
 * message naming the analyzer and the option on stderr).
 */
int nano_analyzer_size_option(const struct nano_dispatch_info *info, const char *analyzer,
                              const char *key, uint64_t *out);
/* 1 when the options hold the bare flag `key`, else 0. */
int nano_analyzer_flag_option(const struct nano_dispatch_info *info, const char *key);

/* Writes the fields every JSON result starts with (no braces):
 * "analyzer", "kernel", "kernel_name", "dispatch", "kernel_dispatch",
 * "backend", "arch", "wave_size". */
void nano_analyzer_json_head(FILE *out, const struct nano_dispatch_info *info,
                             const char *analyzer);

/* The trace's document of an analyzer's result: nano_analyzer_doc_begin
 * opens it (a memory stream holding '{' and the JSON head), the analyzer
 * writes its fields, nano_analyzer_doc_store closes it and stores it
 * (info->store). begin returns NULL when the trace takes no document or
 * memory is short: the analyzer then skips its fields. */
struct nano_analyzer_doc {
  char *text;
  size_t len;
};
FILE *nano_analyzer_doc_begin(const struct nano_dispatch_info *info, const char *analyzer,
                              struct nano_analyzer_doc *d);
void nano_analyzer_doc_store(const struct nano_dispatch_info *info, const char *analyzer, FILE *mem,
                             struct nano_analyzer_doc *d);

/* Writes "    <source line>\n    <caret under column>\n" when the source
 * line can be read; nothing otherwise. */
void nano_analyzer_source(FILE *out, const struct nano_dispatch_info *info, const char *file,
                          uint32_t line, uint32_t column);

/* The address-space class a record's accesses went to (NANO_DH_AS_*): the
 * site's, except that a generic site takes where its addresses pointed
 * (global when the device could not tell). Mixed records count as global. */
unsigned nano_analyzer_space(const struct nano_dh_site *site, const struct nano_dh_record *r);

#endif

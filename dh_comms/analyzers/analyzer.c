/*
 * analyzer.c: helpers of the built-in analyzers (analyzer.h).
 */
#include "analyzer.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "nano/json.h"
#include "nano/settings.h"

/* The value of `key` in "a=1:key=2:flag" (a pointer into options, up to the
 * next ':'), or NULL; *len gets its length. A bare key has value "". */
static const char *analyzer_option(const char *options, const char *key, size_t *len) {
  size_t klen = strlen(key);
  for (const char *p = options; p && *p;) {
    const char *end = strchr(p, ':');
    size_t n = end ? (size_t)(end - p) : strlen(p);
    if (n >= klen && strncmp(p, key, klen) == 0 && (n == klen || p[klen] == '=')) {
      const char *v = n == klen ? p + n : p + klen + 1;
      *len = n - (size_t)(v - p);
      return v;
    }
    p = end ? end + 1 : NULL;
  }
  return NULL;
}

int nano_analyzer_size_option(const struct nano_dispatch_info *info, const char *analyzer,
                              const char *key, uint64_t *out) {
  size_t len;
  const char *v = analyzer_option(info->options, key, &len);
  if (!v)
    return 0;
  char buf[32];
  if (len > 0 && len < sizeof buf) {
    memcpy(buf, v, len);
    buf[len] = 0;
    if (nano_parse_size(buf, 1, UINT64_MAX, out) == 0)
      return 1;
  }
  fprintf(stderr,
          "nanoprobe: %s: option %s=%.*s is not a size (a positive number, "
          "optionally with K, M or G)\n",
          analyzer, key, (int)len, v);
  return -1;
}

int nano_analyzer_flag_option(const struct nano_dispatch_info *info, const char *key) {
  size_t len;
  return analyzer_option(info->options, key, &len) != NULL;
}

void nano_analyzer_json_head(FILE *out, const struct nano_dispatch_info *info,
                             const char *analyzer) {
  fputs("\"analyzer\":", out);
  nano_json_str(out, analyzer);
  fputs(",\"kernel\":", out);
  nano_json_str(out, info->kernel);
  fputs(",\"kernel_name\":", out);
  nano_json_str(out, info->kernel_name);
  fprintf(out, ",\"dispatch\":%" PRIu64 ",\"kernel_dispatch\":%" PRIu64 ",\"backend\":",
          info->dispatch_id, info->kernel_dispatch);
  nano_json_str(out, info->backend);
  fputs(",\"arch\":", out);
  nano_json_str(out, info->arch);
  fprintf(out, ",\"wave_size\":%u,\"lost_records\":%" PRIu64, info->wave_size,
          nano_dispatch_lost(info));
}

void nano_analyzer_source(FILE *out, const struct nano_dispatch_info *info, const char *file,
                          uint32_t line, uint32_t column) {
  const char *text =
      info->source_line && file && *file && line ? info->source_line(info, file, line) : NULL;
  if (!text)
    return;
  fprintf(out, "    %s\n    ", text);
  /* The caret goes under the column, tabs kept so it lines up. */
  for (uint32_t i = 1; i < column && text[i - 1]; i++)
    fputc(text[i - 1] == '\t' ? '\t' : ' ', out);
  fputs("^\n", out);
}

unsigned nano_analyzer_space(const struct nano_dh_site *site, const struct nano_dh_record *r) {
  if (site->addrspace != NANO_DH_AS_GENERIC)
    return site->addrspace;
  return r->space == NANO_DH_SPACE_SHARED ? NANO_DH_AS_SHARED : NANO_DH_AS_GLOBAL;
}

FILE *nano_analyzer_doc_begin(const struct nano_dispatch_info *info, const char *analyzer,
                              struct nano_analyzer_doc *d) {
  *d = (struct nano_analyzer_doc){NULL, 0};
  FILE *mem = info->store ? open_memstream(&d->text, &d->len) : NULL;
  if (mem) {
    fputc('{', mem);
    nano_analyzer_json_head(mem, info, analyzer);
  }
  return mem;
}

void nano_analyzer_doc_store(const struct nano_dispatch_info *info, const char *analyzer, FILE *mem,
                             struct nano_analyzer_doc *d) {
  if (!mem)
    return;
  fputc('}', mem);
  if (fclose(mem) == 0)
    info->store(info, analyzer, d->text);
  free(d->text);
  d->text = NULL;
}

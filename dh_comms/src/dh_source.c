/*
 * dh_source.c: source lines for reports (nano/analyzers.h). Each file is read
 * once, split into lines, and kept for the life of the cache; a file that
 * cannot be read is remembered as such.
 */
#include "nano/analyzers.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Source files larger than this are not read for reports. */
#define SOURCE_MAX_BYTES (64u << 20)

struct source_file {
  char *path;
  char *text; /* the file with every '\n' replaced by '\0'; NULL: unreadable */
  char **lines;
  size_t nlines;
  struct source_file *next;
};

struct nano_source_cache {
  pthread_mutex_t lock;
  struct source_file *files;
};

struct nano_source_cache *nano_source_cache_create(void) {
  struct nano_source_cache *c = calloc(1, sizeof *c);
  if (c)
    pthread_mutex_init(&c->lock, NULL);
  return c;
}

void nano_source_cache_destroy(struct nano_source_cache *c) {
  if (!c)
    return;
  for (struct source_file *f = c->files, *next; f; f = next) {
    next = f->next;
    free(f->path);
    free(f->text);
    free(f->lines);
    free(f);
  }
  pthread_mutex_destroy(&c->lock);
  free(c);
}

/* Reads and splits path into f (f->text stays NULL on failure). */
static void source_read(struct source_file *f) {
  FILE *in = fopen(f->path, "rb");
  if (!in)
    return;
  char *text = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      if (cap >= SOURCE_MAX_BYTES)
        goto fail;
      size_t ncap = cap ? 2 * cap : 8192;
      char *t = realloc(text, ncap);
      if (!t)
        goto fail;
      text = t;
      cap = ncap;
    }
    size_t got = fread(text + len, 1, cap - len - 1, in);
    len += got;
    if (got == 0)
      break;
  }
  if (ferror(in))
    goto fail;
  fclose(in);
  text[len] = 0;
  size_t n = 1;
  for (size_t i = 0; i < len; i++)
    n += text[i] == '\n';
  char **lines = malloc(n * sizeof *lines);
  if (!lines) {
    free(text);
    return;
  }
  size_t k = 0;
  lines[k++] = text;
  for (size_t i = 0; i < len; i++)
    if (text[i] == '\n') {
      text[i] = 0;
      if (i > 0 && text[i - 1] == '\r')
        text[i - 1] = 0;
      lines[k++] = text + i + 1;
    }
  f->text = text;
  f->lines = lines;
  f->nlines = k;
  return;
fail:
  free(text);
  fclose(in);
}

const char *nano_source_cache_line(struct nano_source_cache *c, const char *file, uint32_t line) {
  if (!c || !file || !*file || line == 0)
    return NULL;
  pthread_mutex_lock(&c->lock);
  struct source_file *f = c->files;
  while (f && strcmp(f->path, file) != 0)
    f = f->next;
  if (!f) {
    f = calloc(1, sizeof *f);
    if (f)
      f->path = strdup(file);
    if (!f || !f->path) {
      free(f);
      pthread_mutex_unlock(&c->lock);
      return NULL;
    }
    source_read(f);
    f->next = c->files;
    c->files = f;
  }
  const char *text = f->text && line <= f->nlines ? f->lines[line - 1] : NULL;
  pthread_mutex_unlock(&c->lock);
  return text;
}

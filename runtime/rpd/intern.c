/* intern.c: interned strings (rpd_intern) (the tracer core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#include "nano/strtab.h"
#include <stdlib.h>
#include <string.h>

/* ---- interned strings (rpd_intern) ---------------------------------------- */

#define INTERN_CHUNK 4096u
#define INTERN_CHUNKS 4096u
static _Atomic(const char **) g_intern_chunks[INTERN_CHUNKS];
static uint32_t g_intern_count;
static _Atomic uint32_t g_intern_count_pub; /* g_intern_count, readable without the lock */
static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;

const char *rpd_intern_get(uint32_t h) {
  if (h == 0)
    return NULL;
  const char **chunk =
      atomic_load_explicit(&g_intern_chunks[(h - 1) / INTERN_CHUNK], memory_order_acquire);
  return chunk ? chunk[(h - 1) % INTERN_CHUNK] : NULL;
}

const char *rpdi_intern_str(uint32_t handle) {
  return handle <= g_intern_count_pub ? rpd_intern_get(handle) : NULL;
}

static const char *rpd_intern_at(const void *owner, uint32_t i) {
  (void)owner;
  return rpd_intern_get(i + 1);
}
/* string -> index (handle - 1), guarded by g_intern_lock */
static struct nano_strtab g_intern_tab = {.str = rpd_intern_at, NANO_STRTAB_LIBC};

RPDI_EXPORT uint32_t rpd_intern(const char *s) {
  if (!s || !*s)
    return 0;
  pthread_mutex_lock(&g_intern_lock);
  uint32_t result = 0;
  uint32_t found = nano_strtab_find(&g_intern_tab, s);
  if (found != NANO_STRTAB_NONE) {
    result = found + 1;
    goto out;
  }
  if (g_intern_count >= INTERN_CHUNK * INTERN_CHUNKS)
    goto out;
  uint32_t idx = g_intern_count;
  const char **chunk =
      atomic_load_explicit(&g_intern_chunks[idx / INTERN_CHUNK], memory_order_relaxed);
  if (!chunk) {
    chunk = calloc(INTERN_CHUNK, sizeof *chunk);
    if (!chunk)
      goto out;
    atomic_store_explicit(&g_intern_chunks[idx / INTERN_CHUNK], chunk, memory_order_release);
  }
  char *copy = strdup(s);
  if (!copy)
    goto out;
  chunk[idx % INTERN_CHUNK] = copy;
  if (nano_strtab_add(&g_intern_tab, copy) == NANO_STRTAB_NONE) {
    chunk[idx % INTERN_CHUNK] = NULL;
    free(copy);
    goto out;
  }
  /* publish the string before the handle can be used by another thread */
  atomic_thread_fence(memory_order_release);
  g_intern_count++;
  atomic_store_explicit(&g_intern_count_pub, g_intern_count, memory_order_release);
  result = idx + 1;
out:
  pthread_mutex_unlock(&g_intern_lock);
  if (!result)
    rpd_log("rpd_intern: out of memory; the string is recorded as empty");
  return result;
}

void rpd_intern_atfork(enum rpd_fork_phase phase) {
  if (phase == RPD_FORK_PREPARE)
    pthread_mutex_lock(&g_intern_lock);
  else if (phase == RPD_FORK_PARENT)
    pthread_mutex_unlock(&g_intern_lock);
  else
    pthread_mutex_init(&g_intern_lock, NULL); /* the strings stay: handles are process-wide */
}

/* intern.c: interned strings (rpd_intern) (the tracer core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#include <stdlib.h>
#include <string.h>
#include "nano/hash.h"

/* ---- interned strings (rpd_intern) ---------------------------------------- */

#define INTERN_CHUNK 4096u
#define INTERN_CHUNKS 4096u
static _Atomic(const char **) g_intern_chunks[INTERN_CHUNKS];
static uint32_t g_intern_count;
static _Atomic uint32_t g_intern_count_pub; /* g_intern_count, readable without the lock */
static pthread_mutex_t g_intern_lock = PTHREAD_MUTEX_INITIALIZER;
/* open-addressing map string -> handle, guarded by g_intern_lock */
static uint32_t *g_intern_map;
static uint32_t g_intern_map_size;


const char *rpd_intern_get(uint32_t h) {
  if (h == 0) return NULL;
  const char **chunk = atomic_load_explicit(&g_intern_chunks[(h - 1) / INTERN_CHUNK], memory_order_acquire);
  return chunk ? chunk[(h - 1) % INTERN_CHUNK] : NULL;
}

const char *rpdi_intern_str(uint32_t handle) {
  return handle <= g_intern_count_pub ? rpd_intern_get(handle) : NULL;
}

static int rpd_intern_grow_map(void) {
  uint32_t nsize = g_intern_map_size ? g_intern_map_size * 2 : 1024;
  uint32_t *nmap = calloc(nsize, sizeof *nmap);
  if (!nmap) return -1;
  for (uint32_t i = 0; i < g_intern_map_size; i++) {
    uint32_t h = g_intern_map[i];
    if (!h) continue;
    uint64_t k = nano_fnv64_str(rpd_intern_get(h)) & (nsize - 1);
    while (nmap[k]) k = (k + 1) & (nsize - 1);
    nmap[k] = h;
  }
  free(g_intern_map);
  g_intern_map = nmap;
  g_intern_map_size = nsize;
  return 0;
}

RPDI_EXPORT uint32_t rpd_intern(const char *s) {
  if (!s || !*s) return 0;
  pthread_mutex_lock(&g_intern_lock);
  uint32_t result = 0;
  if ((g_intern_count + 1) * 2 > g_intern_map_size && rpd_intern_grow_map() != 0) goto out;
  uint64_t k = nano_fnv64_str(s) & (g_intern_map_size - 1);
  while (g_intern_map[k]) {
    if (strcmp(rpd_intern_get(g_intern_map[k]), s) == 0) {
      result = g_intern_map[k];
      goto out;
    }
    k = (k + 1) & (g_intern_map_size - 1);
  }
  if (g_intern_count >= INTERN_CHUNK * INTERN_CHUNKS) goto out;
  uint32_t idx = g_intern_count;
  const char **chunk = atomic_load_explicit(&g_intern_chunks[idx / INTERN_CHUNK], memory_order_relaxed);
  if (!chunk) {
    chunk = calloc(INTERN_CHUNK, sizeof *chunk);
    if (!chunk) goto out;
    atomic_store_explicit(&g_intern_chunks[idx / INTERN_CHUNK], chunk, memory_order_release);
  }
  char *copy = strdup(s);
  if (!copy) goto out;
  chunk[idx % INTERN_CHUNK] = copy;
  /* publish the string before the handle can be used by another thread */
  atomic_thread_fence(memory_order_release);
  g_intern_count++;
  atomic_store_explicit(&g_intern_count_pub, g_intern_count, memory_order_release);
  result = idx + 1;
  g_intern_map[k] = result;
out:
  pthread_mutex_unlock(&g_intern_lock);
  if (!result) rpd_log("rpd_intern: out of memory; the string is recorded as empty");
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

/*
 * api_test.c: the tracker's C API and hooks, driven by hand-written sites
 * (linked with -lnano_tracker, no plugin): registration (lazy, by module,
 * twice), unique ids, exact counts across live and exited threads, reset,
 * count by name, iteration, dumps to streams and paths, names, fork, and the
 * exit dump switched off (ctest fails the test if "NANO TRACKER" appears).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nano/atomics.h"

static int failures;

#define CHECK(cond)                                                                      \
  do {                                                                                   \
    if (!(cond)) {                                                                       \
      fprintf(stderr, "api_test.c:%d: check failed: %s\n", __LINE__, #cond);            \
      failures++;                                                                        \
    }                                                                                    \
  } while (0)

#define SITE(kind_, line_)                                                               \
  { 0, (kind_), NANO_ORDER_RELAXED, 0, 8, (line_), 1, 0, "api_test", "api_test.c", NULL }

/* Sites without a module: the prelude's shape. */
static struct nano_site lone_add = SITE(NANO_KIND_FETCH_ADD, 10);
static struct nano_site lone_load = SITE(NANO_KIND_LOAD, 11);

/* A module table, as the pass emits it. */
static struct nano_site mod_sites[3] = {
    SITE(NANO_KIND_FETCH_SUB, 20), SITE(NANO_KIND_COMPARE_EXCHANGE, 21), SITE(NANO_KIND_STORE, 22)};
/* The store (third site) was inlined from a library function. */
static const struct nano_site_origin mod_origins[3] = {
    {NULL, NULL, 0, 0}, {NULL, NULL, 0, 0}, {"lib_store", "/usr/include/lib.h", 618, 5}};
static struct nano_site_module mod = {NANO_SITE_ABI, 3, mod_sites, "api_test.c", NULL, 0,
                                      mod_origins};

/* A second module, never registered explicitly: its first executed site
 * registers it (a constructor that has not run yet). It has ABI 1's layout,
 * which ends before `origins`: a binary built by an older plugin. */
struct abi1_module {
  uint32_t abi, count;
  struct nano_site *sites;
  const char *name;
  struct nano_site_module *next;
  uint64_t reserved;
};
static struct abi1_module late;
#define LATE ((struct nano_site_module *)&late)
static struct nano_site late_sites[2] = {
    {0, NANO_KIND_EXCHANGE, NANO_ORDER_RELAXED, 0, 8, 30, 1, 0, "late", "late.c", LATE},
    {0, NANO_KIND_FETCH_OR, NANO_ORDER_RELAXED, 0, 8, 31, 1, 0, "late", "late.c", LATE}};
static struct abi1_module late = {1, 2, late_sites, "late.c", NULL, 0};

static void *thread_events(void *arg) {
  long n = (long)arg;
  for (long i = 0; i < n; i++)
    __nano_atomic(&mod_sites[0]);
  return NULL;
}

/* A thread that counts, then waits (alive) until released. */
static pthread_mutex_t gate_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t gate_cond = PTHREAD_COND_INITIALIZER;
static int stage;

static void *thread_live(void *arg) {
  (void)arg;
  for (int i = 0; i < 1000; i++)
    __nano_atomic(&mod_sites[2]);
  pthread_mutex_lock(&gate_lock);
  stage = 1;
  pthread_cond_broadcast(&gate_cond);
  while (stage != 2)
    pthread_cond_wait(&gate_cond, &gate_lock);
  pthread_mutex_unlock(&gate_lock);
  for (int i = 0; i < 7; i++)
    __nano_atomic(&mod_sites[2]);
  return NULL;
}

struct visit_sum {
  uint64_t total;
  int sites;
};

static int visit_sum(const struct nano_site *site, uint64_t count, void *arg) {
  struct visit_sum *v = arg;
  CHECK(site->id != 0);
  CHECK(site->function != NULL && site->file != NULL);
  v->total += count;
  v->sites++;
  return 0;
}

static int visit_stop(const struct nano_site *site, uint64_t count, void *arg) {
  (void)site;
  (void)count;
  (*(int *)arg)++;
  return 42;
}

/* Reads the whole of f into a new string. */
static char *slurp(FILE *f) {
  rewind(f);
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  buf[n] = '\0';
  return buf;
}

int main(void) {
  /* Names. */
  CHECK(strcmp(nano_kind_name(NANO_KIND_FETCH_ADD), "__atomic_fetch_add") == 0);
  CHECK(nano_kind_name(NANO_KIND_COUNT) == NULL);
  for (unsigned k = 0; k < NANO_KIND_COUNT; k++)
    CHECK(nano_kind_from_name(nano_kind_name(k)) == (int)k);
  CHECK(nano_kind_from_name("__atomic_bogus") == -1);
  CHECK(strcmp(nano_order_name(NANO_ORDER_SEQ_CST), "seq_cst") == 0);
  CHECK(strcmp(nano_order_name(NANO_ORDER_UNKNOWN), "unknown") == 0);
  CHECK(nano_tracker_count("__atomic_bogus") == 0);

  /* Lazy registration of lone sites. */
  for (int i = 0; i < 5; i++)
    __nano_atomic(&lone_add);
  __nano_atomic(&lone_load);
  CHECK(lone_add.id != 0 && lone_load.id != 0 && lone_add.id != lone_load.id);
  CHECK(nano_tracker_count("__atomic_fetch_add") == 5);
  __nano_atomic_n(&lone_add, 4);
  __nano_atomic_n(&lone_add, 0);
  CHECK(nano_tracker_count("__atomic_fetch_add") == 9);
  CHECK(nano_tracker_count("__atomic_load") == 1);

  /* Module registration, twice: ids given once, all distinct. */
  __nano_register_module(&mod);
  uint32_t first = mod_sites[0].id;
  __nano_register_module(&mod);
  CHECK(mod_sites[0].id == first);
  CHECK(mod_sites[0].id && mod_sites[1].id && mod_sites[2].id);
  CHECK(mod_sites[1].id == mod_sites[0].id + 1 && mod_sites[2].id == mod_sites[1].id + 1);
  CHECK(mod_sites[0].id != lone_add.id && mod_sites[0].id != lone_load.id);

  /* A site of an unregistered module registers the whole module. */
  __nano_atomic(&late_sites[1]);
  CHECK(late_sites[0].id != 0 && late_sites[1].id != 0);
  CHECK(nano_tracker_count("__atomic_fetch_or") == 1);
  CHECK(nano_tracker_count("__atomic_exchange") == 0);

  /* Origins: kept for the inlined site only, none for ABI 1 tables. */
  struct nano_site_origin o = {NULL, NULL, 0, 0};
  CHECK(nano_tracker_site_origin(mod_sites[2].id, &o) == 1);
  CHECK(o.function && strcmp(o.function, "lib_store") == 0 && o.file &&
        strcmp(o.file, "/usr/include/lib.h") == 0 && o.line == 618 && o.column == 5);
  CHECK(nano_tracker_site_origin(mod_sites[0].id, &o) == 0);
  CHECK(nano_tracker_site_origin(late_sites[0].id, &o) == 0);
  CHECK(nano_tracker_site_origin(lone_add.id, &o) == 0);
  CHECK(nano_tracker_site_origin(0, &o) == 0 && nano_tracker_site_origin(99999, &o) == 0);

  /* Exited threads: exact. */
  pthread_t t[8];
  for (int i = 0; i < 8; i++)
    CHECK(pthread_create(&t[i], NULL, thread_events, (void *)100000L) == 0);
  for (int i = 0; i < 8; i++)
    pthread_join(t[i], NULL);
  CHECK(nano_tracker_count("__atomic_fetch_sub") == 800000);

  /* A live thread's counts are visible while it runs; reset keeps exactness. */
  pthread_t live;
  CHECK(pthread_create(&live, NULL, thread_live, NULL) == 0);
  pthread_mutex_lock(&gate_lock);
  while (stage != 1)
    pthread_cond_wait(&gate_cond, &gate_lock);
  pthread_mutex_unlock(&gate_lock);
  CHECK(nano_tracker_count("__atomic_store") == 1000);
  nano_tracker_reset();
  CHECK(nano_tracker_count("__atomic_store") == 0);
  CHECK(nano_tracker_count("__atomic_fetch_sub") == 0);
  CHECK(nano_tracker_count("__atomic_fetch_add") == 0);
  pthread_mutex_lock(&gate_lock);
  stage = 2;
  pthread_cond_broadcast(&gate_cond);
  pthread_mutex_unlock(&gate_lock);
  pthread_join(live, NULL);
  CHECK(nano_tracker_count("__atomic_store") == 7);

  /* Iteration. */
  for (int i = 0; i < 3; i++)
    __nano_atomic(&lone_add);
  struct visit_sum v = {0, 0};
  CHECK(nano_tracker_foreach_site(visit_sum, &v) == 0);
  CHECK(v.total == 10 && v.sites == 7);
  int calls = 0;
  CHECK(nano_tracker_foreach_site(visit_stop, &calls) == 42 && calls == 1);

  /* Dumps. */
  FILE *f = tmpfile();
  CHECK(f != NULL);
  CHECK(nano_tracker_dump(f, NANO_FORMAT_TEXT) == 0);
  CHECK(strcmp(slurp(f), "NANO TRACKER {\n  __atomic_store: 7\n  __atomic_fetch_add: 3\n}\n") == 0);
  FILE *g = tmpfile();
  CHECK(g != NULL);
  CHECK(nano_tracker_dump(g, NANO_FORMAT_JSON) == 0);
  const char *json = slurp(g);
  CHECK(strstr(json, "\"format\": \"nanoprobe-atomics\"") != NULL);
  CHECK(strstr(json, "\"total\": 10") != NULL);
  CHECK(strstr(json, "{\"kind\": \"__atomic_store\", \"order\": \"relaxed\", \"size\": 8, \"flags\": [], "
                     "\"function\": \"api_test\", \"file\": \"api_test.c\", \"line\": 22, \"column\": 1, "
                     "\"inlined_from\": {\"function\": \"lib_store\", \"file\": \"/usr/include/lib.h\", "
                     "\"line\": 618, \"column\": 5}, \"instances\": 1, \"count\": 7}") != NULL);
  CHECK(nano_tracker_dump(f, (enum nano_format)9) == -1 && errno == EINVAL);
  fclose(f);
  fclose(g);
  char path[] = "/tmp/nano-api-test-XXXXXX";
  int fd = mkstemp(path);
  CHECK(fd >= 0);
  close(fd);
  CHECK(nano_tracker_dump_path(path, NANO_FORMAT_TEXT) == 0);
  FILE *p = fopen(path, "r");
  CHECK(p != NULL);
  CHECK(strstr(slurp(p), "  __atomic_store: 7\n") != NULL);
  fclose(p);
  unlink(path);

  /* fork: the child starts from zero. */
  pid_t pid = fork();
  if (pid == 0) {
    int ok = nano_tracker_count("__atomic_store") == 0;
    __nano_atomic(&lone_load);
    ok = ok && nano_tracker_count("__atomic_load") == 1;
    nano_tracker_set_exit_dump(0);
    exit(ok ? 0 : 1);
  }
  int status;
  CHECK(pid > 0 && waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
  CHECK(nano_tracker_count("__atomic_store") == 7);

  nano_tracker_set_exit_dump(0);
  if (failures)
    fprintf(stderr, "api_test: %d check(s) failed\n", failures);
  else
    printf("api_test: all checks passed\n");
  return failures != 0;
}

/*
 * cache.c: `nanoprobe cache build` and `nanoprobe cache list`: kernel caches,
 * folders of device code objects built with the plugin, whose kernels
 * replace the kernels of programs that were not (NANO_KERNEL_CACHE,
 * `nanoprobe run -c DIR`; runtime/rpd/README.md "Programs not built with
 * the plugin").
 *
 *   build: each source file among the compiler's arguments is compiled on
 *          its own by `nanoprobe cc` (the plugin for the compiler's LLVM)
 *          with --cuda-device-only -c into DIR/<source name>.o: the device
 *          code objects (an offload bundle from hipcc), no host code, no
 *          link. The caller's own -c and -o are dropped.
 *   list:  what kerneldb reads in each file of the folders: targets and
 *          kernels, each a twin (what -i runs), an original with its twin in
 *          the cache, or a plain kernel (what runs without -i).
 */
#define _GNU_SOURCE /* asprintf */
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "kerneldb.h"
#include "nanoprobe.h"

/* Exit status for bad options, as the other commands'. */
#define CACHE_EXIT_USAGE 2

static const char cache_help[] =
    "usage: nanoprobe cache build -o DIR [--] COMPILER ARGS... SOURCES...\n"
    "       nanoprobe cache list DIR...\n"
    "build: compiles each source (.hip, .cu, .cpp, .cc, .cxx, .c among ARGS) with the\n"
    "       plugin into DIR/<source>.o, device code only (no host code, no link),\n"
    "       for nanoprobe run -c DIR / NANO_KERNEL_CACHE=DIR.\n"
    "list:  the targets and kernels of every file in DIR that kerneldb reads:\n"
    "       twins (run with -i), originals with their twins, plain kernels.\n"
    "  example: nanoprobe cache build -o cache -- hipcc --offload-arch=gfx90a -O2 lib/*.hip\n";

static int cache_is_source(const char *a) {
  static const char *const ext[] = {".hip", ".cu", ".cpp", ".cc", ".cxx", ".c"};
  const char *dot = a[0] != '-' ? strrchr(a, '.') : NULL;
  for (size_t i = 0; dot && i < sizeof ext / sizeof ext[0]; i++)
    if (!strcmp(dot, ext[i]))
      return 1;
  return 0;
}

/* Runs argv; its exit status (127 when it cannot start). */
static int cache_spawn(char **argv) {
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "nanoprobe cache: fork: %s\n", strerror(errno));
    return 1;
  }
  if (pid == 0) {
    execv(argv[0], argv);
    fprintf(stderr, "nanoprobe cache: %s: %s\n", argv[0], strerror(errno));
    _exit(127);
  }
  int st;
  while (waitpid(pid, &st, 0) < 0)
    if (errno != EINTR)
      return 1;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

static int cache_build(int argc, char **argv) {
  const char *dir = NULL;
  int i = 0;
  for (; i < argc; i++) {
    if (!strcmp(argv[i], "-o") && i + 1 < argc)
      dir = argv[++i];
    else if (!strcmp(argv[i], "--")) {
      i++;
      break;
    } else
      break;
  }
  if (!dir || i >= argc) {
    fputs(cache_help, stderr);
    return CACHE_EXIT_USAGE;
  }
  if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
    fprintf(stderr, "nanoprobe cache build: -o %s: %s\n", dir, strerror(errno));
    return CACHE_EXIT_USAGE;
  }
  char self[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    fprintf(stderr, "nanoprobe cache build: cannot find this nanoprobe\n");
    return 1;
  }
  self[n] = 0;
  int nsources = 0;
  for (int j = i; j < argc; j++)
    nsources += cache_is_source(argv[j]);
  if (!nsources) {
    fprintf(stderr, "nanoprobe cache build: no source file (.hip, .cu, .cpp, .cc, .cxx, .c) "
                    "among the compiler's arguments\n");
    return CACHE_EXIT_USAGE;
  }
  /* nanoprobe cc -- COMPILER ARGS(without sources, -c, -o X) -c SRC -o OUT
   * --cuda-device-only NULL */
  char **cmd = calloc((size_t)(argc - i) + 10, sizeof *cmd);
  if (!cmd)
    return 1;
  int rc = 0;
  for (int s = i + 1; s < argc && rc == 0; s++) {
    if (!cache_is_source(argv[s]))
      continue;
    int k = 0;
    cmd[k++] = self;
    cmd[k++] = "cc";
    cmd[k++] = "--";
    cmd[k++] = argv[i];
    for (int j = i + 1; j < argc; j++) {
      if (!strcmp(argv[j], "-o")) {
        j++;
        continue;
      }
      if (!strcmp(argv[j], "-c") || cache_is_source(argv[j]))
        continue;
      cmd[k++] = argv[j];
    }
    const char *base = strrchr(argv[s], '/') ? strrchr(argv[s], '/') + 1 : argv[s];
    char *out;
    if (asprintf(&out, "%s/%s.o", dir, base) < 0) {
      rc = 1;
      break;
    }
    cmd[k++] = "--cuda-device-only";
    cmd[k++] = "-c";
    cmd[k++] = argv[s];
    cmd[k++] = "-o";
    cmd[k++] = out;
    cmd[k] = NULL;
    rc = cache_spawn(cmd);
    if (rc == 0)
      printf("%s\n", out);
    else
      fprintf(stderr, "nanoprobe cache build: %s failed (exit %d)\n", argv[s], rc);
    free(out);
  }
  free(cmd);
  return rc;
}

static int cache_name_cmp(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Prints what file holds; 0, or 1 when kerneldb cannot read it. */
static int cache_list_file(const char *path) {
  kdb *db;
  char err[512];
  if (kdb_open(path, &db, err, sizeof err) != 0) {
    printf("%s: not read: %s\n", path, err);
    return 1;
  }
  printf("%s:\n", path);
  for (size_t c = 0; c < kdb_code_object_count(db); c++) {
    const kdb_code_object *co = kdb_code_object_at(db, c);
    printf("  %s\n", co->target_id);
    for (size_t i = 0; i < kdb_kernel_count(db); i++) {
      const kdb_kernel *k = kdb_kernel_at(db, i);
      if (k->co != co)
        continue;
      const char *what = k->original ? "twin of" : k->twin ? "original, with its twin" : "plain";
      printf("    %-24s %s\n", what, k->original ? k->original->demangled : k->demangled);
    }
  }
  kdb_close(db);
  return 0;
}

static int cache_list(int argc, char **argv) {
  if (argc < 1) {
    fputs(cache_help, stderr);
    return CACHE_EXIT_USAGE;
  }
  int rc = 0;
  for (int i = 0; i < argc; i++) {
    DIR *d = opendir(argv[i]);
    if (!d) {
      fprintf(stderr, "nanoprobe cache list: %s: %s\n", argv[i], strerror(errno));
      rc = CACHE_EXIT_USAGE;
      continue;
    }
    char **names = NULL;
    size_t n = 0;
    for (struct dirent *e; (e = readdir(d));) {
      char *path, **grown;
      struct stat st;
      if (e->d_name[0] == '.' || asprintf(&path, "%s/%s", argv[i], e->d_name) < 0)
        continue;
      if (stat(path, &st) != 0 || !S_ISREG(st.st_mode) ||
          !(grown = realloc(names, (n + 1) * sizeof *names))) {
        free(path);
        continue;
      }
      names = grown;
      names[n++] = path;
    }
    closedir(d);
    qsort(names, n, sizeof *names, cache_name_cmp);
    for (size_t j = 0; j < n; j++) {
      cache_list_file(names[j]);
      free(names[j]);
    }
    free(names);
  }
  return rc;
}

int nanoprobe_cmd_cache(int argc, char **argv) {
  if (argc < 2 || !strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    fputs(cache_help, argc < 2 ? stderr : stdout);
    return argc < 2 ? CACHE_EXIT_USAGE : 0;
  }
  if (!strcmp(argv[1], "build"))
    return cache_build(argc - 2, argv + 2);
  if (!strcmp(argv[1], "list"))
    return cache_list(argc - 2, argv + 2);
  fprintf(stderr, "nanoprobe cache: unknown command '%s' (build or list)\n", argv[1]);
  return CACHE_EXIT_USAGE;
}

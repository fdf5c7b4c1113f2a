/*
 * cc.c: `nanoprobe cc -- COMPILER ARGS...` and `nanoprobe cflags`: the plugin
 * that matches a compiler. A plugin runs only inside the LLVM it is built for
 * (llvm-pass/HostLLVM.cpp refuses any other), so the compiler's LLVM major
 * version is read from `COMPILER --version` ("... clang version 22.1.8 ...",
 * also hipcc's "AMD clang version 17.0.0") and the plugin of that version is
 * picked among those nanoprobe has (locate.c).
 */
#define _GNU_SOURCE /* asprintf, strchrnul */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nanoprobe.h"

/* At most this many plugin builds are looked at (one per LLVM version). */
#define CC_MAX_PLUGINS 16
/* nanoprobe's header folders (build tree: two). */
#define CC_MAX_INCLUDE_DIRS 4
/* Status of a compiler that cannot be found or run, as a shell's. */
#define CC_EXIT_NOT_FOUND 127

static const char cc_help[] =
    "usage: nanoprobe cc [--] COMPILER ARGS...\n"
    "Runs COMPILER (clang-15, clang++-22, hipcc, ...) with ARGS and the nanoprobe\n"
    "plugin built for the compiler's LLVM (-fpass-plugin=...), plus -I for\n"
    "nanoprobe's headers (rpd.h, nano/kernel.h, nano/atomics.h). The exit status\n"
    "is the compiler's; a compiler with no matching plugin is refused (exit 2).\n"
    "  example: nanoprobe cc -- clang-22 -O2 -g app.c -o app\n";

static const char cflags_help[] =
    "usage: nanoprobe cflags [--compiler COMPILER] [--plugin]\n"
    "Prints the flags that build with nanoprobe: -fpass-plugin= with the plugin\n"
    "for COMPILER's LLVM, and -I for nanoprobe's headers.\n"
    "  --compiler C   the compiler (default: $CC, else clang-<the first plugin's LLVM>)\n"
    "  --plugin       print only the plugin's path\n"
    "  example: clang-22 $(nanoprobe cflags --compiler clang-22) -O2 app.c -o app\n";

/* The LLVM major version of `compiler`, from its --version output; 0 after
 * saying why when it is not a clang, -CC_EXIT_NOT_FOUND when it cannot run. */
static int cc_llvm_major(const char *compiler) {
  char found[4096];
  if (!nanoprobe_which(compiler, found, sizeof found)) {
    fprintf(stderr, "nanoprobe: compiler '%s' not found\n", compiler);
    return -CC_EXIT_NOT_FOUND;
  }
  int fd[2];
  if (pipe(fd) != 0) {
    fprintf(stderr, "nanoprobe: pipe: %s\n", strerror(errno));
    return 0;
  }
  fflush(NULL);
  pid_t pid = fork();
  if (pid < 0) {
    fprintf(stderr, "nanoprobe: fork: %s\n", strerror(errno));
    close(fd[0]);
    close(fd[1]);
    return 0;
  }
  if (pid == 0) {
    dup2(fd[1], STDOUT_FILENO);
    dup2(fd[1], STDERR_FILENO);
    close(fd[0]);
    close(fd[1]);
    execlp(compiler, compiler, "--version", (char *)NULL);
    _exit(CC_EXIT_NOT_FOUND);
  }
  close(fd[1]);
  char out[8192];
  size_t n = 0;
  ssize_t r;
  while (n < sizeof out - 1 && (r = read(fd[0], out + n, sizeof out - 1 - n)) != 0) {
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0)
      break;
    n += (size_t)r;
  }
  out[n] = '\0';
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  const char *v = strstr(out, "clang version ");
  if (v)
    return atoi(v + strlen("clang version "));
  fprintf(stderr,
          "nanoprobe: '%s' is not a clang (its --version says: %.*s); the plugin needs "
          "clang, clang++ or hipcc (gcc: --include=nano/prelude.h, see prelude/README.md, "
          "installed as share/doc/nanoprobe/prelude.md)\n",
          compiler, (int)strcspn(out, "\n"), out);
  return 0;
}

/* The plugin for `compiler` in buf. Returns 0, or an exit status after
 * saying why there is none. */
static int cc_plugin_for(const char *compiler, char *buf, size_t len) {
  int major = cc_llvm_major(compiler);
  if (major < 0)
    return -major;
  if (major == 0)
    return 2;
  struct nanoprobe_plugin p[CC_MAX_PLUGINS];
  int n = nanoprobe_plugins(p, CC_MAX_PLUGINS);
  char have[256] = "";
  for (int i = 0; i < n; i++) {
    if (p[i].major == major) {
      snprintf(buf, len, "%s", p[i].path);
      return 0;
    }
    size_t used = strlen(have);
    snprintf(have + used, sizeof have - used, "%s%d", used ? ", " : "", p[i].major);
  }
  fprintf(stderr, "nanoprobe: '%s' is LLVM %d; nanoprobe has plugins for LLVM %s only\n", compiler,
          major, n ? have : "(none found)");
  return 2;
}

/* The default compiler of cflags: $CC, else clang-<major of the first plugin>. */
static const char *cc_default_compiler(char *buf, size_t len) {
  const char *cc = getenv("CC");
  if (cc && *cc)
    return cc;
  struct nanoprobe_plugin p[CC_MAX_PLUGINS];
  if (nanoprobe_plugins(p, CC_MAX_PLUGINS) < 1)
    return "clang";
  snprintf(buf, len, "clang-%d", p[0].major);
  return buf;
}

int nanoprobe_cmd_cflags(int argc, char **argv) {
  const char *compiler = NULL;
  int plugin_only = 0;
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      fputs(cflags_help, stdout);
      return 0;
    } else if (!strcmp(argv[i], "--compiler") && i + 1 < argc) {
      compiler = argv[++i];
    } else if (!strncmp(argv[i], "--compiler=", 11)) {
      compiler = argv[i] + 11;
    } else if (!strcmp(argv[i], "--plugin")) {
      plugin_only = 1;
    } else {
      fprintf(stderr, "nanoprobe cflags: unknown or incomplete option '%s'\n%s", argv[i],
              cflags_help);
      return 2;
    }
  }
  char dflt[64], plugin[PATH_MAX], inc[2 * PATH_MAX];
  if (!compiler)
    compiler = cc_default_compiler(dflt, sizeof dflt);
  int rc = cc_plugin_for(compiler, plugin, sizeof plugin);
  if (rc)
    return rc;
  if (plugin_only) {
    printf("%s\n", plugin);
    return 0;
  }
  printf("-fpass-plugin=%s", plugin);
  if (nanoprobe_include_dirs(inc, sizeof inc))
    for (char *d = strtok(inc, ":"); d; d = strtok(NULL, ":"))
      printf(" -I%s", d);
  putchar('\n');
  return 0;
}

int nanoprobe_cmd_cc(int argc, char **argv) {
  int first = 1;
  if (argc > 1 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    fputs(cc_help, stdout);
    return 0;
  }
  if (argc > 1 && !strcmp(argv[1], "--"))
    first = 2;
  if (first >= argc) {
    fprintf(stderr, "nanoprobe cc: no compiler given\n%s", cc_help);
    return 2;
  }
  char plugin[PATH_MAX], inc[2 * PATH_MAX], flag[PATH_MAX + 32];
  int rc = cc_plugin_for(argv[first], plugin, sizeof plugin);
  if (rc)
    return rc;
  int nargs = argc - first;
  char **args = calloc((size_t)nargs + CC_MAX_INCLUDE_DIRS + 2, sizeof *args);
  if (!args) {
    fprintf(stderr, "nanoprobe cc: out of memory\n");
    return 1;
  }
  int a = 0;
  args[a++] = argv[first];
  snprintf(flag, sizeof flag, "-fpass-plugin=%s", plugin);
  args[a++] = flag;
  char *dirs[CC_MAX_INCLUDE_DIRS] = {0};
  int ndirs = 0;
  if (nanoprobe_include_dirs(inc, sizeof inc))
    for (char *d = strtok(inc, ":"); d && ndirs < CC_MAX_INCLUDE_DIRS; d = strtok(NULL, ":")) {
      if (asprintf(&dirs[ndirs], "-I%s", d) < 0)
        dirs[ndirs] = NULL;
      if (dirs[ndirs])
        args[a++] = dirs[ndirs++];
    }
  for (int i = first + 1; i < argc; i++)
    args[a++] = argv[i];
  args[a] = NULL;
  execvp(args[0], args);
  fprintf(stderr, "nanoprobe cc: cannot run '%s': %s\n", args[0], strerror(errno));
  return CC_EXIT_NOT_FOUND;
}

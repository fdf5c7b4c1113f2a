/*
 * create.c: `rpd create [--force] FILE`: creates an empty RPD file with the
 * version-3 schema (tables, indexes, views, metadata rows) of nano/rpdfile.h.
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include <nano/rpdfile.h>

#include "commands.h"
#include "rpdtool.h"

static const char rpd_create_help[] =
    "usage: rpd create [--force] FILE\n"
    "Creates FILE as an empty RPD trace (rocmProfileData schema version 3).\n"
    "  -f, --force   replace an existing FILE instead of refusing\n";

int rpd_cmd_create(int argc, char **argv) {
  static const struct option opts[] = {{"help", no_argument, NULL, 'h'},
                                       {"force", no_argument, NULL, 'f'},
                                       {NULL, 0, NULL, 0}};
  int force = 0, c;
  optind = 0;
  opterr = 0;
  while ((c = getopt_long(argc, argv, ":hf", opts, NULL)) != -1) {
    if (c == 'h') {
      fputs(rpd_create_help, stdout);
      return RPDTOOL_EXIT_OK;
    }
    if (c == 'f') {
      force = 1;
      continue;
    }
    return rpdtool_usage("create", "unknown option '%s'", argv[optind - 1]);
  }
  if (argc - optind != 1)
    return rpdtool_usage("create", "%s", argc - optind ? "expects one FILE" : "missing FILE");
  const char *path = argv[optind];
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode)) return rpdtool_err("create", "%s: is a directory", path);
    if (!force) return rpdtool_err("create", "%s: exists (use --force to replace it)", path);
  } else if (errno != ENOENT) {
    return rpdtool_err("create", "%s: %s", path, strerror(errno));
  }
  char err[NANO_RPDFILE_ERRLEN];
  sqlite3 *db = NULL;
  if (nano_rpdfile_open_write(path, force, &db, err, sizeof err) != NANO_RPDFILE_OK)
    return rpdtool_err("create", "%s", err);
  if (nano_rpdfile_close(db, path, err, sizeof err) != NANO_RPDFILE_OK)
    return rpdtool_err("create", "%s", err);
  return RPDTOOL_EXIT_OK;
}

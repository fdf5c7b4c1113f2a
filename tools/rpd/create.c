/*
 * create.c: `rpd create [--force] FILE`: creates an empty RPD file with the
 * version-3 schema (tables, indexes, views, metadata rows) of nano/rpdfile.h.
 */
#include <errno.h>
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
  int force = 0;
  const struct rpdtool_opt opts[] = {{"force", 'f', NULL, &force}, {NULL, 0, NULL, NULL}};
  const char *path;
  int ret = rpdtool_parse_args(argc, argv, rpd_create_help, opts, &path);
  if (ret != RPDTOOL_PARSED)
    return ret;
  struct stat sb;
  if (stat(path, &sb) == 0) {
    if (S_ISDIR(sb.st_mode))
      return rpdtool_err("create", "%s: is a directory", path);
    if (!force)
      return rpdtool_err("create", "%s: exists (use --force to replace it)", path);
  } else if (errno != ENOENT) {
    return rpdtool_err("create", "%s: %s", path, strerror(errno));
  }
  char err[NANO_RPDFILE_ERRLEN];
  sqlite3 *db = NULL;
  if (nano_rpdfile_open_write(path, force, NANO_RPDFILE_SYNC_NORMAL, &db, err, sizeof err) !=
      NANO_RPDFILE_OK)
    return rpdtool_err("create", "%s", err);
  if (nano_rpdfile_close(db, path, err, sizeof err) != NANO_RPDFILE_OK)
    return rpdtool_err("create", "%s", err);
  return RPDTOOL_EXIT_OK;
}

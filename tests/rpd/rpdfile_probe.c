/*
 * rpdfile_probe.c: drives nano_rpdfile for the tests.
 *   rpdfile_probe read FILE    open for reading; prints "version N" or the error
 *   rpdfile_probe write FILE   open for writing; prints "ok" or the error
 *   rpdfile_probe session FILE takes a session; prints "session N"
 *   rpdfile_probe schema       prints the schema SQL
 * Exit status: 0 on success, else the negated error code.
 */
#include <stdio.h>
#include <string.h>

#include "nano/rpdfile.h"

int main(int argc, char **argv) {
  char err[NANO_RPDFILE_ERRLEN] = "";
  sqlite3 *db = NULL;
  int rc, version = 0;
  if (argc == 2 && strcmp(argv[1], "schema") == 0) {
    fputs(nano_rpdfile_schema_sql(), stdout);
    return 0;
  }
  if (argc != 3) {
    fprintf(stderr, "usage: %s read|write|session FILE | schema\n", argv[0]);
    return 100;
  }
  if (strcmp(argv[1], "read") == 0) {
    rc = nano_rpdfile_open_read(argv[2], 1, &db, &version, err, sizeof err);
    if (rc == 0) printf("version %d\n", version);
  } else if (strcmp(argv[1], "write") == 0) {
    rc = nano_rpdfile_open_write(argv[2], 0, NANO_RPDFILE_SYNC_NORMAL, &db, err, sizeof err);
    if (rc == 0) printf("ok\n");
  } else if (strcmp(argv[1], "session") == 0) {
    rc = nano_rpdfile_open_write(argv[2], 0, NANO_RPDFILE_SYNC_NORMAL, &db, err, sizeof err);
    int64_t s = 0;
    if (rc == 0) rc = nano_rpdfile_begin_session(db, argv[2], &s, err, sizeof err);
    if (rc == 0) printf("session %lld\n", (long long)s);
  } else {
    fprintf(stderr, "unknown command %s\n", argv[1]);
    return 100;
  }
  if (rc != 0) printf("error: %s\n", err);
  if (db && nano_rpdfile_close(db, argv[2], err, sizeof err) != 0) {
    printf("error: %s\n", err);
    return 99;
  }
  return -rc;
}

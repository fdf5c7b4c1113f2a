/*
 * spill_code.c: the overflow file's delta code of ring slots (spill.c's
 * spill_delta_put / spill_delta_get, built in here from spill.c itself) as a
 * filter, for test_rpd.py's case spill_code to check against its own model
 * of the format table in spill.c:
 *
 *   spill_code encode         slots (64-byte units) on stdin -> code on stdout
 *   spill_code decode N       code on stdin -> N slots on stdout; exit 1 and
 *                             what is wrong on stderr when the code is not N
 *                             slots' code
 */
#include "../../runtime/rpd/spill.c"

/* All of stdin in *buf; its bytes, or -1. */
static long read_all(unsigned char **buf) {
  size_t cap = 1 << 16, len = 0;
  *buf = malloc(cap);
  for (;;) {
    if (!*buf)
      return -1;
    size_t k = fread(*buf + len, 1, cap - len, stdin);
    len += k;
    if (len < cap)
      return ferror(stdin) ? -1 : (long)len;
    *buf = realloc(*buf, cap *= 2);
  }
}

int main(int argc, char **argv) {
  unsigned char *in;
  long len = read_all(&in);
  if (len < 0 || argc < 2) {
    fprintf(stderr, "usage: spill_code encode|decode N < input\n");
    return 2;
  }
  if (strcmp(argv[1], "encode") == 0) {
    size_t n = (size_t)len / SPILL_SLOT_BYTES;
    uint64_t *slots = malloc(n * SPILL_SLOT_BYTES + 1);
    unsigned char *code = malloc(n * SPILL_SLOT_MAX + 8);
    if (!slots || !code || len % SPILL_SLOT_BYTES)
      return 2;
    memcpy(slots, in, (size_t)len);
    size_t k = spill_delta_put(slots, n, code);
    int rc = fwrite(code, 1, k, stdout) == k ? 0 : 2;
    free(slots);
    free(code);
    free(in);
    return rc;
  }
  if (strcmp(argv[1], "decode") == 0 && argc == 3) {
    size_t n = strtoul(argv[2], NULL, 10);
    uint64_t *slots = malloc(n * SPILL_SLOT_BYTES + 1);
    if (!slots)
      return 2;
    const char *why = spill_delta_get(in, (size_t)len, slots, n);
    int rc = why ? 1 : fwrite(slots, SPILL_SLOT_BYTES, n, stdout) == n ? 0 : 2;
    if (why)
      fprintf(stderr, "%s\n", why);
    free(slots);
    free(in);
    return rc;
  }
  fprintf(stderr, "usage: spill_code encode|decode N < input\n");
  return 2;
}

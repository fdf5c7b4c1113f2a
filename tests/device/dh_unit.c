/*
 * Unit tests of libnano_dh's decoders on hand-built bytes: a valid wave64
 * record, each malformation nano_dh_decode must reject (with a message naming
 * the defect), incomplete records, and site-table blobs, valid and broken.
 */
#include "nano/dh_comms.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void unit_put(unsigned char *p, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* A record of a wave64 with lanes 1, 5 and 63 active. */
static size_t unit_record(unsigned char *r) {
  uint64_t exec = 1ull << 1 | 1ull << 5 | 1ull << 63;
  memset(r, 0, 128);
  unit_put(r + NANO_DH_HDR_OFF_BYTES, NANO_DH_HDR_SIZE + 24, 4);
  unit_put(r + NANO_DH_HDR_OFF_VERSION, NANO_DH_VERSION, 2);
  r[NANO_DH_HDR_OFF_LANES] = 3;
  r[NANO_DH_HDR_OFF_WAVESIZE] = 64;
  unit_put(r + NANO_DH_HDR_OFF_SITE, 0xabcd000000000007ull, 8);
  unit_put(r + NANO_DH_HDR_OFF_EXEC, exec, 8);
  unit_put(r + NANO_DH_HDR_OFF_TIME, 12345, 8);
  unit_put(r + NANO_DH_HDR_OFF_BLOCK, 7, 4);
  unit_put(r + NANO_DH_HDR_OFF_BLOCK + 4, 8, 4);
  unit_put(r + NANO_DH_HDR_OFF_BLOCK + 8, 9, 4);
  unit_put(r + NANO_DH_HDR_OFF_WAVE, 2, 4);
  unit_put(r + NANO_DH_HDR_OFF_HWID, 0x55, 4);
  unit_put(r + NANO_DH_HDR_OFF_SIZE, 4, 4);
  unit_put(r + NANO_DH_HDR_OFF_BLOCKDIM, 256, 2);
  unit_put(r + NANO_DH_HDR_OFF_BLOCKDIM + 2, 1, 2);
  unit_put(r + NANO_DH_HDR_OFF_BLOCKDIM + 4, 1, 2);
  for (int i = 0; i < 3; i++)
    unit_put(r + NANO_DH_HDR_SIZE + 8 * i, 0x1000 + 4 * i, 8);
  return NANO_DH_HDR_SIZE + 24;
}

static void unit_records(void) {
  unsigned char r[128];
  struct nano_dh_record d;
  char err[128];
  size_t n = unit_record(r);
  CHECK(nano_dh_decode(r, n, &d, err, sizeof err) == (long)n, "%s", err);
  CHECK(d.lanes == 3 && d.wave_size == 64 && d.site == 0xabcd000000000007ull, "header");
  CHECK(d.lane[0] == 1 && d.lane[1] == 5 && d.lane[2] == 63, "lanes %u %u %u", d.lane[0],
        d.lane[1], d.lane[2]);
  CHECK(d.addr[0] == 0x1000 && d.addr[2] == 0x1008, "addresses");
  CHECK(d.block[0] == 7 && d.block[2] == 9 && d.wave == 2 && d.hw_id == 0x55, "ids");
  CHECK(d.block_dim[0] == 256 && d.size == 4 && d.time == 12345, "dims, size, time");
  CHECK(nano_dh_record_thread(&d, 2) == 2 * 64 + 63, "thread %u", nano_dh_record_thread(&d, 2));
  CHECK(nano_dh_decode(r, n - 8, &d, err, sizeof err) == 0, "truncated record is incomplete");
  r[0] = r[1] = r[2] = r[3] = 0;
  CHECK(nano_dh_decode(r, n, &d, err, sizeof err) == 0, "zero word 0 is incomplete");

  struct {
    int off, bytes;
    uint64_t v;
    const char *msg;
  } bad[] = {
      {NANO_DH_HDR_OFF_VERSION, 2, 9, "unsupported version"},
      {NANO_DH_HDR_OFF_WAVESIZE, 1, 16, "bad wave size"},
      {NANO_DH_HDR_OFF_LANES, 1, 0, "bad lane count"},
      {NANO_DH_HDR_OFF_BYTES, 4, NANO_DH_HDR_SIZE + 16, "size does not match lane count"},
      {NANO_DH_HDR_OFF_EXEC, 8, 3, "exec mask does not match lane count"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unit_record(r);
    unit_put(r + bad[i].off, bad[i].v, bad[i].bytes);
    err[0] = 0;
    CHECK(nano_dh_decode(r, sizeof r, &d, err, sizeof err) == -1, "case %zu accepted", i);
    CHECK(strstr(err, bad[i].msg), "case %zu: message '%s', want '%s'", i, err, bad[i].msg);
  }
  unit_record(r);
  r[NANO_DH_HDR_OFF_WAVESIZE] = 32;
  CHECK(nano_dh_decode(r, sizeof r, &d, err, sizeof err) == -1 && strstr(err, "exec mask"),
        "lane 63 in a wave32: %s", err);
}

/* A site table with 2 sites followed by 8 bytes of padding. */
static size_t unit_sites_blob(unsigned char *b) {
  const char str[] = "\0kern\0dir/k.hip";
  size_t n = NANO_DH_SITES_HDR_SIZE + 2 * NANO_DH_SITE_SIZE + sizeof str;
  memset(b, 0, 256);
  memcpy(b, NANO_DH_SITES_MAGIC, 8);
  unit_put(b + 8, NANO_DH_SITES_VERSION, 4);
  unit_put(b + 12, 0x1234abcd, 4);
  unit_put(b + 16, 2, 4);
  unit_put(b + 20, sizeof str, 4);
  for (int i = 0; i < 2; i++) {
    unsigned char *e = b + NANO_DH_SITES_HDR_SIZE + i * NANO_DH_SITE_SIZE;
    unit_put(e, 1, 4);
    unit_put(e + 4, 6, 4);
    unit_put(e + 8, 40 + (unsigned)i, 4);
    unit_put(e + 12, 3, 4);
    e[16] = i ? NANO_DH_KIND_STORE : NANO_DH_KIND_LOAD;
    e[17] = NANO_DH_AS_GLOBAL;
    unit_put(e + 20, 4, 4);
  }
  memcpy(b + NANO_DH_SITES_HDR_SIZE + 2 * NANO_DH_SITE_SIZE, str, sizeof str);
  return (n + 7) / 8 * 8 + 8;
}

static void unit_sites(void) {
  unsigned char b[256];
  char err[256];
  size_t n = unit_sites_blob(b);
  struct nano_dh_sites *s = nano_dh_sites_create();
  CHECK(s, "out of memory");
  CHECK(nano_dh_sites_add_blob(s, b, n, "blob", err, sizeof err) == 1, "%s", err);
  CHECK(nano_dh_sites_count(s) == 2, "count %zu", nano_dh_sites_count(s));
  const struct nano_dh_site *x = nano_dh_sites_find(s, 0x1234abcd00000001ull);
  CHECK(x && strcmp(x->kernel, "kern") == 0 && strcmp(x->file, "dir/k.hip") == 0 &&
            x->line == 41 && x->column == 3 && x->kind == NANO_DH_KIND_STORE && x->size == 4,
        "site 1");
  CHECK(!nano_dh_sites_find(s, 0x1234abcd00000002ull), "no site 2");
  nano_dh_sites_destroy(s);

  struct {
    int off, bytes;
    uint64_t v;
    const char *msg;
  } bad[] = {
      {0, 1, 'X', "bad magic"},
      {8, 4, 2, "unsupported version"},
      {16, 4, 200, "truncated"},
      {NANO_DH_SITES_HDR_SIZE, 4, 900, "string offset out of range"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    unit_sites_blob(b);
    unit_put(b + bad[i].off, bad[i].v, bad[i].bytes);
    s = nano_dh_sites_create();
    err[0] = 0;
    CHECK(nano_dh_sites_add_blob(s, b, n, "input.co", err, sizeof err) == -1, "case %zu", i);
    CHECK(strstr(err, bad[i].msg) && strstr(err, "input.co"), "case %zu: '%s'", i, err);
    nano_dh_sites_destroy(s);
  }
  s = nano_dh_sites_create();
  CHECK(nano_dh_sites_add_elf(s, "/nonexistent/x.co", err, sizeof err) == -1 &&
            strstr(err, "/nonexistent/x.co"),
        "missing file: '%s'", err);
  CHECK(nano_dh_sites_add_elf(s, "/proc/self/status", err, sizeof err) == -1 &&
            strstr(err, "not an ELF file"),
        "not ELF: '%s'", err);
  nano_dh_sites_destroy(s);
}

static void unit_buffer(void) {
  CHECK(!nano_dh_buffer_create(100, 0, 0), "capacity not a power of two accepted");
  CHECK(!nano_dh_buffer_create(64, 0, 0), "capacity below 128 accepted");
  struct nano_dh_buffer *b = nano_dh_buffer_create(256, NANO_DH_FLAG_DROP, 0);
  CHECK(b, "create");
  const unsigned char *d = nano_dh_buffer_desc(b);
  uint32_t magic;
  memcpy(&magic, d + NANO_DH_DESC_OFF_MAGIC, 4);
  CHECK(magic == NANO_DH_MAGIC, "magic %x", magic);
  char err[64];
  CHECK(nano_dh_buffer_drain(b, NULL, NULL, err, sizeof err) == 0, "empty drain");
  nano_dh_buffer_destroy(b);
}

int main(void) {
  unit_records();
  unit_sites();
  unit_buffer();
  printf("ok dh_comms decoders\n");
  return 0;
}

/*
 * dh_decode.c: the one decoder of dh_comms records (layout: nano/dh_format.h,
 * dh_comms/README.md). Reads fields byte by byte in little-endian order, so it
 * does not depend on the alignment of the caller's buffer.
 */
#include "nano/dh_comms.h"

#include <stdio.h>
#include <string.h>

_Static_assert(NANO_DH_HDR_OFF_RESERVED + 2 == NANO_DH_HDR_SIZE, "header layout");
_Static_assert(NANO_DH_DESC_OFF_MAXSPINS + 4 + 8 == NANO_DH_DESC_SIZE, "descriptor layout");

/* Little-endian reads at p. */
static uint16_t dhdec_u16(const unsigned char *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t dhdec_u32(const unsigned char *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static uint64_t dhdec_u64(const unsigned char *p) {
  return (uint64_t)dhdec_u32(p) | (uint64_t)dhdec_u32(p + 4) << 32;
}

/* Formats an error into errmsg when the caller gave one; returns -1. */
static long dhdec_fail(char *errmsg, size_t errlen, const char *msg, unsigned long v) {
  if (errmsg && errlen)
    snprintf(errmsg, errlen, "dh_comms record: %s (%lu)", msg, v);
  return -1;
}

long nano_dh_decode(const void *buf, size_t len, struct nano_dh_record *out, char *errmsg,
                    size_t errlen) {
  const unsigned char *p = buf;
  if (len < NANO_DH_HDR_SIZE)
    return 0;
  uint32_t bytes = dhdec_u32(p + NANO_DH_HDR_OFF_BYTES);
  if (bytes == 0)
    return 0;
  uint16_t version = dhdec_u16(p + NANO_DH_HDR_OFF_VERSION);
  if (version != NANO_DH_VERSION)
    return dhdec_fail(errmsg, errlen, "unsupported version", version);
  unsigned lanes = p[NANO_DH_HDR_OFF_LANES];
  unsigned wave_size = p[NANO_DH_HDR_OFF_WAVESIZE];
  if (wave_size != 1 && wave_size != 32 && wave_size != 64)
    return dhdec_fail(errmsg, errlen, "bad wave size", wave_size);
  if (lanes == 0 || lanes > wave_size)
    return dhdec_fail(errmsg, errlen, "bad lane count", lanes);
  if (bytes != NANO_DH_HDR_SIZE + 8u * lanes)
    return dhdec_fail(errmsg, errlen, "size does not match lane count", bytes);
  uint64_t exec = dhdec_u64(p + NANO_DH_HDR_OFF_EXEC);
  if ((unsigned)__builtin_popcountll(exec) != lanes ||
      (wave_size < 64 && (exec >> wave_size) != 0))
    return dhdec_fail(errmsg, errlen, "exec mask does not match lane count", lanes);
  if (len < bytes)
    return 0;
  memset(out, 0, sizeof *out);
  out->bytes = bytes;
  out->version = version;
  out->lanes = (uint8_t)lanes;
  out->wave_size = (uint8_t)wave_size;
  out->site = dhdec_u64(p + NANO_DH_HDR_OFF_SITE);
  out->exec = exec;
  out->time = dhdec_u64(p + NANO_DH_HDR_OFF_TIME);
  for (int i = 0; i < 3; i++) {
    out->block[i] = dhdec_u32(p + NANO_DH_HDR_OFF_BLOCK + 4 * i);
    out->block_dim[i] = dhdec_u16(p + NANO_DH_HDR_OFF_BLOCKDIM + 2 * i);
  }
  out->wave = dhdec_u32(p + NANO_DH_HDR_OFF_WAVE);
  out->hw_id = dhdec_u32(p + NANO_DH_HDR_OFF_HWID);
  out->size = dhdec_u32(p + NANO_DH_HDR_OFF_SIZE);
  unsigned i = 0;
  for (unsigned l = 0; l < 64; l++)
    if (exec >> l & 1) {
      out->lane[i] = (uint8_t)l;
      out->addr[i] = dhdec_u64(p + NANO_DH_HDR_SIZE + 8 * i);
      i++;
    }
  return (long)bytes;
}

uint32_t nano_dh_record_thread(const struct nano_dh_record *r, unsigned i) {
  return r->wave * r->wave_size + r->lane[i];
}

const char *nano_dh_kind_name(unsigned kind) {
  switch (kind) {
  case NANO_DH_KIND_LOAD: return "load";
  case NANO_DH_KIND_STORE: return "store";
  case NANO_DH_KIND_ATOMIC: return "atomic";
  default: return "unknown";
  }
}

const char *nano_dh_addrspace_name(unsigned as) {
  switch (as) {
  case NANO_DH_AS_GENERIC: return "generic";
  case NANO_DH_AS_GLOBAL: return "global";
  case NANO_DH_AS_SHARED: return "shared";
  case NANO_DH_AS_CONSTANT: return "constant";
  default: return "unknown";
  }
}

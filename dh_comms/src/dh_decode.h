/*
 * dh_decode.h (private to libnano_dh): the decoder of dh_comms records, as
 * an inline function, so that the drain's loop (dh_buffer.c) runs it without
 * a call per record; nano_dh_decode and nano_dh_decode_compact (dh_decode.c)
 * are its public forms. Fields are read as little-endian at any alignment,
 * so the decoder does not depend on the alignment of the caller's buffer.
 */
#ifndef NANO_DH_DECODE_H
#define NANO_DH_DECODE_H

#include "nano/dh_comms.h"

#include <endian.h>
#include <stdio.h>
#include <string.h>

_Static_assert(NANO_DH_HDR_OFF_BASE + 8 == NANO_DH_HDR_SIZE, "header layout");
_Static_assert(NANO_DH_HDR_SIZE % 8 == 0, "records are multiples of 8 bytes");

/* Little-endian reads at p, any alignment: one load each (memcpy is how C
 * says an unaligned load; the byte swap vanishes on little-endian hosts). */
static inline uint16_t dhdec_u16(const unsigned char *p) {
  uint16_t v;
  memcpy(&v, p, sizeof v);
  return le16toh(v);
}
static inline uint32_t dhdec_u32(const unsigned char *p) {
  uint32_t v;
  memcpy(&v, p, sizeof v);
  return le32toh(v);
}
static inline uint64_t dhdec_u64(const unsigned char *p) {
  uint64_t v;
  memcpy(&v, p, sizeof v);
  return le64toh(v);
}

/* lane[] of a record whose lanes are all active from lane 0. */
static const uint8_t dhdec_lanes_from0[64] = {
    0,  1,  2,  3,  4,  5,  6,  7,  8,  9,  10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
    22, 23, 24, 25, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43,
    44, 45, 46, 47, 48, 49, 50, 51, 52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 62, 63};
_Static_assert(sizeof dhdec_lanes_from0 == sizeof((struct nano_dh_record *)0)->lane, "lanes");

/* Formats an error into errmsg when the caller gave one; returns -1. */
static inline long dhdec_fail(char *errmsg, size_t errlen, const char *msg, unsigned long v) {
  if (errmsg && errlen)
    snprintf(errmsg, errlen, "dh_comms record: %s (%lu)", msg, v);
  return -1;
}

/* Decodes as nano_dh_decode does; compact: as nano_dh_decode_compact does
 * (a strided record's addresses past the second left out). */
static inline __attribute__((always_inline)) long dhdec_record(const void *buf, size_t len,
                                                               struct nano_dh_record *out,
                                                               int compact, char *errmsg,
                                                               size_t errlen) {
  const unsigned char *p = buf;
  if (len < NANO_DH_HDR_SIZE)
    return 0;
  unsigned bytes = dhdec_u16(p + NANO_DH_HDR_OFF_BYTES);
  if (bytes == 0)
    return 0;
  unsigned version = p[NANO_DH_HDR_OFF_VERSION];
  if (version != NANO_DH_VERSION)
    return dhdec_fail(errmsg, errlen, "unsupported version", version);
  unsigned format = p[NANO_DH_HDR_OFF_FORMAT];
  unsigned enc = format & NANO_DH_FORMAT_ENC_MASK;
  if (enc > NANO_DH_ENC_ADDR64 || (format >> (NANO_DH_FORMAT_SPACE_SHIFT + 2)) != 0)
    return dhdec_fail(errmsg, errlen, "unknown format", format);
  unsigned lanes = p[NANO_DH_HDR_OFF_LANES];
  unsigned wave_size = p[NANO_DH_HDR_OFF_WAVESIZE];
  if (wave_size != 1 && wave_size != 32 && wave_size != 64)
    return dhdec_fail(errmsg, errlen, "bad wave size", wave_size);
  if (lanes == 0 || lanes > wave_size)
    return dhdec_fail(errmsg, errlen, "bad lane count", lanes);
  if (bytes != NANO_DH_HDR_SIZE + NANO_DH_PAYLOAD_BYTES(enc, lanes))
    return dhdec_fail(errmsg, errlen, "size does not match encoding and lane count", bytes);
  uint64_t exec = dhdec_u64(p + NANO_DH_HDR_OFF_EXEC);
  /* all lanes from 0 active: the common case, whose count needs no popcount
   * (a library call where the target has no popcnt instruction) */
  int from0 = exec == (lanes == 64 ? ~0ull : (1ull << lanes) - 1);
  if (!from0 && ((unsigned)__builtin_popcountll(exec) != lanes ||
                 (wave_size < 64 && (exec >> wave_size) != 0)))
    return dhdec_fail(errmsg, errlen, "exec mask does not match lane count", lanes);
  if (len < bytes)
    return 0;
  out->bytes = (uint16_t)bytes;
  out->version = (uint8_t)version;
  out->encoding = (uint8_t)enc;
  out->space = (uint8_t)(format >> NANO_DH_FORMAT_SPACE_SHIFT);
  out->lanes = (uint8_t)lanes;
  out->wave_size = (uint8_t)wave_size;
  out->wave = dhdec_u16(p + NANO_DH_HDR_OFF_WAVE);
  out->site = dhdec_u64(p + NANO_DH_HDR_OFF_SITE);
  out->exec = exec;
  out->block[0] = dhdec_u32(p + NANO_DH_HDR_OFF_BLOCK_X);
  out->block[1] = dhdec_u16(p + NANO_DH_HDR_OFF_BLOCK_Y);
  out->block[2] = dhdec_u16(p + NANO_DH_HDR_OFF_BLOCK_Z);
  out->size = dhdec_u32(p + NANO_DH_HDR_OFF_SIZE);
  out->hw_id = dhdec_u32(p + NANO_DH_HDR_OFF_HWID);
  out->time = dhdec_u64(p + NANO_DH_HDR_OFF_TIME);
  uint64_t base = dhdec_u64(p + NANO_DH_HDR_OFF_BASE);
  const unsigned char *payload = p + NANO_DH_HDR_SIZE;
  /* lanes: the set bits of exec in order (all from 0 in the common case) */
  if (from0) {
    memcpy(out->lane, dhdec_lanes_from0, sizeof out->lane); /* a few wide stores, no loop */
  } else {
    uint64_t m = exec;
    for (unsigned i = 0; m; i++, m &= m - 1)
      out->lane[i] = (uint8_t)__builtin_ctzll(m);
  }
  if (enc == NANO_DH_ENC_STRIDE) {
    /* four lanes per step, each its own sum (the common encoding: the
     * drain's hottest loop; one chain of additions was 40 % of a record's
     * drain); it may fill up to three slots past the lanes, which addr[] has
     * room for (64 is a multiple of 4) */
    uint64_t stride = dhdec_u64(payload), s2 = 2 * stride, s3 = 3 * stride, step = 4 * stride;
    uint64_t a = base;
    if (compact) {
      out->addr[0] = base;
      out->addr[1] = base + stride;
      return (long)bytes;
    }
    for (unsigned i = 0; i < lanes; i += 4, a += step) {
      out->addr[i] = a;
      out->addr[i + 1] = a + stride;
      out->addr[i + 2] = a + s2;
      out->addr[i + 3] = a + s3;
    }
  } else if (enc == NANO_DH_ENC_OFF32) {
    for (unsigned i = 0; i < lanes; i++)
      out->addr[i] = base + (uint64_t)(int64_t)(int32_t)dhdec_u32(payload + 4 * i);
  } else {
    for (unsigned i = 0; i < lanes; i++)
      out->addr[i] = dhdec_u64(payload + 8 * i);
  }
  return (long)bytes;
}

#endif

/*
 * dh_decode.c: the one decoder of dh_comms records (dh_decode.h) in its
 * public forms, and the encoding rule the host encoder shares with the
 * device runtime (layout: nano/dh_format.h, dh_comms/README.md).
 */
#include "dh_decode.h"

long nano_dh_decode(const void *buf, size_t len, struct nano_dh_record *out, char *errmsg,
                    size_t errlen) {
  return dhdec_record(buf, len, out, 0, errmsg, errlen);
}

long nano_dh_decode_compact(const void *buf, size_t len, struct nano_dh_record *out, char *errmsg,
                            size_t errlen) {
  return dhdec_record(buf, len, out, 1, errmsg, errlen);
}

const uint64_t *nano_dh_record_addrs(const struct nano_dh_record *r, uint64_t buf[64]) {
  if (r->encoding != NANO_DH_ENC_STRIDE || r->lanes <= 2)
    return r->addr;
  for (unsigned i = 0; i < r->lanes; i++)
    buf[i] = nano_dh_record_addr(r, i);
  return buf;
}

uint32_t nano_dh_record_thread(const struct nano_dh_record *r, unsigned i) {
  return (uint32_t)r->wave * r->wave_size + r->lane[i];
}

unsigned nano_dh_encoding(const struct nano_dh_record *r, int64_t *stride) {
  uint64_t base = r->addr[0];
  uint64_t step = r->lanes > 1 ? r->addr[1] - base : 0;
  *stride = (int64_t)step;
  /* the common case first: every lane one step after the one before */
  unsigned i = 1;
  for (uint64_t next = base + step; i < r->lanes && r->addr[i] == next; i++)
    next += step;
  if (i >= r->lanes)
    return NANO_DH_ENC_STRIDE;
  for (i = 0; i < r->lanes; i++) {
    uint64_t delta = r->addr[i] - base;
    if ((uint64_t)(int64_t)(int32_t)delta != delta)
      return NANO_DH_ENC_ADDR64;
  }
  return NANO_DH_ENC_OFF32;
}

/* clock.c: the time of ranges and marks (the tracer core, tracer.h). */
#define _GNU_SOURCE
#include "tracer.h"

#if defined(__x86_64__)
#include <cpuid.h>
#endif
#include "nano/settings.h"
#include <stdio.h>
#include <string.h>

RPDI_EXPORT int64_t rpd_now(void) { return rpd_clock(); }

int g_tsc;
struct rpd_tsc_map g_tsc_map;

/* A (ticks, ns) pair read as close together as possible: the tightest of 32
 * bracketed reads (a preemption inside one bracket would skew it). */
static void rpd_tsc_sample(int64_t *ticks, int64_t *ns) {
  int64_t best = INT64_MAX;
  for (int i = 0; i < 32; i++) {
    int64_t a = rpd_ticks();
    int64_t n = rpd_clock();
    int64_t b = rpd_ticks();
    if (b - a < best) {
      best = b - a;
      *ticks = a + (b - a) / 2;
      *ns = n;
    }
  }
}

/* The first fit spans at least RPD_TSC_FIRST_NS (a short program's writer
 * waits for no more); the re-fit interval then doubles up to a second, so
 * each segment's slope comes from an interval at least half its own length
 * and its error stays within a few sample jitters (~0.1 us). */
enum { RPD_TSC_FIRST_NS = 1000000, RPD_TSC_REFIT_MAX_NS = 1000000000 };
/* The most a new segment's slope may differ from the measured rate (1000
 * ppm), so one bad sample after a long stall cannot bend the map. */
#define RPD_TSC_MAX_SKEW 1e-3

/* Why the TSC cannot serve as the clock here, or NULL when it can. */
static const char *rpd_tsc_unusable(void) {
#if defined(__x86_64__)
  unsigned a, b, c, d;
  if (!__get_cpuid(0x80000007, &a, &b, &c, &d) || !(d & (1u << 8)))
    return "the CPU has no invariant TSC";
  char src[64] = "";
  FILE *f = fopen("/sys/devices/system/clocksource/clocksource0/current_clocksource", "r");
  if (f) {
    if (!fgets(src, sizeof src, f))
      src[0] = 0;
    fclose(f);
  }
  if (strcmp(src, "tsc\n") != 0)
    return "the kernel's clocksource is not tsc";
  return NULL;
#else
  return "the TSC clock needs x86-64";
#endif
}

/* NANO_RPD_CLOCK: unset, malformed or "auto" (TSC where usable), "tsc" (the
 * same, with a warning where unusable), "monotonic". */
void rpd_tsc_init(void) {
  static const char *const clocks[] = {"auto", "tsc", "monotonic", NULL};
  int clock = 0;
  nano_env_choice("NANO_RPD_CLOCK", clocks, &clock);
  if (clock == 2)
    return;
  int asked = clock == 1;
  const char *why = rpd_tsc_unusable();
  if (why) {
    if (asked)
      rpd_log("NANO_RPD_CLOCK=tsc: %s; using monotonic", why);
    return;
  }
  g_tsc_map.segs = rpd_grow(NULL, 0, &g_tsc_map.cap, sizeof *g_tsc_map.segs);
  if (!g_tsc_map.segs) {
    rpd_log("out of memory for the TSC map; using monotonic");
    return;
  }
  g_tsc = 1;
  rpd_tsc_sample(&g_tsc_map.sample_ticks, &g_tsc_map.sample_ns);
}

/* Appends segment s; out of memory, the map keeps its last segment. */
static void rpd_tsc_add(struct rpd_tsc_seg s) {
  struct rpd_tsc_map *m = &g_tsc_map;
  struct rpd_tsc_seg *segs = rpd_grow(m->segs, m->n, &m->cap, sizeof *segs);
  if (!segs) {
    if (!m->failed)
      rpd_log("out of memory for the TSC map; its last segment goes on");
    m->failed = 1;
    return;
  }
  m->segs = segs;
  m->segs[m->n++] = s;
}

/* A re-fit interval, at most RPD_TSC_REFIT_MAX_NS. */
static int64_t rpd_tsc_refit(int64_t ns) {
  return ns < RPD_TSC_REFIT_MAX_NS ? ns : RPD_TSC_REFIT_MAX_NS;
}

/* Extends the map with a segment from a fresh sample: the first once
 * RPD_TSC_FIRST_NS have passed since load (waiting for them), then at each
 * re-fit interval (of stamps: the writer checks each stamp against the last
 * sample, with no clock read). */
static void rpd_tsc_extend(void) {
  struct rpd_tsc_map *m = &g_tsc_map;
  int64_t ticks, ns;
  double slope;
  if (m->n == 0) {
    int64_t wait = m->sample_ns + RPD_TSC_FIRST_NS - rpd_clock();
    if (wait > 0) {
      struct timespec ts = {wait / 1000000000, wait % 1000000000};
      nanosleep(&ts, NULL);
    }
    rpd_tsc_sample(&ticks, &ns);
    slope = ticks > m->sample_ticks
                ? (double)(ns - m->sample_ns) / (double)(ticks - m->sample_ticks)
                : 1.0;
    rpd_tsc_add((struct rpd_tsc_seg){m->sample_ticks, m->sample_ns, slope}); /* room from init */
    m->refit_ns = rpd_tsc_refit(2 * (ns - m->sample_ns));
  } else {
    if (m->failed)
      return;
    rpd_tsc_sample(&ticks, &ns);
    if (ticks <= m->sample_ticks || ns <= m->sample_ns)
      return;
    double rate = (double)(ns - m->sample_ns) / (double)(ticks - m->sample_ticks);
    /* No stamp past `edge` has been converted yet (it would have called this
     * first). When this sample lies well past it (the writer converted
     * nothing for a while), a segment from the edge straight to this sample
     * keeps the stamps in between from being extrapolated over that time. */
    int64_t edge = m->sample_ticks + m->refit_ticks;
    if (ticks - edge >= m->refit_ticks) {
      int64_t edge_ns = rpd_tsc_at(&m->segs[m->n - 1], edge);
      double bridge = ns > edge_ns ? (double)(ns - edge_ns) / (double)(ticks - edge) : rate;
      if (bridge > rate * (1 + RPD_TSC_MAX_SKEW))
        bridge = rate * (1 + RPD_TSC_MAX_SKEW);
      if (bridge < rate * (1 - RPD_TSC_MAX_SKEW))
        bridge = rate * (1 - RPD_TSC_MAX_SKEW);
      rpd_tsc_add((struct rpd_tsc_seg){edge, edge_ns, bridge});
    }
    const struct rpd_tsc_seg *last = &m->segs[m->n - 1];
    m->refit_ns = rpd_tsc_refit(2 * m->refit_ns);
    /* the offset left at this sample, closed over the next interval; at most
     * 1000 ppm of correction, so the slope stays sane after a long stall */
    double fix = (double)(ns - rpd_tsc_at(last, ticks)) / (double)m->refit_ns;
    if (fix > RPD_TSC_MAX_SKEW)
      fix = RPD_TSC_MAX_SKEW;
    if (fix < -RPD_TSC_MAX_SKEW)
      fix = -RPD_TSC_MAX_SKEW;
    slope = rate * (1 + fix);
    rpd_tsc_add((struct rpd_tsc_seg){ticks, rpd_tsc_at(last, ticks), slope});
  }
  m->refit_ticks = (int64_t)((double)m->refit_ns / slope);
  m->sample_ticks = ticks;
  m->sample_ns = ns;
}

/* rpdw_time past its common case. */
__attribute__((noinline)) int64_t rpdw_time_slow(int64_t t) {
  struct rpd_tsc_map *m = &g_tsc_map;
  if (m->n == 0 || t - m->sample_ticks >= m->refit_ticks)
    rpd_tsc_extend();
  int i = m->n - 1;
  if (i > 0 && t < m->segs[i].ticks && t >= m->segs[i - 1].ticks) {
    i--; /* the backlog a re-fit leaves behind: the segment before the newest */
  } else if (t < m->segs[i].ticks) { /* an older stamp */
    int lo = 0, hi = i;
    while (lo < hi) {
      int mid = (lo + hi + 1) / 2;
      if (m->segs[mid].ticks <= t)
        lo = mid;
      else
        hi = mid - 1;
    }
    i = lo;
  }
  return rpd_tsc_at(&m->segs[i], t);
}

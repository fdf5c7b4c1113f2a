/*
 * nvtx.c: libnano_rpd.so as an NVTX 3 injection library.
 *
 * The header-only NVTX 3 (used by PyTorch, CUDA libraries and applications)
 * loads the library named by NVTX_INJECTION64_PATH on the first NVTX call and
 * calls its InitializeInjectionNvtx2, which fills NVTX's function tables.
 * Handled: core push/pop, start/end, mark (ASCII, wide, and the Ex forms with
 * ASCII, wide or registered messages) and the domain (CORE2) forms, domain
 * creation and string registration, and thread naming (nvtxNameOsThread:
 * rpd_name_thread). Ranges of the default domain are domain
 * "UserMarker"; those of a created domain carry its name as the domain. The
 * text is the range text (args), apiName "UserMarker".
 *
 * Domain and registered-string handles are rpd_intern handles cast to
 * pointers (never 0).
 */
#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <wchar.h>

#include "rpd.h"
#include "rpd_internal.h"

/* UTF-8 of a wide (UTF-32) string into buf. */
static const char *nvtx_wide(const wchar_t *w, char *buf, size_t n) {
  size_t o = 0;
  if (!w)
    return NULL;
  for (; *w && o + 5 < n; w++) {
    uint32_t c = (uint32_t)*w;
    if (c < 0x80) {
      buf[o++] = (char)c;
    } else if (c < 0x800) {
      buf[o++] = (char)(0xC0 | (c >> 6));
      buf[o++] = (char)(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      buf[o++] = (char)(0xE0 | (c >> 12));
      buf[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
      buf[o++] = (char)(0x80 | (c & 0x3F));
    } else {
      buf[o++] = (char)(0xF0 | (c >> 18));
      buf[o++] = (char)(0x80 | ((c >> 12) & 0x3F));
      buf[o++] = (char)(0x80 | ((c >> 6) & 0x3F));
      buf[o++] = (char)(0x80 | (c & 0x3F));
    }
  }
  buf[o] = 0;
  return buf;
}

/* The text of an event's message (buf holds converted wide text). */
static const char *nvtx_message(const nvtxEventAttributes_t *a, char *buf, size_t n) {
  if (!a)
    return NULL;
  switch (a->messageType) {
  case NVTX_MESSAGE_TYPE_ASCII:
    return a->message.ascii;
  case NVTX_MESSAGE_TYPE_UNICODE:
    return nvtx_wide(a->message.unicode, buf, n);
  case NVTX_MESSAGE_TYPE_REGISTERED:
    return rpdi_intern_str((uint32_t)(uintptr_t)a->message.registered);
  default:
    return NULL;
  }
}

static const char *nvtx_domain(nvtxDomainHandle_t d) {
  return d ? rpdi_intern_str((uint32_t)(uintptr_t)d) : NULL;
}

/* ---- core ----------------------------------------------------------------- */

static void nvtx_MarkA(const char *m) { rpd_mark(NULL, m, NULL); }
static void nvtx_MarkW(const wchar_t *m) {
  char buf[1024];
  rpd_mark(NULL, nvtx_wide(m, buf, sizeof buf), NULL);
}
static void nvtx_MarkEx(const nvtxEventAttributes_t *a) {
  char buf[1024];
  rpd_mark(NULL, nvtx_message(a, buf, sizeof buf), NULL);
}
static nvtxRangeId_t nvtx_RangeStartA(const char *m) { return rpdi_range_start(NULL, m); }
static nvtxRangeId_t nvtx_RangeStartW(const wchar_t *m) {
  char buf[1024];
  return rpdi_range_start(NULL, nvtx_wide(m, buf, sizeof buf));
}
static nvtxRangeId_t nvtx_RangeStartEx(const nvtxEventAttributes_t *a) {
  char buf[1024];
  return rpdi_range_start(NULL, nvtx_message(a, buf, sizeof buf));
}
static void nvtx_RangeEnd(nvtxRangeId_t id) { rpdi_range_stop(id); }
static int nvtx_RangePushA(const char *m) { return rpdi_push(NULL, m, NULL); }
static int nvtx_RangePushW(const wchar_t *m) {
  char buf[1024];
  return rpdi_push(NULL, nvtx_wide(m, buf, sizeof buf), NULL);
}
static int nvtx_RangePushEx(const nvtxEventAttributes_t *a) {
  char buf[1024];
  return rpdi_push(NULL, nvtx_message(a, buf, sizeof buf), NULL);
}
static int nvtx_RangePop(void) { return rpdi_pop(); }

/* ---- domains (CORE2) ------------------------------------------------------ */

static void nvtx_DomainMarkEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char buf[1024];
  rpd_mark(nvtx_domain(d), nvtx_message(a, buf, sizeof buf), NULL);
}
static nvtxRangeId_t nvtx_DomainRangeStartEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char buf[1024];
  return rpdi_range_start(nvtx_domain(d), nvtx_message(a, buf, sizeof buf));
}
static void nvtx_DomainRangeEnd(nvtxDomainHandle_t d, nvtxRangeId_t id) {
  (void)d;
  rpdi_range_stop(id);
}
static int nvtx_DomainRangePushEx(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) {
  char buf[1024];
  return rpdi_push(nvtx_domain(d), nvtx_message(a, buf, sizeof buf), NULL);
}
static int nvtx_DomainRangePop(nvtxDomainHandle_t d) {
  (void)d;
  return rpdi_pop();
}
static nvtxDomainHandle_t nvtx_DomainCreateA(const char *name) {
  uint32_t h = rpd_intern(name);
  return (nvtxDomainHandle_t)(uintptr_t)(h ? h : rpd_intern("UserMarker"));
}
static nvtxDomainHandle_t nvtx_DomainCreateW(const wchar_t *name) {
  char buf[1024];
  return nvtx_DomainCreateA(nvtx_wide(name, buf, sizeof buf));
}
static void nvtx_DomainDestroy(nvtxDomainHandle_t d) { (void)d; }
static nvtxStringHandle_t nvtx_DomainRegisterStringA(nvtxDomainHandle_t d, const char *s) {
  (void)d;
  return (nvtxStringHandle_t)(uintptr_t)rpd_intern(s);
}
static nvtxStringHandle_t nvtx_DomainRegisterStringW(nvtxDomainHandle_t d, const wchar_t *s) {
  char buf[1024];
  return nvtx_DomainRegisterStringA(d, nvtx_wide(s, buf, sizeof buf));
}

static void nvtx_NameOsThreadA(uint32_t tid, const char *name) { rpd_name_thread((int)tid, name); }
static void nvtx_NameOsThreadW(uint32_t tid, const wchar_t *name) {
  char buf[1024];
  nvtx_NameOsThreadA(tid, nvtx_wide(name, buf, sizeof buf));
}

/* Stores fn into slot id of a module table when the table has it. */
static void nvtx_set(NvtxFunctionTable table, unsigned size, unsigned id, NvtxFunctionPointer fn) {
  if (id < size && table[id])
    *table[id] = fn;
}

#define NVTX_FN(f) ((NvtxFunctionPointer)(void (*)(void))(f))

/* The injection entry point NVTX 3 looks up; returns 1 on success. */
RPDI_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t getExportTable) {
  if (!getExportTable)
    return 0;
  const NvtxExportTableCallbacks *cb =
      (const NvtxExportTableCallbacks *)getExportTable(NVTX_ETID_CALLBACKS);
  if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
    return 0;
  NvtxFunctionTable t = NULL;
  unsigned n = 0;
  if (!cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE, &t, &n) || !t)
    return 0;
  nvtx_set(t, n, NVTX_CBID_CORE_MarkEx, NVTX_FN(nvtx_MarkEx));
  nvtx_set(t, n, NVTX_CBID_CORE_MarkA, NVTX_FN(nvtx_MarkA));
  nvtx_set(t, n, NVTX_CBID_CORE_MarkW, NVTX_FN(nvtx_MarkW));
  nvtx_set(t, n, NVTX_CBID_CORE_RangeStartEx, NVTX_FN(nvtx_RangeStartEx));
  nvtx_set(t, n, NVTX_CBID_CORE_RangeStartA, NVTX_FN(nvtx_RangeStartA));
  nvtx_set(t, n, NVTX_CBID_CORE_RangeStartW, NVTX_FN(nvtx_RangeStartW));
  nvtx_set(t, n, NVTX_CBID_CORE_RangeEnd, NVTX_FN(nvtx_RangeEnd));
  nvtx_set(t, n, NVTX_CBID_CORE_RangePushEx, NVTX_FN(nvtx_RangePushEx));
  nvtx_set(t, n, NVTX_CBID_CORE_RangePushA, NVTX_FN(nvtx_RangePushA));
  nvtx_set(t, n, NVTX_CBID_CORE_RangePushW, NVTX_FN(nvtx_RangePushW));
  nvtx_set(t, n, NVTX_CBID_CORE_RangePop, NVTX_FN(nvtx_RangePop));
  nvtx_set(t, n, NVTX_CBID_CORE_NameOsThreadA, NVTX_FN(nvtx_NameOsThreadA));
  nvtx_set(t, n, NVTX_CBID_CORE_NameOsThreadW, NVTX_FN(nvtx_NameOsThreadW));
  t = NULL;
  n = 0;
  if (cb->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &t, &n) && t) {
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainMarkEx, NVTX_FN(nvtx_DomainMarkEx));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainRangeStartEx, NVTX_FN(nvtx_DomainRangeStartEx));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainRangeEnd, NVTX_FN(nvtx_DomainRangeEnd));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainRangePushEx, NVTX_FN(nvtx_DomainRangePushEx));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainRangePop, NVTX_FN(nvtx_DomainRangePop));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainCreateA, NVTX_FN(nvtx_DomainCreateA));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainCreateW, NVTX_FN(nvtx_DomainCreateW));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainDestroy, NVTX_FN(nvtx_DomainDestroy));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainRegisterStringA, NVTX_FN(nvtx_DomainRegisterStringA));
    nvtx_set(t, n, NVTX_CBID_CORE2_DomainRegisterStringW, NVTX_FN(nvtx_DomainRegisterStringW));
  }
  return 1;
}

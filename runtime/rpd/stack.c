/*
 * stack.c: call stacks for RPDT_STACKFRAMES=1.
 *
 * Capture (producer threads): libunwind's unw_backtrace, loaded with
 * dlopen(RTLD_LOCAL) on first use. libunwind.so also exports _Unwind_* and
 * backtrace(); linking it into a preloaded library would put those in front
 * of libgcc's and glibc's for the whole application, so it stays local.
 * Frames inside libnano_rpd.so itself are skipped.
 *
 * Symbolisation (writer thread): elfutils libdwfl over this process's
 * modules: "function+0xoff at file:line" with debug info,
 * "function+0xoff in module" without, "0xaddr in module" or "0xaddr" as a
 * last resort. Modules loaded after the last report are picked up by
 * reporting again when an address has no module. clang emits no
 * .debug_aranges, through which libdwfl finds an address's compilation unit:
 * then the units' own ranges (DW_AT_ranges, low_pc/high_pc) are searched.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <link.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rpd_internal.h"

typedef int (*stack_backtrace_fn)(void **buffer, int size);
static stack_backtrace_fn stack_backtrace;
static pthread_once_t stack_once = PTHREAD_ONCE_INIT;
static uintptr_t stack_self_lo, stack_self_hi;

/* Finds the executable range of the object holding this function. */
static int stack_self_cb(struct dl_phdr_info *info, size_t size, void *arg) {
  (void)size;
  uintptr_t probe = (uintptr_t)arg;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t lo = info->dlpi_addr + ph->p_vaddr, hi = lo + ph->p_memsz;
    if (probe >= lo && probe < hi) {
      stack_self_lo = lo;
      stack_self_hi = hi;
      return 1;
    }
  }
  return 0;
}

static void stack_init(void) {
  dl_iterate_phdr(stack_self_cb, (void *)(uintptr_t)&rpdi_stack_capture);
  void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    fprintf(stderr, "nanoprobe rpd: RPDT_STACKFRAMES: cannot load libunwind.so.8: %s\n", dlerror());
    return;
  }
  stack_backtrace = (stack_backtrace_fn)dlsym(h, "unw_backtrace");
  if (!stack_backtrace)
    fprintf(stderr, "nanoprobe rpd: RPDT_STACKFRAMES: libunwind.so.8 has no unw_backtrace\n");
}

int rpdi_stack_capture(uint64_t *ips, int max) {
  pthread_once(&stack_once, stack_init);
  if (!stack_backtrace || max <= 0) return 0;
  void *buf[256 + 16];
  int want = max + 16 > 256 + 16 ? 256 + 16 : max + 16;
  int n = stack_backtrace(buf, want);
  int i = 0, out = 0;
  while (i < n && (uintptr_t)buf[i] >= stack_self_lo && (uintptr_t)buf[i] < stack_self_hi) i++;
  for (; i < n && out < max; i++) ips[out++] = (uint64_t)(uintptr_t)buf[i];
  return out;
}

static Dwfl *stack_dwfl;
static const Dwfl_Callbacks stack_callbacks = {
    .find_elf = dwfl_linux_proc_find_elf,
    .find_debuginfo = dwfl_standard_find_debuginfo,
};

/* (Re)reports this process's modules. Returns 0 or -1. */
static int stack_report(void) {
  if (!stack_dwfl) {
    stack_dwfl = dwfl_begin(&stack_callbacks);
    if (!stack_dwfl) {
      fprintf(stderr, "nanoprobe rpd: dwfl_begin: %s\n", dwfl_errmsg(-1));
      return -1;
    }
  }
  dwfl_report_begin(stack_dwfl);
  int rc = dwfl_linux_proc_report(stack_dwfl, getpid());
  if (dwfl_report_end(stack_dwfl, NULL, NULL) != 0 || rc != 0) {
    fprintf(stderr, "nanoprobe rpd: cannot read this process's modules: %s\n", dwfl_errmsg(-1));
    return -1;
  }
  return 0;
}

/* The source file and line of module address addr through the compilation
 * units' ranges, for modules without .debug_aranges; NULL when none has it. */
static const char *stack_line_by_cu(Dwfl_Module *mod, Dwarf_Addr addr, int *lineno) {
  Dwarf_Addr bias = 0;
  Dwarf *dw = dwfl_module_getdwarf(mod, &bias);
  if (!dw) return NULL;
  Dwarf_Addr at = addr - bias;
  Dwarf_Off off = 0, next;
  size_t hsize;
  while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
    Dwarf_Die cu;
    if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_haspc(&cu, at) == 1) {
      Dwarf_Line *line = dwarf_getsrc_die(&cu, at);
      const char *file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
      if (file && dwarf_lineno(line, lineno) == 0) return file;
      return NULL;
    }
    off = next;
  }
  return NULL;
}

void rpdi_stack_symbolize(uint64_t ip, char *buf, size_t n) {
  if (!stack_dwfl && stack_report() != 0) {
    snprintf(buf, n, "0x%" PRIx64, ip);
    return;
  }
  /* a return address points after the call: look up the call itself */
  Dwarf_Addr addr = ip ? ip - 1 : 0;
  Dwfl_Module *mod = dwfl_addrmodule(stack_dwfl, addr);
  if (!mod && stack_report() == 0) mod = dwfl_addrmodule(stack_dwfl, addr);
  if (!mod) {
    snprintf(buf, n, "0x%" PRIx64, ip);
    return;
  }
  const char *modname = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  GElf_Off off = 0;
  GElf_Sym sym;
  const char *fn = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
  Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
  int lineno = 0;
  const char *file = line ? dwfl_lineinfo(line, NULL, &lineno, NULL, NULL, NULL) : NULL;
  if (!file) file = stack_line_by_cu(mod, addr, &lineno);
  if (fn && file)
    snprintf(buf, n, "%s+0x%" PRIx64 " at %s:%d", fn, (uint64_t)off, file, lineno);
  else if (fn)
    snprintf(buf, n, "%s+0x%" PRIx64 " in %s", fn, (uint64_t)off, modname ? modname : "?");
  else
    snprintf(buf, n, "0x%" PRIx64 " in %s", ip, modname ? modname : "?");
}

void rpdi_stack_reset(void) {
  if (stack_dwfl) dwfl_end(stack_dwfl);
  stack_dwfl = NULL;
}

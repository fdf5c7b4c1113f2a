/*
 * stack.c: call stacks for RPDT_STACKFRAMES=1.
 *
 * Capture (producer threads): nano_backtrace (common/, nano/backtrace.h),
 * which leaves out the frames inside libnano_rpd.so itself.
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
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "rpd_internal.h"

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
  if (!dw)
    return NULL;
  Dwarf_Addr at = addr - bias;
  Dwarf_Off off = 0, next;
  size_t hsize;
  while (dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0) {
    Dwarf_Die cu;
    if (dwarf_offdie(dw, off + hsize, &cu) && dwarf_haspc(&cu, at) == 1) {
      Dwarf_Line *line = dwarf_getsrc_die(&cu, at);
      const char *file = line ? dwarf_linesrc(line, NULL, NULL) : NULL;
      if (file && dwarf_lineno(line, lineno) == 0)
        return file;
      return NULL;
    }
    off = next;
  }
  return NULL;
}

int rpdi_stack_frame(uint64_t ip, struct rpdi_frame *f) {
  memset(f, 0, sizeof *f);
  if (!stack_dwfl && stack_report() != 0)
    return -1;
  /* a return address points after the call: look up the call itself */
  Dwarf_Addr addr = ip ? ip - 1 : 0;
  Dwfl_Module *mod = dwfl_addrmodule(stack_dwfl, addr);
  if (!mod && stack_report() == 0)
    mod = dwfl_addrmodule(stack_dwfl, addr);
  if (!mod)
    return -1;
  f->module = dwfl_module_info(mod, NULL, NULL, NULL, NULL, NULL, NULL, NULL);
  GElf_Off off = 0;
  GElf_Sym sym;
  f->function = dwfl_module_addrinfo(mod, addr, &off, &sym, NULL, NULL, NULL);
  f->offset = off;
  Dwfl_Line *line = dwfl_module_getsrc(mod, addr);
  f->file = line ? dwfl_lineinfo(line, NULL, &f->line, NULL, NULL, NULL) : NULL;
  if (!f->file)
    f->file = stack_line_by_cu(mod, addr, &f->line);
  return 0;
}

void rpdi_stack_symbolize(uint64_t ip, char *buf, size_t n) {
  struct rpdi_frame f;
  const char *mod = rpdi_stack_frame(ip, &f) == 0 && f.module ? f.module : "?";
  if (f.function && f.file)
    snprintf(buf, n, "%s+0x%" PRIx64 " at %s:%d", f.function, f.offset, f.file, f.line);
  else if (f.function)
    snprintf(buf, n, "%s+0x%" PRIx64 " in %s", f.function, f.offset, mod);
  else if (f.module)
    snprintf(buf, n, "0x%" PRIx64 " in %s", ip, mod);
  else
    snprintf(buf, n, "0x%" PRIx64, ip);
}

void rpdi_stack_reset(void) {
  if (stack_dwfl)
    dwfl_end(stack_dwfl);
  stack_dwfl = NULL;
}

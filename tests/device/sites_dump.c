/*
 * sites_dump: prints the dh_comms site tables of an ELF file (executable,
 * shared object, AMDGPU code object), one site per line:
 *   id<TAB>function<TAB>file:line:column<TAB>kind<TAB>size<TAB>addrspace
 * Exit status 1 with a message when the file cannot be read or has no sites.
 */
#include "nano/dh_comms.h"

#include <inttypes.h>
#include <stdio.h>

int main(int argc, char **argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s ELF-FILE\n", argv[0]);
    return 2;
  }
  struct nano_dh_sites *s = nano_dh_sites_create();
  if (!s) {
    perror("sites_dump");
    return 1;
  }
  char err[512];
  int n = nano_dh_sites_add_elf(s, argv[1], err, sizeof err);
  if (n < 0) {
    fprintf(stderr, "sites_dump: %s\n", err);
    nano_dh_sites_destroy(s);
    return 1;
  }
  if (nano_dh_sites_count(s) == 0) {
    fprintf(stderr, "sites_dump: %s: no dh_comms sites\n", argv[1]);
    nano_dh_sites_destroy(s);
    return 1;
  }
  for (size_t i = 0; i < nano_dh_sites_count(s); i++) {
    const struct nano_dh_site *x = nano_dh_sites_at(s, i);
    printf("%016" PRIx64 "\t%s\t%s:%u:%u\t%s\t%u\t%s\n", x->id, x->kernel, x->file, x->line,
           x->column, nano_dh_kind_name(x->kind), x->size, nano_dh_addrspace_name(x->addrspace));
  }
  nano_dh_sites_destroy(s);
  return 0;
}

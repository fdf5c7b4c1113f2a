//===- SourceFile.h - the source file of a debug location ------------------===//
//
// One rule for both halves of the plugin: a site's file is the file of its
// debug location as written, with the compilation directory prepended to a
// relative name, so that tools can open it from anywhere.
//
//===----------------------------------------------------------------------===//
#ifndef NANO_SOURCE_FILE_H
#define NANO_SOURCE_FILE_H

#include "Compat.h"

#include "llvm/IR/DebugInfoMetadata.h"

#include <string>

namespace nano {

// The file of Loc ("" when the location names none), absolute where the
// compilation directory is known.
inline std::string sourceFile(const llvm::DILocation *Loc) {
  llvm::StringRef File = Loc->getFilename(), Dir = Loc->getDirectory();
  if (File.empty() || compat::startsWith(File, "/") || Dir.empty())
    return File.str();
  return (Dir + "/" + File).str();
}

} // namespace nano

#endif

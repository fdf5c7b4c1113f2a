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
#include "nano/path.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/IR/DebugInfoMetadata.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

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

// Path with "." and "dir/.." removed lexically, as file filters match it:
// clang records libstdc++'s headers as
// /usr/bin/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12/atomic,
// which ^/usr/include/ must match.
inline std::string normalizedPath(llvm::StringRef Path) {
  llvm::SmallString<256> P(Path);
  llvm::sys::path::remove_dots(P, /*remove_dot_dot=*/true, llvm::sys::path::Style::posix);
  return std::string(P.str());
}

// Whether Loc lies in library code, the system's or a toolkit's headers
// (NANO_LIBRARY_FILES_DEFAULT, nano/path.h), its file as written or under
// its compilation directory: where the plugin looks past the API's own
// wrappers for the program's line.
inline bool libraryLocation(const llvm::DILocation *Loc) {
  static const llvm::Regex Library(NANO_LIBRARY_FILES_DEFAULT); // POSIX extended
  return Library.match(Loc->getFilename()) ||
         Library.match((Loc->getDirectory() + "/" + Loc->getFilename()).str());
}

} // namespace nano

#endif

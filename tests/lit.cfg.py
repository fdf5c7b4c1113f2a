# lit configuration of the IR and compile tests (tests/pass, tests/device/ir).
# One plugin build per lit run, given as parameters by nano_add_lit_tests in
# tests/CMakeLists.txt:
#   --param plugin=<libNanoPass.so> --param llvm_bin=<tools dir>
#   --param llvm_major=<N> --param hipcc=<path or empty>
#   --param runtime_include=<runtime/include> --param dh_include=<dh_comms/include>
import os

import lit.formats

config.name = "nanoprobe"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".ll", ".c", ".cpp", ".hip", ".cu", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "CMakeLists.txt", "README.md", "samples"]
config.test_source_root = os.path.dirname(__file__)

params = lit_config.params
for required in ("plugin", "llvm_bin", "llvm_major", "runtime_include"):
    if not params.get(required):
        lit_config.fatal("tests: --param %s=... is required" % required)
plugin = params["plugin"]
llvm_bin = params["llvm_bin"]
major = int(params["llvm_major"])
if not os.path.isfile(plugin):
    lit_config.fatal("tests: plugin %s does not exist" % plugin)
config.test_exec_root = params.get("exec_root", os.path.join(config.test_source_root, "Output"))

# A clean environment: the pass's own settings come only from the RUN lines.
for var in list(config.environment):
    if var.startswith("NANO_"):
        del config.environment[var]
for var in ("HOME", "TMPDIR", "PATH"):
    if var in os.environ:
        config.environment[var] = os.environ[var]

def tool(name):
    return os.path.join(llvm_bin, name)

config.substitutions += [
    ("%opt_nano", "%s -load-pass-plugin=%s" % (tool("opt"), plugin)),
    ("%opt", tool("opt")),
    ("%clangxx_nano", "%s -fpass-plugin=%s" % (tool("clang++"), plugin)),
    ("%clang_nano", "%s -fpass-plugin=%s" % (tool("clang"), plugin)),
    ("%clangxx", tool("clang++")),
    ("%clang", tool("clang")),
    ("%plugin", plugin),
    ("%major", str(major)),
    ("%runtime_include", params["runtime_include"]),
    ("%dh_include", params.get("dh_include", "")),
    ("%hipcc", params.get("hipcc", "")),
    ("%kerneldb", params.get("kerneldb", "")),
    ("FileCheck", tool("FileCheck")),
    ("split-file", tool("split-file")),
    ("%not", tool("not")),
    ("%count", tool("count")),
    ("%nm", tool("llvm-nm")),
]

# Features are decided by nano_add_lit_tests (tests/CMakeLists.txt, the one place), which
# registers only the tests whose REQUIRES a build satisfies.
for feature in params.get("features", "").split(","):
    if feature:
        config.available_features.add(feature)

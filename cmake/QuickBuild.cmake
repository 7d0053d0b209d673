# KILN_QUICK_BUILD: the quick start's build of `kiln` (scripts/demo configures build-demo/ with
# it; the test build never sets it). The same sources and the same behaviour, compiled for the
# shortest cold build on a fresh machine rather than for speed or debugging:
#   - a unity build: each library compiles as one translation unit, so the headers every file
#     shares (the standard library, fmt, spdlog, yaml-cpp, LLVM in kiln_compiler) are parsed once
#     per library instead of once per file — they are most of a file's compile time;
#   - -O0 and no debug info: optimisation and DWARF were over half of a heavy file's compile, and
#     the demo's scenario runs in milliseconds either way (policies are JIT-compiled by libLLVM,
#     which is prebuilt and optimised whatever this build does);
#   - NDEBUG, as in the default RelWithDebInfo build, so asserts are the same.
# docs/build-time.md has the measurements behind these choices.
#
# Files that cannot share a translation unit with the rest of their library (a name with internal
# linkage defined in two files) are compiled on their own (SKIP_UNITY_BUILD_INCLUSION below); a
# new clash shows as a redefinition error in this build only, and is fixed by adding the file here.
option(KILN_QUICK_BUILD "Quick-start build of kiln: unity build, -O0, no debug info (scripts/demo)"
       OFF)
if(NOT KILN_QUICK_BUILD)
  return()
endif()

if(NOT CMAKE_BUILD_TYPE)
  set(CMAKE_BUILD_TYPE Quick CACHE STRING "" FORCE)
endif()
set(CMAKE_C_FLAGS_QUICK "-O0 -g0 -DNDEBUG" CACHE STRING "C flags of the Quick build type")
set(CMAKE_CXX_FLAGS_QUICK "-O0 -g0 -DNDEBUG" CACHE STRING "C++ flags of the Quick build type")
foreach(kind EXE SHARED MODULE STATIC)
  set(CMAKE_${kind}_LINKER_FLAGS_QUICK "" CACHE STRING "")
endforeach()

set(CMAKE_UNITY_BUILD ON)
set(CMAKE_UNITY_BUILD_BATCH_SIZE 0)  # one translation unit per library

# Internal-linkage names defined in two files of one library: one of each pair stays apart.
set(KILN_QUICK_BUILD_ALONE
  runtime/actions/action.cc     # Registry, TheRegistry (also in runtime/resource.cc)
  simulator/random_cluster.cc   # its PriorityClass(int) is ambiguous with kiln::PriorityClass
                                # once another file has included runtime/model.h
  kubernetes/scenario_writer.cc # class Object (a function Object() in kubernetes/decode.cc)
  kubernetes/volcano_job.cc     # struct BadField, another one in kubernetes/decode.cc
  compiler/codegen/state_in_place.cc  # class Analysis (also in passes/analyze_score_cache.cc)
  server/shadow.cc              # Json is ordered_json here and json in server/whatif.cc
)
list(TRANSFORM KILN_QUICK_BUILD_ALONE PREPEND ${PROJECT_SOURCE_DIR}/)
set_source_files_properties(${KILN_QUICK_BUILD_ALONE} PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)

# kiln_compiler: a file that says `using namespace ast;` (directly or through
# compiler/passes/type_checker.h) makes every later mention of kiln::Node (runtime/model.h)
# ambiguous with ast::Node. Those files make one translation unit of their own, the rest another;
# one of them that also includes the runtime's or the back end's headers (which bring kiln::Node)
# is compiled alone.
file(GLOB_RECURSE kiln_quick_compiler_sources CONFIGURE_DEPENDS
  ${PROJECT_SOURCE_DIR}/compiler/*.cc ${PROJECT_SOURCE_DIR}/stdlib/*.cc)
foreach(source ${kiln_quick_compiler_sources})
  file(STRINGS ${source} uses_ast REGEX "^using namespace ast;|passes/type_checker\\.h\"")
  file(STRINGS ${source} sees_model
       REGEX "^#include \"(runtime|compiler/sema|compiler/codegen|compiler/host)/")
  if(NOT uses_ast)
    set_source_files_properties(${source} PROPERTIES UNITY_GROUP compiler)
  elseif(NOT sees_model)
    set_source_files_properties(${source} PROPERTIES UNITY_GROUP compiler_using_ast)
  endif()
endforeach()
cmake_language(DEFER DIRECTORY ${PROJECT_SOURCE_DIR}
               CALL set_target_properties kiln_compiler PROPERTIES UNITY_BUILD_MODE GROUP)

# Small helpers so that tests, GPU tests, examples and benchmarks are registered one way.

# Exit code by which a test says "skipped" (e.g. a GPU test on a machine without a GPU).
set(SPECBENCH_SKIP_RETURN_CODE 77)

function(specbench_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-missing-field-initializers>)
endfunction()

# With SPECBENCH_UNITY_BUILD, a host target's C++ sources compile in batches of eight: most of a
# clean build is parsing the same third-party headers (gtest, nlohmann, CLI11, fmt) in every
# file, which a batch parses once (scripts/test.sh turns it on for CI's clean builds). CUDA
# sources stay out: CMake 3.31 and newer would batch them too, and each kernel file is compiled
# on its own for its architectures anyway.
function(specbench_unity_build target)
  if(NOT SPECBENCH_UNITY_BUILD)
    return()
  endif()
  set_target_properties(${target} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 8)
  # In a batch every .cpp is an included file, so GCC warns about a class holding a type from the
  # file's anonymous namespace (-Wsubobject-linkage); built file by file that is fine and silent.
  target_compile_options(${target} PRIVATE
    $<$<AND:$<COMPILE_LANGUAGE:CXX>,$<CXX_COMPILER_ID:GNU>>:-Wno-subobject-linkage>)
  get_target_property(_sources ${target} SOURCES)
  foreach(_source ${_sources})
    if(_source MATCHES "\\.cu$")
      set_source_files_properties(${_source} TARGET_DIRECTORY ${target}
                                  PROPERTIES SKIP_UNITY_BUILD_INCLUSION ON)
    endif()
  endforeach()
endfunction()

# specbench_add_test(NAME SOURCES a.cpp b.cpp [LIBS ...] [LABELS ...] [TIMEOUT s] [ENV ...])
function(specbench_add_test name)
  cmake_parse_arguments(T "" "TIMEOUT" "SOURCES;LIBS;LABELS;ENV" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE specbench_testing ${T_LIBS})
  specbench_warnings(${name})
  specbench_unity_build(${name})
  add_test(NAME ${name} COMMAND ${name})
  if(NOT T_TIMEOUT)
    set(T_TIMEOUT 300)
  endif()
  set_tests_properties(${name} PROPERTIES
    TIMEOUT ${T_TIMEOUT}
    SKIP_RETURN_CODE ${SPECBENCH_SKIP_RETURN_CODE}
    LABELS "${T_LABELS}")
  list(APPEND T_ENV ${SPECBENCH_SANITIZER_TEST_ENV})
  if(T_ENV)
    set_tests_properties(${name} PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()

# A test that needs a GPU: it links the GPU test main, which exits with the skip code and a
# printed reason when no usable CUDA device is present. PROBE_ONLY: the test needs only the
# preflight's probe kernels (not the verification kernels, which need sm_90 or newer).
function(specbench_add_gpu_test name)
  cmake_parse_arguments(G "PROBE_ONLY" "" "" ${ARGN})
  set(_main specbench_gpu_test_main)
  if(G_PROBE_ONLY)
    set(_main specbench_probe_gpu_test_main)
  endif()
  specbench_add_test(${name} ${G_UNPARSED_ARGUMENTS} LIBS ${_main} LABELS gpu)
endfunction()

# specbench_add_fuzzer(NAME SOURCES ...): a libFuzzer target under ASan and UBSan, built only with
# -DSPECBENCH_BUILD_FUZZERS=ON (needs clang; docs/fuzzing.md). Not run by CTest: its corpus is.
function(specbench_add_fuzzer name)
  if(NOT SPECBENCH_BUILD_FUZZERS)
    return()
  endif()
  cmake_parse_arguments(F "" "" "SOURCES" ${ARGN})
  add_executable(${name} ${F_SOURCES})
  target_link_libraries(${name} PRIVATE specbench)
  target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
endfunction()

# specbench_add_benchmark(NAME SOURCES ...): a Google Benchmark program (not run by CTest).
function(specbench_add_benchmark name)
  cmake_parse_arguments(B "" "" "SOURCES;LIBS" ${ARGN})
  add_executable(${name} ${B_SOURCES})
  target_link_libraries(${name} PRIVATE specbench benchmark::benchmark ${B_LIBS})
  specbench_warnings(${name})
endfunction()

# specbench_add_example(NAME SOURCES ... [ARGS ...]): built and run as a quick CTest test.
function(specbench_add_example name)
  cmake_parse_arguments(E "" "" "SOURCES;ARGS" ${ARGN})
  add_executable(${name} ${E_SOURCES})
  target_link_libraries(${name} PRIVATE specbench)
  specbench_warnings(${name})
  if(SPECBENCH_BUILD_TESTS)
    add_test(NAME example.${name} COMMAND ${name} ${E_ARGS})
    set_tests_properties(example.${name} PROPERTIES TIMEOUT 120
      SKIP_RETURN_CODE ${SPECBENCH_SKIP_RETURN_CODE} LABELS example)
    if(SPECBENCH_SANITIZER_TEST_ENV)
      set_tests_properties(example.${name} PROPERTIES ENVIRONMENT "${SPECBENCH_SANITIZER_TEST_ENV}")
    endif()
  endif()
endfunction()

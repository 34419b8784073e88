# SPECBENCH_SANITIZE: build the host code (not the CUDA device code) under sanitizers, e.g.
# "address,undefined" or "thread". The test script's second pass (no CUDA) uses
# address,undefined, so every CI run looks for memory errors, leaks and undefined behaviour in
# the library, the CLI the tests start and the tests themselves.
set(SPECBENCH_SANITIZE "" CACHE STRING "Sanitizers for host code: '', 'address,undefined' or 'thread'")
set(SPECBENCH_SANITIZER_TEST_ENV "")
if(SPECBENCH_SANITIZE)
  if(NOT SPECBENCH_SANITIZE MATCHES "^(address|undefined|thread|leak)(,(address|undefined|thread|leak))*$")
    message(FATAL_ERROR "SPECBENCH_SANITIZE='${SPECBENCH_SANITIZE}': use a comma-separated list of "
                        "address, undefined, leak or thread (e.g. address,undefined)")
  endif()
  if(SPECBENCH_SANITIZE MATCHES "thread" AND SPECBENCH_SANITIZE MATCHES "address|leak")
    message(FATAL_ERROR "SPECBENCH_SANITIZE='${SPECBENCH_SANITIZE}': ThreadSanitizer cannot be "
                        "combined with AddressSanitizer or LeakSanitizer; build them separately")
  endif()
  # Undefined behaviour fails the test instead of printing and going on.
  set(_flags -fsanitize=${SPECBENCH_SANITIZE} -fno-omit-frame-pointer)
  if(SPECBENCH_SANITIZE MATCHES "undefined")
    list(APPEND _flags -fno-sanitize-recover=undefined)
  endif()
  add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:${_flags}>")
  # GCC 12 to 14 under AddressSanitizer warn that std::function may be used uninitialized inside
  # libstdc++'s <regex> (GCC bug 105616, a false positive). The build without sanitizers keeps
  # the warning for our own code.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND SPECBENCH_SANITIZE MATCHES "address")
    add_compile_options("$<$<COMPILE_LANGUAGE:CXX>:-Wno-maybe-uninitialized>")
  endif()
  add_link_options(-fsanitize=${SPECBENCH_SANITIZE})
  message(STATUS "specbench: host code built with -fsanitize=${SPECBENCH_SANITIZE}")
  # Environment for every CTest test (the CLI processes the tests start inherit it).
  list(APPEND SPECBENCH_SANITIZER_TEST_ENV "UBSAN_OPTIONS=print_stacktrace=1")
  if(SPECBENCH_SANITIZE MATCHES "thread")
    list(APPEND SPECBENCH_SANITIZER_TEST_ENV
         "TSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/tests/tsan.supp")
  endif()
endif()

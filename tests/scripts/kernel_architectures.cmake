# cmake -P test of specbench_kernel_architectures: which CMAKE_CUDA_ARCHITECTURES entries the
# verification kernels keep (sm_90 and newer, and entries without a number) and which they leave
# to the preflight's probe kernels alone.
include(${CMAKE_CURRENT_LIST_DIR}/../../cmake/SpecbenchKernelArchitectures.cmake)

function(expect all want_kept want_dropped)
  specbench_kernel_architectures("${all}" kept dropped)
  if(NOT "${kept}" STREQUAL "${want_kept}" OR NOT "${dropped}" STREQUAL "${want_dropped}")
    message(FATAL_ERROR "'${all}': kept '${kept}' (want '${want_kept}'), "
                        "dropped '${dropped}' (want '${want_dropped}')")
  endif()
endfunction()

expect("90;100;120" "90;100;120" "")
expect("80" "" "80")
expect("80;90" "90" "80")
expect("75-real;86;89-virtual;90a-real;100f;120-virtual" "90a-real;100f;120-virtual"
       "75-real;86;89-virtual")
expect("native" "native" "")
message(STATUS "kernel architectures: all cases passed")

# The CUDA architectures the verification and tree-building kernels build for. They use sm_90
# features (thread-block clusters, distributed shared memory, st.async), so an older entry of
# CMAKE_CUDA_ARCHITECTURES (80 for an A100, 89 for an L40S) is left out of the kernels: it would
# fail inside nvcc. The preflight's probe kernels still build for every entry, so a build for
# "80;90" preflights A100s and H100s and verifies on the H100s. Entries without a number
# ("native") are kept as given. Usable in script mode (tests/scripts/kernel_architectures.cmake).
function(specbench_kernel_architectures all out_kept out_dropped)
  set(kept)
  set(dropped)
  foreach(arch IN LISTS all)
    if(arch MATCHES "^([0-9]+)")
      if(CMAKE_MATCH_1 LESS 90)
        list(APPEND dropped ${arch})
      else()
        list(APPEND kept ${arch})
      endif()
    else()
      list(APPEND kept ${arch})
    endif()
  endforeach()
  set(${out_kept} "${kept}" PARENT_SCOPE)
  set(${out_dropped} "${dropped}" PARENT_SCOPE)
endfunction()

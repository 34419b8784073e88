# CUDA is optional. With nvcc the kernels build for explicit architectures (never `native`, which
# fails on a machine without a GPU); without it, launchers report "not compiled" with a remedy.
# SPECBENCH_HAVE_CUDA: nvcc is used (the preflight's probe kernels, for every architecture).
# SPECBENCH_KERNELS_CUDA: the verification kernels are compiled too (an sm_90 or newer entry).
include(SpecbenchKernelArchitectures)
set(SPECBENCH_HAVE_CUDA OFF)
set(SPECBENCH_KERNELS_CUDA OFF)
set(SPECBENCH_KERNEL_CUDA_ARCHITECTURES "")
if(NOT SPECBENCH_ENABLE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  if(NOT CMAKE_CUDA_COMPILER AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
      # Hopper (H100/H200), Blackwell datacenter (B200), Blackwell workstation (RTX PRO 6000).
      set(CMAKE_CUDA_ARCHITECTURES "90;100;120")
    endif()
    enable_language(CUDA)
    # CUDA sources use C++17: CMake 3.25 (Debian 12) does not know how to ask nvcc for C++20.
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    # Static cudart: the binary starts on machines without a CUDA runtime installed.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Static)
    find_package(CUDAToolkit REQUIRED)
    set(SPECBENCH_HAVE_CUDA ON)
    specbench_kernel_architectures("${CMAKE_CUDA_ARCHITECTURES}" SPECBENCH_KERNEL_CUDA_ARCHITECTURES
                                   _dropped)
    if(SPECBENCH_KERNEL_CUDA_ARCHITECTURES)
      set(SPECBENCH_KERNELS_CUDA ON)
      message(STATUS "specbench: CUDA kernels ON for architectures "
                     "${SPECBENCH_KERNEL_CUDA_ARCHITECTURES}")
    else()
      message(STATUS "specbench: CUDA kernels OFF: they need sm_90 or newer")
    endif()
    if(_dropped)
      message(STATUS "specbench: ${_dropped} get the preflight's probe kernels only (the "
                     "verification kernels need sm_90 or newer: thread-block clusters)")
    endif()
  elseif(SPECBENCH_ENABLE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SPECBENCH_ENABLE_CUDA=ON but no CUDA compiler was found. Install the "
                        "CUDA toolkit at /usr/local/cuda or set CMAKE_CUDA_COMPILER.")
  else()
    message(STATUS "specbench: no CUDA compiler; kernels are not compiled (launchers say so)")
  endif()
endif()

# Decides whether the CUDA paths (cuSOLVER analysis backend) are built. AUTO builds them when nvcc is on
# the PATH; the code then still checks for a device at runtime and falls back to the CPU path.
set(SHARELENS_HAVE_CUDA OFF)
if(NOT SHARELENS_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cusolver AND TARGET CUDA::cublas)
    set(SHARELENS_HAVE_CUDA ON)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Ampere, Ada and Hopper natively, plus PTX for newer GPUs.
      set(CMAKE_CUDA_ARCHITECTURES "80-real;89-real;90")
    endif()
    if(NOT CMAKE_CUDA_COMPILER)
      set(CMAKE_CUDA_COMPILER "${CUDAToolkit_NVCC_EXECUTABLE}")
    endif()
    enable_language(CUDA)
    # CMake 3.25 does not know nvcc's C++20 flag (nvcc 12+ accepts -std=c++20); teach it, so CUDA sources
    # get the same dialect as the C++ ones.
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA_STANDARD 20)
    message(STATUS "ShareLens: CUDA toolkit ${CUDAToolkit_VERSION} found; building the cuSOLVER backend")
  elseif(SHARELENS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SHARELENS_CUDA=ON but no CUDA toolkit with cuSOLVER and cuBLAS was found")
  else()
    message(STATUS "ShareLens: no CUDA toolkit; CPU backends only")
  endif()
endif()

# Decides whether the CUDA paths (cuSOLVER analysis backend) are built. AUTO builds them when nvcc is on
# the PATH; the code then still checks for a device at runtime and falls back to the CPU path.
set(SHARELENS_HAVE_CUDA OFF)
if(NOT SHARELENS_CUDA STREQUAL "OFF")
  find_package(CUDAToolkit QUIET)
  if(CUDAToolkit_FOUND AND TARGET CUDA::cusolver AND TARGET CUDA::cublas)
    set(SHARELENS_HAVE_CUDA ON)
    message(STATUS "ShareLens: CUDA toolkit ${CUDAToolkit_VERSION} found; building the cuSOLVER backend")
  elseif(SHARELENS_CUDA STREQUAL "ON")
    message(FATAL_ERROR "SHARELENS_CUDA=ON but no CUDA toolkit with cuSOLVER and cuBLAS was found")
  else()
    message(STATUS "ShareLens: no CUDA toolkit; CPU backends only")
  endif()
endif()

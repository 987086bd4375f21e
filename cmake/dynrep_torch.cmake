# libtorch for replay/run, as the target dynrep::torch (DYNREP_TORCH_FOUND, DYNREP_TORCH_LIB_DIR).
# A CPU build of torch: PyTorch's own CMake config. A CUDA build (the only Linux wheels of 2.14
# and 2.15) stops its config with a FATAL_ERROR unless the whole CUDA toolkit is found, and the
# runner calls CPU kernels only: the target is made from the wheel's own CPU libraries and
# headers, so it builds the same with or without a toolkit.
set(DYNREP_TORCH_FOUND OFF)
if(NOT DYNREP_WITH_TORCH)
  return()
endif()
find_package(Python COMPONENTS Interpreter QUIET)
if(Python_EXECUTABLE)
  # Without PyTorch's plugin autoload: it would import this package, half-built while we configure.
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env TORCH_DEVICE_BACKEND_AUTOLOAD=0 "${Python_EXECUTABLE}" -c
      "import os, torch; print(torch.__version__, os.path.dirname(torch.__file__), int(torch._C._GLIBCXX_USE_CXX11_ABI), torch.utils.cmake_prefix_path, sep=';')"
    OUTPUT_VARIABLE _dynrep_torch OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_VARIABLE _dynrep_torch_error
    RESULT_VARIABLE _dynrep_torch_status)
endif()
if(NOT Python_EXECUTABLE OR NOT _dynrep_torch_status EQUAL 0)
  string(REGEX MATCH "[^\n]*$" _dynrep_torch_error "${_dynrep_torch_error}")
  message(STATUS "torch not importable (${_dynrep_torch_error}): replay-run is not built (pip install torch==2.15.0, then rebuild)")
  return()
endif()
list(GET _dynrep_torch 0 DYNREP_TORCH_VERSION)
list(GET _dynrep_torch 1 _dynrep_torch_dir)
list(GET _dynrep_torch 2 _dynrep_torch_abi)
list(GET _dynrep_torch 3 _dynrep_torch_prefix)
set(DYNREP_TORCH_LIB_DIR "${_dynrep_torch_dir}/lib")

if(DYNREP_TORCH_VERSION MATCHES "\\+cpu$")
  list(APPEND CMAKE_PREFIX_PATH "${_dynrep_torch_prefix}")
  find_package(Torch CONFIG QUIET)
endif()
add_library(dynrep_torch INTERFACE)
add_library(dynrep::torch ALIAS dynrep_torch)
if(Torch_FOUND)
  target_link_libraries(dynrep_torch INTERFACE ${TORCH_LIBRARIES})
  set(_dynrep_torch_how "PyTorch's CMake config")
else()
  find_library(_dynrep_torch_cpu torch_cpu PATHS "${DYNREP_TORCH_LIB_DIR}" NO_DEFAULT_PATH REQUIRED)
  find_library(_dynrep_c10 c10 PATHS "${DYNREP_TORCH_LIB_DIR}" NO_DEFAULT_PATH REQUIRED)
  target_include_directories(dynrep_torch SYSTEM INTERFACE "${_dynrep_torch_dir}/include"
                             "${_dynrep_torch_dir}/include/torch/csrc/api/include")
  target_link_libraries(dynrep_torch INTERFACE "${_dynrep_torch_cpu}" "${_dynrep_c10}")
  target_compile_definitions(dynrep_torch INTERFACE _GLIBCXX_USE_CXX11_ABI=${_dynrep_torch_abi})
  set(_dynrep_torch_how "the wheel's CPU libraries (a CUDA build)")
endif()
# libtorch's headers need C++20 from 2.14 on (operator<=> in c10); its own config asks for it.
target_compile_features(dynrep_torch INTERFACE cxx_std_20)
set(DYNREP_TORCH_FOUND ON)
message(STATUS "libtorch ${DYNREP_TORCH_VERSION} through ${_dynrep_torch_how}: building the graph runner (replay-run)")

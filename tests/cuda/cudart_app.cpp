// SPDX-License-Identifier: MIT
// A traced program on the real CUDA runtime, run by tests/cuda/cudart_check.cpp:
//   probe   prints "devices=N error=E" (cudaGetDeviceCount) and exits
//   run     20 scopes around a device memset on a stream of its own, then
//           20 plain host spans; prints "cuda_error=E" for the app's own calls
#include <edgetrace/cuda.hpp>

#include <cstdio>
#include <cstring>

EDGETRACE_CATEGORY(gpu);

int main(int argc, char** argv) {
  const char* mode = argc > 1 ? argv[1] : "";
  if (std::strcmp(mode, "probe") == 0) {
    int devices = 0;
    const cudaError_t error = cudaGetDeviceCount(&devices);
    std::printf("devices=%d error=%d\n", error == cudaSuccess ? devices : 0, static_cast<int>(error));
    return 0;
  }
  if (std::strcmp(mode, "run") != 0) return 2;
  // Like an app, it goes on when CUDA fails: its GPU work is skipped, its
  // host work and the host spans around it continue.
  cudaStream_t stream = nullptr;
  const bool cuda = cudaStreamCreate(&stream) == cudaSuccess;
  void* buffer = nullptr;
  if (cuda && cudaMalloc(&buffer, 1 << 20) != cudaSuccess) buffer = nullptr;
  for (int i = 0; i < 20; ++i) {
    EDGETRACE_CUDA_SCOPE(gpu, "memset", stream);
    if (buffer != nullptr) cudaMemsetAsync(buffer, i, 1 << 20, stream);
  }
  for (int i = 0; i < 20; ++i) {
    EDGETRACE_SCOPE(gpu, "host_only");
  }
  if (cuda) cudaStreamSynchronize(stream);
  std::printf("cuda_error=%d\n", static_cast<int>(cudaGetLastError()));
  return 0;
}

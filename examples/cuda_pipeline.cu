// SPDX-License-Identifier: MIT
// A traced CUDA pipeline: per frame, copy the input to the GPU, run a few
// kernels on two streams (one waits for the other through an event), copy
// the result back. Each step is an EDGETRACE_CUDA_SCOPE: a host span plus
// the GPU time of what it enqueued, on that stream's track, with an arrow
// from the launch. The last frames replay a CUDA graph captured from one
// frame: its capture shows as host spans flagged "captured", its launches
// are timed whole.
//
//   nvcc -std=c++17 -O2 -Iinclude examples/cuda_pipeline.cu -o cuda_pipeline
//   EDGETRACE_OUTPUT=cuda.etr ./cuda_pipeline && edgetrace json cuda.etr -o cuda.json
#include <edgetrace/cuda.hpp>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

EDGETRACE_CATEGORY(frame);
EDGETRACE_CATEGORY(copy);
EDGETRACE_CATEGORY(kernel);

namespace {

__global__ void scale(float* data, int n, float factor) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] *= factor;
}

__global__ void smooth(const float* in, float* out, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i > 0 && i < n - 1) out[i] = (in[i - 1] + in[i] + in[i + 1]) / 3.0f;
}

__global__ void add(float* data, const float* other, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) data[i] += other[i];
}

bool ok(cudaError_t error, const char* what) {
  if (error == cudaSuccess) return true;
  std::fprintf(stderr, "cuda_pipeline: %s: %s\n", what, cudaGetErrorString(error));
  return false;
}

struct pipeline {
  int n = 1 << 20;
  float* host_in = nullptr;
  float* host_out = nullptr;
  float* a = nullptr;
  float* b = nullptr;
  cudaStream_t copies = nullptr;   // H2D, the main kernels, D2H
  cudaStream_t compute = nullptr;  // a side kernel in parallel
  cudaEvent_t input_ready = nullptr;
  cudaEvent_t side_done = nullptr;

  int blocks() const { return (n + 255) / 256; }

  /// One frame. Every step is a CUDA scope on the stream it enqueues on.
  void frame() {
    const std::size_t bytes = static_cast<std::size_t>(n) * sizeof(float);
    EDGETRACE_SCOPE(frame, "frame");
    {
      EDGETRACE_CUDA_SCOPE(copy, "h2d", copies);
      cudaMemcpyAsync(a, host_in, bytes, cudaMemcpyHostToDevice, copies);
      cudaEventRecord(input_ready, copies);
    }
    {
      EDGETRACE_CUDA_SCOPE(kernel, "smooth", compute);
      cudaStreamWaitEvent(compute, input_ready, 0);
      smooth<<<blocks(), 256, 0, compute>>>(a, b, n);
      cudaEventRecord(side_done, compute);
    }
    {
      EDGETRACE_CUDA_SCOPE(kernel, "scale", copies);
      scale<<<blocks(), 256, 0, copies>>>(a, n, 0.5f);
    }
    {
      EDGETRACE_CUDA_SCOPE(kernel, "add", copies);
      cudaStreamWaitEvent(copies, side_done, 0);
      add<<<blocks(), 256, 0, copies>>>(a, b, n);
    }
    {
      EDGETRACE_CUDA_SCOPE(copy, "d2h", copies);
      cudaMemcpyAsync(host_out, a, bytes, cudaMemcpyDeviceToHost, copies);
    }
    EDGETRACE_SCOPE(frame, "wait");
    cudaStreamSynchronize(copies);
  }
};

}  // namespace

int main(int argc, char** argv) {
  int frames = 50;
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--frames") == 0) frames = std::atoi(argv[i + 1]);
  int devices = 0;
  const cudaError_t probe = cudaGetDeviceCount(&devices);
  if (probe != cudaSuccess || devices == 0) {
    std::printf("cuda_pipeline: no usable CUDA device (%s); nothing to run\n",
                probe != cudaSuccess ? cudaGetErrorString(probe) : "0 devices");
    return 0;
  }
  EDGETRACE_THREAD_NAME("main");
  pipeline p;
  const std::size_t bytes = static_cast<std::size_t>(p.n) * sizeof(float);
  if (!ok(cudaMallocHost(&p.host_in, bytes), "cudaMallocHost") || !ok(cudaMallocHost(&p.host_out, bytes), "cudaMallocHost") ||
      !ok(cudaMalloc(&p.a, bytes), "cudaMalloc") || !ok(cudaMalloc(&p.b, bytes), "cudaMalloc") ||
      !ok(cudaStreamCreateWithFlags(&p.copies, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !ok(cudaStreamCreateWithFlags(&p.compute, cudaStreamNonBlocking), "cudaStreamCreate") ||
      !ok(cudaEventCreateWithFlags(&p.input_ready, cudaEventDisableTiming), "cudaEventCreate") ||
      !ok(cudaEventCreateWithFlags(&p.side_done, cudaEventDisableTiming), "cudaEventCreate"))
    return 1;
  for (int i = 0; i < p.n; ++i) p.host_in[i] = static_cast<float>(i % 1000);

  for (int i = 0; i < frames; ++i) p.frame();

  // Capture one frame's GPU work into a graph (the scopes inside record
  // host spans flagged "captured" and add nothing to the graph), then
  // replay it: a scope around cudaGraphLaunch times the whole graph.
  cudaGraph_t graph = nullptr;
  cudaGraphExec_t exec = nullptr;
  {
    EDGETRACE_SCOPE(frame, "capture");
    ok(cudaStreamBeginCapture(p.copies, cudaStreamCaptureModeGlobal), "cudaStreamBeginCapture");
    {
      EDGETRACE_CUDA_SCOPE(kernel, "scale", p.copies);
      scale<<<p.blocks(), 256, 0, p.copies>>>(p.a, p.n, 0.5f);
    }
    {
      EDGETRACE_CUDA_SCOPE(copy, "d2h", p.copies);
      cudaMemcpyAsync(p.host_out, p.a, bytes, cudaMemcpyDeviceToHost, p.copies);
    }
    ok(cudaStreamEndCapture(p.copies, &graph), "cudaStreamEndCapture");
    ok(cudaGraphInstantiate(&exec, graph, 0), "cudaGraphInstantiate");
  }
  for (int i = 0; i < 10 && exec != nullptr; ++i) {
    EDGETRACE_CUDA_SCOPE(frame, "graph", p.copies);
    cudaGraphLaunch(exec, p.copies);
  }
  {
    EDGETRACE_SCOPE(frame, "wait");
    cudaStreamSynchronize(p.copies);
  }
  std::printf("cuda_pipeline: %d frames and 10 graph launches; out[42] = %g\n", frames, p.host_out[42]);
  if (exec != nullptr) cudaGraphExecDestroy(exec);
  if (graph != nullptr) cudaGraphDestroy(graph);
  cudaFree(p.a);
  cudaFree(p.b);
  cudaFreeHost(p.host_in);
  cudaFreeHost(p.host_out);
  return 0;
}

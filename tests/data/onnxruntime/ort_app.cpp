// SPDX-License-Identifier: MIT
// The traced app whose ONNX Runtime profiles and dump tests/data/onnxruntime
// holds (generate.sh builds and runs it against a real ONNX Runtime; the
// suite only reads what it wrote). A small CNN built in memory (no model
// file), run frame by frame inside the app's own spans:
//
//   ort_app session N THREADS PREFIX  SessionOptions::EnableProfiling; the
//                                     profiler's start recorded as the
//                                     argument onnxruntime.profiling_start_ns
//   ort_app plain   N THREADS PREFIX  the same without that argument (the
//                                     importer must fit the time base)
//   ort_app run     N THREADS PREFIX  no session profiling; every 10th Run
//                                     profiled through its RunOptions, its
//                                     span marked onnxruntime.run_profiled;
//                                     a frame every 1.5 ms (ONNX Runtime names
//                                     a run's profile by the ms: two in one
//                                     ms would share a file)
//   ort_app none    N THREADS PREFIX  no profiling (ONNX Runtime's cost)
//
// Written against ONNX Runtime's C API (onnxruntime_c_api.h), API version 22
// or later (RunOptionsEnableProfiling needs 1.24+ for the 'run' mode).
#include <edgetrace/edgetrace.hpp>

#include <onnxruntime_c_api.h>

#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

EDGETRACE_CATEGORY(app);

namespace {

const OrtApi* ort = nullptr;

void check(OrtStatus* status, const char* what) {
  if (status == nullptr) return;
  std::fprintf(stderr, "ort_app: %s: %s\n", what, ort->GetErrorMessage(status));
  ort->ReleaseStatus(status);
  std::exit(1);
}

// --- A protobuf writer just big enough for one ONNX model ----------------
class proto {
 public:
  proto& varint(std::uint64_t v) {
    while (v >= 0x80) {
      bytes_.push_back(static_cast<char>((v & 0x7f) | 0x80));
      v >>= 7;
    }
    bytes_.push_back(static_cast<char>(v));
    return *this;
  }
  proto& integer(int field, std::int64_t v) { return varint(static_cast<std::uint64_t>(field) << 3).varint(static_cast<std::uint64_t>(v)); }
  proto& bytes(int field, const std::string& b) {
    varint(static_cast<std::uint64_t>(field) << 3 | 2).varint(b.size());
    bytes_ += b;
    return *this;
  }
  proto& message(int field, const proto& m) { return bytes(field, m.bytes_); }
  const std::string& data() const { return bytes_; }

 private:
  std::string bytes_;
};

proto ints_attribute(const char* name, std::vector<std::int64_t> values) {
  proto a;
  a.bytes(1, name);
  for (std::int64_t v : values) a.integer(8, v);
  return a.integer(20, 7);  // AttributeProto.type = INTS
}

proto node(const char* op, std::vector<std::string> inputs, const char* output, std::vector<proto> attributes = {}) {
  proto n;
  for (const std::string& i : inputs) n.bytes(1, i);
  n.bytes(2, output).bytes(3, std::string(op) + "_" + output).bytes(4, op);
  for (const proto& a : attributes) n.message(5, a);
  return n;
}

proto tensor(const char* name, std::vector<std::int64_t> dims, unsigned seed) {
  proto t;
  std::size_t count = 1;
  for (std::int64_t d : dims) {
    t.integer(1, d);
    count *= static_cast<std::size_t>(d);
  }
  std::string raw(count * sizeof(float), '\0');
  for (std::size_t i = 0; i < count; ++i) {
    seed = seed * 1103515245u + 12345u;
    const float v = (static_cast<float>((seed >> 16) & 0x7fff) / 32768.0f - 0.5f) * 0.2f;
    std::memcpy(&raw[i * sizeof v], &v, sizeof v);
  }
  return t.integer(2, 1).bytes(8, name).bytes(9, raw);  // FLOAT
}

proto value_info(const char* name, std::vector<std::int64_t> dims) {
  proto shape;
  for (std::int64_t d : dims) shape.message(1, proto().integer(1, d));
  proto tensor_type;
  tensor_type.integer(1, 1).message(2, shape);
  return proto().bytes(1, name).message(2, proto().message(1, tensor_type));
}

// x[1,3,32,32] -> Conv 8 3x3 -> Relu -> MaxPool 2x2 -> Conv 16 3x3 -> Relu
// -> GlobalAveragePool -> Flatten -> Gemm 10 -> Softmax -> y[1,10]
std::string model() {
  proto g;
  g.message(1, node("Conv", {"x", "w1", "b1"}, "c1", {ints_attribute("pads", {1, 1, 1, 1})}))
      .message(1, node("Relu", {"c1"}, "r1"))
      .message(1, node("MaxPool", {"r1"}, "p1",
                       {ints_attribute("kernel_shape", {2, 2}), ints_attribute("strides", {2, 2})}))
      .message(1, node("Conv", {"p1", "w2", "b2"}, "c2", {ints_attribute("pads", {1, 1, 1, 1})}))
      .message(1, node("Relu", {"c2"}, "r2"))
      .message(1, node("GlobalAveragePool", {"r2"}, "g1"))
      .message(1, node("Flatten", {"g1"}, "f1"))
      .message(1, node("Gemm", {"f1", "w3", "b3"}, "m1"))
      .message(1, node("Softmax", {"m1"}, "y"))
      .bytes(2, "edgetrace_cnn")
      .message(5, tensor("w1", {8, 3, 3, 3}, 1))
      .message(5, tensor("b1", {8}, 2))
      .message(5, tensor("w2", {16, 8, 3, 3}, 3))
      .message(5, tensor("b2", {16}, 4))
      .message(5, tensor("w3", {16, 10}, 5))
      .message(5, tensor("b3", {10}, 6))
      .message(11, value_info("x", {1, 3, 32, 32}))
      .message(12, value_info("y", {1, 10}));
  proto m;
  m.integer(1, 8).bytes(2, "edgetrace ort_app").message(8, proto().bytes(1, "").integer(2, 13)).message(7, g);
  return m.data();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: ort_app session|plain|run|none FRAMES THREADS PREFIX\n");
    return 2;
  }
  const std::string mode = argv[1];
  const int frames = std::atoi(argv[2]);
  const int threads = std::atoi(argv[3]);
  const std::string prefix = argv[4];
  EDGETRACE_THREAD_NAME("main");
  ort = OrtGetApiBase()->GetApi(ORT_API_VERSION);
  if (ort == nullptr) {
    std::fprintf(stderr, "ort_app: this ONNX Runtime is older than the header it was built with\n");
    return 1;
  }
  OrtEnv* env = nullptr;
  OrtSessionOptions* options = nullptr;
  OrtSession* session = nullptr;
  {
    EDGETRACE_SCOPE(app, "setup");
    check(ort->CreateEnv(ORT_LOGGING_LEVEL_WARNING, "ort_app", &env), "CreateEnv");
    check(ort->CreateSessionOptions(&options), "CreateSessionOptions");
    check(ort->SetIntraOpNumThreads(options, threads), "SetIntraOpNumThreads");
    if (mode == "session" || mode == "plain") check(ort->EnableProfiling(options, prefix.c_str()), "EnableProfiling");
    const std::string bytes = model();
    check(ort->CreateSessionFromArray(env, bytes.data(), bytes.size(), options, &session), "CreateSession");
    if (mode == "session") {
      std::uint64_t start_ns = 0;  // CLOCK_REALTIME, as ONNX Runtime's profiler reads it
      check(ort->SessionGetProfilingStartTimeNs(session, &start_ns), "SessionGetProfilingStartTimeNs");
      EDGETRACE_ARG(app, "onnxruntime.profiling_start_ns", static_cast<std::int64_t>(start_ns));
    }
  }
  OrtMemoryInfo* memory = nullptr;
  check(ort->CreateCpuMemoryInfo(OrtArenaAllocator, OrtMemTypeDefault, &memory), "CreateCpuMemoryInfo");
  std::vector<float> input(3 * 32 * 32);
  const std::int64_t shape[] = {1, 3, 32, 32};
  const char* input_names[] = {"x"};
  const char* output_names[] = {"y"};
  OrtRunOptions* profiled = nullptr;
  if (mode == "run") {
    check(ort->CreateRunOptions(&profiled), "CreateRunOptions");
    check(ort->RunOptionsEnableProfiling(profiled, prefix.c_str()), "RunOptionsEnableProfiling");
  }
  int best_total = 0;
  for (int frame = 0; frame < frames; ++frame) {
    EDGETRACE_SCOPE(app, "frame");
    OrtValue* x = nullptr;
    {
      EDGETRACE_SCOPE(app, "preprocess");
      for (std::size_t i = 0; i < input.size(); ++i) input[i] = std::sin(static_cast<float>(i + frame) * 0.01f);
      check(ort->CreateTensorWithDataAsOrtValue(memory, input.data(), input.size() * sizeof(float), shape, 4,
                                                ONNX_TENSOR_ELEMENT_DATA_TYPE_FLOAT, &x),
            "CreateTensor");
    }
    OrtValue* y = nullptr;
    {
      EDGETRACE_SCOPE(app, "ort_run");
      OrtRunOptions* run_options = mode == "run" && frame % 10 == 5 ? profiled : nullptr;
      if (run_options != nullptr) EDGETRACE_ARG(app, "onnxruntime.run_profiled", frame);
      check(ort->Run(session, run_options, input_names, &x, 1, output_names, 1, &y), "Run");
    }
    {
      EDGETRACE_SCOPE(app, "postprocess");
      float* scores = nullptr;
      check(ort->GetTensorMutableData(y, reinterpret_cast<void**>(&scores)), "GetTensorMutableData");
      int best = 0;
      for (int i = 1; i < 10; ++i)
        if (scores[i] > scores[best]) best = i;
      best_total += best;
      EDGETRACE_ARG(app, "class", best);
    }
    ort->ReleaseValue(y);
    ort->ReleaseValue(x);
    if (mode == "run") std::this_thread::sleep_for(std::chrono::microseconds(1500));
  }
  if (mode == "session" || mode == "plain") {
    OrtAllocator* allocator = nullptr;
    check(ort->GetAllocatorWithDefaultOptions(&allocator), "GetAllocatorWithDefaultOptions");
    char* file = nullptr;
    check(ort->SessionEndProfiling(session, allocator, &file), "SessionEndProfiling");
    std::printf("profile %s\n", file);
    check(ort->AllocatorFree(allocator, file), "AllocatorFree");
  }
  if (profiled != nullptr) ort->ReleaseRunOptions(profiled);
  ort->ReleaseMemoryInfo(memory);
  ort->ReleaseSession(session);
  ort->ReleaseSessionOptions(options);
  ort->ReleaseEnv(env);
  std::printf("frames %d checksum %d\n", frames, best_total);
  return 0;
}

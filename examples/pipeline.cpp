// SPDX-License-Identifier: MIT
// How-to: a four-thread CPU inference pipeline (decode → preprocess → infer → postprocess) traced with edgetrace.
//
// Build it (examples are on in a top-level build), then:
//
//   ./pipeline                                   # runs untraced: no file, no thread
//   EDGETRACE_OUTPUT=pipeline.etr ./pipeline     # records a dump
//   edgetrace json pipeline.etr -o pipeline.json # open in ui.perfetto.dev
//
// Options: --frames N (default 48), --layers M (conv blocks, default 3).
//
// What to look at in the trace:
//   * one track per thread, named with EDGETRACE_THREAD_NAME;
//   * "inference" spans on the inference thread, each holding one span per
//     model layer (names from a run-time list, via edgetrace::intern);
//   * queue depth counters between the stages, and "wait_push"/"wait_pop"
//     spans showing which stage is the bottleneck;
//   * "frame_ready" / "frame_done" instants marking each frame's life;
//   * phases "warm up" (the first 8 frames) and "measure" (edgetrace::phase):
//     `edgetrace summary pipeline.etr --phase measure` leaves warm-up out;
//   * each layer span carries its op type and output shape ("1x32x16x16")
//     as interned-string arguments (EDGETRACE_ARG_NAMED), as ONNX Runtime's
//     profiler shows per-node shapes: `edgetrace summary pipeline.etr --by
//     arg:op` gives one row per op type, `edgetrace csv` a column per key;
//   * each top_k span carries the winning class (an int), its confidence
//     (a float) and whether it beat 50 % (a bool) as EDGETRACE_ARG values;
//   * activations come from a traced allocator (EDGETRACE_ALLOC/FREE): a
//     "memory: activations" track in the JSON, and "peak mem" columns in the
//     summary saying which layer needs the memory;
//   * every frame is a flow (EDGETRACE_FLOW) through the four stages: arrows
//     across the threads in the JSON, and a "frame" row with the end-to-end
//     latency per frame in the summary.
//
// Capture control without changing the code: EDGETRACE_START_AFTER=50ms
// (or =8marks in an app with EDGETRACE_MARK), EDGETRACE_DURATION=100ms,
// EDGETRACE_TOGGLE_SIGNAL=SIGUSR2.
#include <edgetrace/edgetrace.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Categories: declared once, at namespace scope. A typo in a macro's category
// is a compile error. At run time EDGETRACE_CATEGORIES=infer,queue records a
// subset; at build time EDGETRACE_EXCLUDED_CATEGORIES="queue" removes one.
EDGETRACE_CATEGORY(decode);
EDGETRACE_CATEGORY(preprocess);
EDGETRACE_CATEGORY(infer);
EDGETRACE_CATEGORY(postprocess);
EDGETRACE_CATEGORY(queue);

namespace {

// ---------------------------------------------------------------------------
// Sizes. A "camera" frame is 96x72 RGB; the network sees 16x16x3 floats.
constexpr int frame_width = 96;
constexpr int frame_height = 72;
constexpr int input_side = 16;
constexpr int positions = input_side * input_side;  // spatial positions per feature map
constexpr int hidden_channels = 32;
constexpr int class_count = 10;
constexpr std::size_t queue_capacity = 4;

struct frame {
  int index = 0;
  std::vector<std::uint8_t> pixels;  // decode: frame_height x frame_width x 3, interleaved
  std::vector<float> tensor;         // preprocess: channels x positions, planar, normalised
  std::vector<float> scores;         // inference: class scores
};

// ---------------------------------------------------------------------------
// A bounded blocking queue between two stages (mutex + condition variables).
// The traced parts: how long a producer waits for room ("wait_push") and a
// consumer for work ("wait_pop"). The callers record the depth as a counter.
template <class T>
class bounded_queue {
 public:
  explicit bounded_queue(std::size_t capacity) : capacity_(capacity) {}

  /// Blocks while full; returns the depth after the push.
  std::size_t push(T item) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (items_.size() >= capacity_) {
      EDGETRACE_SCOPE(queue, "wait_push");  // only recorded when we actually wait
      not_full_.wait(lock, [&] { return items_.size() < capacity_; });
    }
    items_.push_back(std::move(item));
    const std::size_t depth = items_.size();
    lock.unlock();
    not_empty_.notify_one();
    return depth;
  }

  /// Blocks while empty; returns nothing once closed and drained. `depth`
  /// receives the depth after the pop.
  std::optional<T> pop(std::size_t& depth) {
    std::unique_lock<std::mutex> lock(mutex_);
    if (items_.empty() && !closed_) {
      EDGETRACE_SCOPE(queue, "wait_pop");
      not_empty_.wait(lock, [&] { return !items_.empty() || closed_; });
    }
    if (items_.empty()) return std::nullopt;
    T item = std::move(items_.front());
    items_.pop_front();
    depth = items_.size();
    lock.unlock();
    not_full_.notify_one();
    return item;
  }

  /// No more pushes; consumers drain what is left, then pop() returns empty.
  void close() {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      closed_ = true;
    }
    not_empty_.notify_all();
  }

 private:
  std::mutex mutex_;
  std::condition_variable not_empty_;
  std::condition_variable not_full_;
  std::deque<T> items_;
  std::size_t capacity_;
  bool closed_ = false;
};

// ---------------------------------------------------------------------------
// Stage 1: decode. Stands in for a video decoder: synthesises a frame with a
// moving pattern (the busy work a real decoder would do).
std::vector<std::uint8_t> decode_frame(int index) {
  EDGETRACE_SCOPE(decode, "decode_frame");
  EDGETRACE_FLOW(decode, "frame", index);  // the first step of frame `index`
  std::vector<std::uint8_t> pixels(static_cast<std::size_t>(frame_width) * frame_height * 3);
  for (int y = 0; y < frame_height; ++y) {
    for (int x = 0; x < frame_width; ++x) {
      const float phase = 0.07f * static_cast<float>(x + 3 * index) + 0.05f * static_cast<float>(y);
      const float wave = 0.5f + 0.5f * std::sin(phase);
      std::uint8_t* p = &pixels[(static_cast<std::size_t>(y) * frame_width + static_cast<std::size_t>(x)) * 3];
      p[0] = static_cast<std::uint8_t>(255.0f * wave);
      p[1] = static_cast<std::uint8_t>((x * 7 + y * 3 + index) & 0xff);
      p[2] = static_cast<std::uint8_t>(255.0f * (1.0f - wave));
    }
  }
  return pixels;
}

// ---------------------------------------------------------------------------
// Stage 2: preprocess. Box-filter resize to 16x16, then per-channel
// normalisation into a planar float tensor. Each step is its own span, so
// the trace shows which one costs more.
std::vector<float> resize(const std::vector<std::uint8_t>& pixels) {
  EDGETRACE_SCOPE(preprocess, "resize");
  constexpr int step_x = frame_width / input_side;
  constexpr int step_y = frame_height / input_side;
  std::vector<float> resized(static_cast<std::size_t>(positions) * 3);
  for (int oy = 0; oy < input_side; ++oy) {
    for (int ox = 0; ox < input_side; ++ox) {
      for (int c = 0; c < 3; ++c) {
        float sum = 0;
        for (int y = oy * step_y; y < (oy + 1) * step_y; ++y)
          for (int x = ox * step_x; x < (ox + 1) * step_x; ++x)
            sum += pixels[(static_cast<std::size_t>(y) * frame_width + static_cast<std::size_t>(x)) * 3 +
                          static_cast<std::size_t>(c)];
        resized[static_cast<std::size_t>(c) * positions + static_cast<std::size_t>(oy * input_side + ox)] =
            sum / static_cast<float>(step_x * step_y);
      }
    }
  }
  return resized;
}

void normalize(std::vector<float>& tensor) {
  EDGETRACE_SCOPE(preprocess, "normalize");
  static constexpr float mean[3] = {123.7f, 116.3f, 103.5f};
  static constexpr float inv_std[3] = {1 / 58.4f, 1 / 57.1f, 1 / 57.4f};
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < positions; ++i) {
      float& v = tensor[static_cast<std::size_t>(c) * positions + static_cast<std::size_t>(i)];
      v = (v - mean[c]) * inv_std[c];
    }
}

// ---------------------------------------------------------------------------
// A traced allocator: how to hook a memory pool into edgetrace. Any
// allocator (a device memory pool, an arena) does the same: record the
// address and size when a block is handed out, the address when it comes
// back. The pool name groups blocks into one live-bytes track.
template <class T>
struct traced_allocator {
  using value_type = T;
  traced_allocator() = default;
  template <class U>
  traced_allocator(const traced_allocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    T* block = std::allocator<T>{}.allocate(n);
    EDGETRACE_ALLOC(infer, block, n * sizeof(T), "activations");
    return block;
  }
  void deallocate(T* block, std::size_t n) noexcept {
    EDGETRACE_FREE(infer, block);
    std::allocator<T>{}.deallocate(block, n);
  }
  friend bool operator==(const traced_allocator&, const traced_allocator&) noexcept { return true; }
  friend bool operator!=(const traced_allocator&, const traced_allocator&) noexcept { return false; }
};

/// The network's activations live in the traced pool.
using activation = std::vector<float, traced_allocator<float>>;

// ---------------------------------------------------------------------------
// Stage 3: inference. A toy convolutional network: blocks of
// (1x1 conv, batch norm, relu), then global average pool and a dense layer.
// Layer names come from a run-time list, as they would from a model file;
// each is interned once at load time and recorded with EDGETRACE_SCOPE_NAMED.
enum class layer_kind { conv, batch_norm, relu, pool, dense };

struct layer {
  std::string name;
  layer_kind kind;
  int in_channels;
  int out_channels;
  std::vector<float> weights;  // conv/dense: out x in; batch norm: scale then shift
  edgetrace::name_handle handle;  // from edgetrace::intern(name): cheap to record
  edgetrace::name_handle op;      // the op type, recorded as the span's "op" argument
  edgetrace::name_handle shape;   // the output shape, e.g. "1x32x16x16": the "shape" argument
};

/// A layer's output shape as ONNX Runtime prints it (N x C x H x W, or N x C
/// once pooled), for the "shape" argument.
std::string shape_text(const layer& l) {
  const bool spatial = l.kind != layer_kind::pool && l.kind != layer_kind::dense;
  return "1x" + std::to_string(l.out_channels) +
         (spatial ? "x" + std::to_string(input_side) + "x" + std::to_string(input_side) : std::string());
}

const char* op_name(layer_kind kind) {
  switch (kind) {
    case layer_kind::conv: return "Conv";
    case layer_kind::batch_norm: return "BatchNorm";
    case layer_kind::relu: return "Relu";
    case layer_kind::pool: return "GlobalAveragePool";
    case layer_kind::dense: return "Gemm";
  }
  return "?";
}

/// "Loads" the model: in a real app the names and weights come from a file.
std::vector<layer> load_model(int blocks) {
  std::vector<layer> model;
  std::uint32_t seed = 12345;
  auto next_weight = [&seed] {
    seed = seed * 1664525u + 1013904223u;  // small LCG: deterministic weights
    return (static_cast<float>(seed >> 8) / 16777216.0f - 0.5f) * 0.4f;
  };
  int channels = 3;
  for (int b = 1; b <= blocks; ++b) {
    const std::string suffix = std::to_string(b);
    layer conv{"conv" + suffix, layer_kind::conv, channels, hidden_channels, {}, {}, {}, {}};
    conv.weights.resize(static_cast<std::size_t>(conv.in_channels) * static_cast<std::size_t>(conv.out_channels));
    for (float& w : conv.weights) w = next_weight();
    model.push_back(std::move(conv));
    layer norm{"bn" + suffix, layer_kind::batch_norm, hidden_channels, hidden_channels, {}, {}, {}, {}};
    for (int c = 0; c < hidden_channels; ++c) norm.weights.push_back(1.0f + next_weight());  // scale
    for (int c = 0; c < hidden_channels; ++c) norm.weights.push_back(next_weight());         // shift
    model.push_back(std::move(norm));
    model.push_back(layer{"relu" + suffix, layer_kind::relu, hidden_channels, hidden_channels, {}, {}, {}, {}});
    channels = hidden_channels;
  }
  model.push_back(layer{"pool", layer_kind::pool, channels, channels, {}, {}, {}, {}});
  layer dense{"fc", layer_kind::dense, channels, class_count, {}, {}, {}, {}};
  dense.weights.resize(static_cast<std::size_t>(channels) * class_count);
  for (float& w : dense.weights) w = next_weight();
  model.push_back(std::move(dense));

  // Intern every name once, outside the hot loop (takes a lock, may allocate).
  for (layer& l : model) {
    l.handle = edgetrace::intern(l.name);
    l.op = edgetrace::intern(op_name(l.kind));
    l.shape = edgetrace::intern(shape_text(l));  // a shape is a string argument: one handle per distinct text
  }
  return model;
}

/// Runs one layer on `x` (channels x positions, planar) into a new tensor.
activation run_layer(const layer& l, const activation& x) {
  const auto P = static_cast<std::size_t>(positions);
  switch (l.kind) {
    case layer_kind::conv: {  // 1x1 convolution: a (out x in) matrix times (in x positions)
      activation y(static_cast<std::size_t>(l.out_channels) * P, 0.0f);
      for (int o = 0; o < l.out_channels; ++o) {
        float* out = &y[static_cast<std::size_t>(o) * P];
        for (int i = 0; i < l.in_channels; ++i) {
          const float w = l.weights[static_cast<std::size_t>(o * l.in_channels + i)];
          const float* in = &x[static_cast<std::size_t>(i) * P];
          for (std::size_t p = 0; p < P; ++p) out[p] += w * in[p];
        }
      }
      return y;
    }
    case layer_kind::batch_norm: {
      activation y(x.size());
      const auto C = static_cast<std::size_t>(l.out_channels);
      for (std::size_t c = 0; c < C; ++c)
        for (std::size_t p = 0; p < P; ++p) y[c * P + p] = x[c * P + p] * l.weights[c] + l.weights[C + c];
      return y;
    }
    case layer_kind::relu: {
      activation y(x.size());
      for (std::size_t i = 0; i < x.size(); ++i) y[i] = std::max(x[i], 0.0f);
      return y;
    }
    case layer_kind::pool: {  // global average pool: one value per channel
      activation y(static_cast<std::size_t>(l.out_channels), 0.0f);
      for (std::size_t c = 0; c < y.size(); ++c) {
        for (std::size_t p = 0; p < P; ++p) y[c] += x[c * P + p];
        y[c] /= static_cast<float>(P);
      }
      return y;
    }
    case layer_kind::dense: {
      activation y(static_cast<std::size_t>(l.out_channels), 0.0f);
      for (int o = 0; o < l.out_channels; ++o)
        for (int i = 0; i < l.in_channels; ++i)
          y[static_cast<std::size_t>(o)] +=
              l.weights[static_cast<std::size_t>(o * l.in_channels + i)] * x[static_cast<std::size_t>(i)];
      return y;
    }
  }
  return x;
}

std::vector<float> infer_frame(const std::vector<layer>& model, const frame& f) {
  // The enclosing span: every layer span below nests inside it.
  EDGETRACE_SCOPE(infer, "inference");
  EDGETRACE_FLOW(infer, "frame", f.index);  // this span is one step of frame f.index
  activation activations(f.tensor.begin(), f.tensor.end());
  for (const layer& l : model) {
    EDGETRACE_SCOPE_NAMED(infer, l.handle);  // a span named e.g. "conv2"
    EDGETRACE_ARG_NAMED(infer, "op", l.op);  // ...with argument op = "Conv"
    EDGETRACE_ARG_NAMED(infer, "shape", l.shape);  // ...and shape = "1x32x16x16"
    activations = run_layer(l, activations);
  }
  return std::vector<float>(activations.begin(), activations.end());
}

// ---------------------------------------------------------------------------
// Stage 4: postprocess. Softmax, then the top 3 classes.
struct prediction {
  int best_class = 0;
  float confidence = 0;
};

prediction postprocess_frame(const frame& f) {
  EDGETRACE_SCOPE(postprocess, "top_k");
  EDGETRACE_FLOW(postprocess, "frame", f.index);  // the last step
  const std::vector<float>& scores = f.scores;
  std::vector<float> probabilities(scores.size());
  const float peak = *std::max_element(scores.begin(), scores.end());
  float total = 0;
  for (std::size_t i = 0; i < scores.size(); ++i) total += probabilities[i] = std::exp(scores[i] - peak);
  for (float& p : probabilities) p /= total;

  std::vector<int> order(probabilities.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::partial_sort(order.begin(), order.begin() + 3, order.end(),
                    [&](int a, int b) { return probabilities[static_cast<std::size_t>(a)] >
                                               probabilities[static_cast<std::size_t>(b)]; });
  const prediction best{order[0], probabilities[static_cast<std::size_t>(order[0])]};
  EDGETRACE_ARG(postprocess, "class", best.best_class);        // an int
  EDGETRACE_ARG(postprocess, "confidence", best.confidence);   // a float: kept as a double
  EDGETRACE_ARG(postprocess, "confident", best.confidence > 0.5f);  // a bool: true/false
  return best;
}

// ---------------------------------------------------------------------------
struct options {
  int frames = 48;
  int blocks = 3;
};

bool parse_int(const char* text, int lo, int hi, int& out) {
  char* end = nullptr;
  const long value = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || value < lo || value > hi) return false;
  out = static_cast<int>(value);
  return true;
}

bool parse_options(int argc, char** argv, options& opts) {
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--frames") == 0 && has_value && parse_int(argv[i + 1], 1, 1000000, opts.frames)) {
      ++i;
    } else if (std::strcmp(argv[i], "--layers") == 0 && has_value && parse_int(argv[i + 1], 1, 64, opts.blocks)) {
      ++i;
    } else {
      std::fprintf(stderr, "usage: pipeline [--frames N (1..1000000)] [--layers M (conv blocks, 1..64)]\n");
      return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  options opts;
  if (!parse_options(argc, argv, opts)) return 1;
  EDGETRACE_THREAD_NAME("main");
  const auto started = std::chrono::steady_clock::now();

  const std::vector<layer> model = load_model(opts.blocks);
  bounded_queue<frame> decoded(queue_capacity);
  bounded_queue<frame> prepared(queue_capacity);
  bounded_queue<frame> inferred(queue_capacity);

  std::thread decoder([&] {
    EDGETRACE_THREAD_NAME("decode");
    for (int i = 0; i < opts.frames; ++i) {
      frame f;
      f.index = i;
      f.pixels = decode_frame(i);
      EDGETRACE_INSTANT(decode, "frame_ready");
      const std::size_t depth = decoded.push(std::move(f));
      EDGETRACE_COUNTER(queue, "decoded_depth", depth);
    }
    decoded.close();
  });

  std::thread preprocessor([&] {
    EDGETRACE_THREAD_NAME("preprocess");
    std::size_t depth = 0;
    while (std::optional<frame> f = decoded.pop(depth)) {
      EDGETRACE_COUNTER(queue, "decoded_depth", depth);
      {
        EDGETRACE_SCOPE(preprocess, "preprocess_frame");
        EDGETRACE_FLOW(preprocess, "frame", f->index);
        f->tensor = resize(f->pixels);
        normalize(f->tensor);
        f->pixels.clear();
      }
      const std::size_t pushed_depth = prepared.push(std::move(*f));
      EDGETRACE_COUNTER(queue, "prepared_depth", pushed_depth);
    }
    prepared.close();
  });

  std::thread inference([&] {
    EDGETRACE_THREAD_NAME("inference");
    edgetrace::phase("warm up");  // process-wide label, until the next phase()
    std::size_t depth = 0;
    while (std::optional<frame> f = prepared.pop(depth)) {
      if (f->index == 8) edgetrace::phase("measure");
      EDGETRACE_COUNTER(queue, "prepared_depth", depth);
      f->scores = infer_frame(model, *f);
      f->tensor.clear();
      const std::size_t pushed_depth = inferred.push(std::move(*f));
      EDGETRACE_COUNTER(queue, "inferred_depth", pushed_depth);
    }
    inferred.close();
  });

  // Postprocess on its own thread too, so every stage has a named track.
  std::vector<int> class_votes(class_count, 0);
  double confidence_sum = 0;
  std::thread postprocessor([&] {
    EDGETRACE_THREAD_NAME("postprocess");
    std::size_t depth = 0;
    while (std::optional<frame> f = inferred.pop(depth)) {
      EDGETRACE_COUNTER(queue, "inferred_depth", depth);
      const prediction p = postprocess_frame(*f);
      ++class_votes[static_cast<std::size_t>(p.best_class)];
      confidence_sum += static_cast<double>(p.confidence);
      EDGETRACE_INSTANT(postprocess, "frame_done");
    }
  });

  decoder.join();
  preprocessor.join();
  inference.join();
  postprocessor.join();

  const auto top = std::max_element(class_votes.begin(), class_votes.end());
  const double elapsed_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - started).count();
  std::printf("pipeline: %d frames through %zu layers in %.1f ms; most frequent class %d (%d frames), "
              "mean confidence %.3f; tracing %s\n",
              opts.frames, model.size(), elapsed_ms, static_cast<int>(top - class_votes.begin()), *top,
              confidence_sum / opts.frames, edgetrace::tracing_active() ? "on" : "off");
  return 0;
}

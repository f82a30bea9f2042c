// SPDX-License-Identifier: MIT
// A minimal NVTX injection library for tests: NVTX loads it from
// NVTX_INJECTION64_PATH at the program's first NVTX call, and it records the
// domain calls edgetrace makes, one line each, to the file NVTX_TEST_LOG:
//   domain NAME | category ID NAME | string TEXT
//   push TID CATEGORY TEXT | pop TID | mark TID CATEGORY TEXT
// (TEXT last: names may contain spaces). No GPU or NVIDIA tool needed.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <deque>
#include <mutex>
#include <string>
#include <sys/syscall.h>
#include <unistd.h>

namespace {

std::mutex log_mutex;
std::FILE* log_file = nullptr;

void log_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (log_file == nullptr) return;
  std::fprintf(log_file, "%s\n", line.c_str());
  std::fflush(log_file);
}

std::string tid() { return std::to_string(static_cast<long>(::syscall(SYS_gettid))); }

/// Handles point into this list, never freed (NVTX handles live as long as
/// the process); a deque never moves its elements, and the global pointer
/// keeps them reachable (a handle cached in an exited thread's storage
/// would otherwise look leaked to LeakSanitizer).
std::mutex handles_mutex;
std::deque<std::string>* const handles = new std::deque<std::string>;

std::string* own(const char* text) {
  std::lock_guard<std::mutex> lock(handles_mutex);
  handles->emplace_back(text);
  return &handles->back();
}

std::string text_of(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "(null)";
  switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_REGISTERED:
      return a->message.registered != nullptr ? *reinterpret_cast<const std::string*>(a->message.registered) : "(null)";
    case NVTX_MESSAGE_TYPE_ASCII: return std::string("ascii:") + (a->message.ascii ? a->message.ascii : "");
    default: return "(other message type)";
  }
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  log_line(std::string("domain ") + name);
  return reinterpret_cast<nvtxDomainHandle_t>(own(name));
}
nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t, const char* text) {
  log_line(std::string("string ") + text);
  return reinterpret_cast<nvtxStringHandle_t>(own(text));
}
void NVTX_API name_category(nvtxDomainHandle_t, uint32_t id, const char* name) {
  log_line("category " + std::to_string(id) + " " + name);
}
int NVTX_API range_push(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  log_line("push " + tid() + " " + std::to_string(a ? a->category : 0) + " " + text_of(a));
  return 0;
}
int NVTX_API range_pop(nvtxDomainHandle_t) {
  log_line("pop " + tid());
  return 0;
}
void NVTX_API mark(nvtxDomainHandle_t, const nvtxEventAttributes_t* a) {
  log_line("mark " + tid() + " " + std::to_string(a ? a->category : 0) + " " + text_of(a));
}

template <class Function>
void install(NvtxFunctionTable table, unsigned size, NvtxCallbackIdCore2 id, Function f) {
  if (static_cast<unsigned>(id) < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_table) {
  const char* path = std::getenv("NVTX_TEST_LOG");
  log_file = path != nullptr ? std::fopen(path, "a") : nullptr;
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_table(NVTX_ETID_CALLBACKS));
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (callbacks == nullptr || !callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size)) return 0;
  install(table, size, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
  install(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  install(table, size, NVTX_CBID_CORE2_DomainNameCategoryA, &name_category);
  install(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &range_push);
  install(table, size, NVTX_CBID_CORE2_DomainRangePop, &range_pop);
  install(table, size, NVTX_CBID_CORE2_DomainMarkEx, &mark);
  log_line("injected");
  return 1;
}

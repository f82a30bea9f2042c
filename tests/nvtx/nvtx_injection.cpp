// SPDX-License-Identifier: MIT
// A tiny NVTX tool for tests: loaded by NVTX through NVTX_INJECTION64_PATH,
// it records the domain calls edgetrace makes, one line each, into the file
// named by NVTX_TEST_LOG:
//   domain NAME | category DOMAIN ID NAME | string DOMAIN TEXT
//   push DOMAIN CATEGORY TEXT | pop DOMAIN | mark DOMAIN CATEGORY TEXT
// DOMAIN is the name the domain was created with.
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <string>

namespace {

std::mutex log_mutex;
std::FILE* log_file() {
  static std::FILE* f = [] {
    const char* path = std::getenv("NVTX_TEST_LOG");
    return path != nullptr ? std::fopen(path, "w") : nullptr;
  }();
  return f;
}
void log_line(const std::string& line) {
  std::lock_guard<std::mutex> lock(log_mutex);
  if (std::FILE* f = log_file()) {
    std::fputs((line + "\n").c_str(), f);
    std::fflush(f);
  }
}

// Handles are pointers to heap strings that live for the process.
const char* domain_name(nvtxDomainHandle_t domain) {
  return domain != nullptr ? reinterpret_cast<const std::string*>(domain)->c_str() : "(default)";
}
std::string message(const nvtxEventAttributes_t* a) {
  if (a == nullptr) return "(null)";
  if (a->messageType == NVTX_MESSAGE_TYPE_REGISTERED)
    return *reinterpret_cast<const std::string*>(a->message.registered);
  if (a->messageType == NVTX_MESSAGE_TYPE_ASCII) return std::string("ascii:") + a->message.ascii;
  return "(other message type)";
}

nvtxDomainHandle_t NVTX_API domain_create(const char* name) {
  log_line(std::string("domain ") + name);
  return reinterpret_cast<nvtxDomainHandle_t>(new std::string(name));
}
void NVTX_API name_category(nvtxDomainHandle_t domain, uint32_t id, const char* name) {
  log_line(std::string("category ") + domain_name(domain) + " " + std::to_string(id) + " " + name);
}
nvtxStringHandle_t NVTX_API register_string(nvtxDomainHandle_t domain, const char* text) {
  log_line(std::string("string ") + domain_name(domain) + " " + text);
  return reinterpret_cast<nvtxStringHandle_t>(new std::string(text));
}
int NVTX_API push(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  log_line(std::string("push ") + domain_name(domain) + " " + std::to_string(a ? a->category : 0) + " " + message(a));
  return 0;
}
int NVTX_API pop(nvtxDomainHandle_t domain) {
  log_line(std::string("pop ") + domain_name(domain));
  return 0;
}
void NVTX_API mark(nvtxDomainHandle_t domain, const nvtxEventAttributes_t* a) {
  log_line(std::string("mark ") + domain_name(domain) + " " + std::to_string(a ? a->category : 0) + " " + message(a));
}

template <class F>
void set(NvtxFunctionTable table, unsigned size, unsigned id, F f) {
  if (id < size && table[id] != nullptr) *table[id] = reinterpret_cast<NvtxFunctionPointer>(f);
}

}  // namespace

extern "C" __attribute__((visibility("default"))) int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get_export_table) {
  const auto* callbacks = static_cast<const NvtxExportTableCallbacks*>(get_export_table(NVTX_ETID_CALLBACKS));
  if (callbacks == nullptr) return 0;
  NvtxFunctionTable table = nullptr;
  unsigned size = 0;
  if (!callbacks->GetModuleFunctionTable(NVTX_CB_MODULE_CORE2, &table, &size) || table == nullptr) return 0;
  set(table, size, NVTX_CBID_CORE2_DomainCreateA, &domain_create);
  set(table, size, NVTX_CBID_CORE2_DomainNameCategoryA, &name_category);
  set(table, size, NVTX_CBID_CORE2_DomainRegisterStringA, &register_string);
  set(table, size, NVTX_CBID_CORE2_DomainRangePushEx, &push);
  set(table, size, NVTX_CBID_CORE2_DomainRangePop, &pop);
  set(table, size, NVTX_CBID_CORE2_DomainMarkEx, &mark);
  log_line("initialized");
  return 1;
}

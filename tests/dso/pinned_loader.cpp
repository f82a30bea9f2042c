// SPDX-License-Identifier: MIT
// A program that does not include edgetrace: a thread pinned to one CPU
// dlopens a traced library (lib_b) and calls it, so that thread starts
// tracing and makes the flusher (as a plugin loaded by a pinned inference
// thread would). Prints the allowed CPUs (Cpus_allowed_list) of the main
// thread, of the pinned one and of the flusher: "main L", "loader L",
// "flusher L". With `process`, the main thread is pinned first (as
// `taskset` pins a whole program): then the flusher keeps that CPU.
// See tests/writer/reliability_test.cpp.
//
// pinned_loader CPU LIBRARY [process]
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <dlfcn.h>
#include <fstream>
#include <pthread.h>
#include <sched.h>
#include <string>

namespace {

std::string allowed_cpus(const std::string& status_path) {
  std::ifstream status(status_path);
  for (std::string line; std::getline(status, line);)
    if (line.rfind("Cpus_allowed_list:", 0) == 0) return line.substr(line.find_first_not_of(" \t", 18));
  return "?";
}

/// Cpus_allowed_list of this process's thread named `name`, or "none".
std::string allowed_cpus_of(const char* name) {
  std::string found = "none";
  DIR* tasks = opendir("/proc/self/task");
  while (dirent* entry = tasks != nullptr ? readdir(tasks) : nullptr) {
    const std::string task = std::string("/proc/self/task/") + entry->d_name;
    std::ifstream comm(task + "/comm");
    std::string text;
    if (std::getline(comm, text) && text == name) found = allowed_cpus(task + "/status");
  }
  if (tasks != nullptr) closedir(tasks);
  return found;
}

struct load {
  int cpu;
  const char* library;
  std::string pinned;
  int result = 0;
};

void pin_to(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  if (sched_setaffinity(0, sizeof set, &set) != 0) std::perror("pinned_loader: sched_setaffinity");
}

void* load_pinned(void* arg) {
  auto* job = static_cast<load*>(arg);
  pin_to(job->cpu);
  job->pinned = allowed_cpus("/proc/thread-self/status");
  void* lib = dlopen(job->library, RTLD_NOW | RTLD_LOCAL);
  if (lib == nullptr) {
    std::fprintf(stderr, "pinned_loader: %s\n", dlerror());
    job->result = 3;
    return nullptr;
  }
  auto work = reinterpret_cast<void (*)(int)>(dlsym(lib, "lib_b_work"));
  if (work != nullptr) work(100);
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return 2;
  load job{std::atoi(argv[1]), argv[2], std::string(), 0};
  if (argc > 3 && std::string(argv[3]) == "process") pin_to(job.cpu);
  pthread_t thread;
  if (pthread_create(&thread, nullptr, load_pinned, &job) != 0) return 4;
  pthread_join(thread, nullptr);
  std::printf("main %s\nloader %s\nflusher %s\n", allowed_cpus("/proc/thread-self/status").c_str(),
              job.pinned.c_str(), allowed_cpus_of("edgetrace").c_str());
  return job.result;
}

// SPDX-License-Identifier: MIT
// Tests of the runtime's owner types, each alone: the unloaded ranges
// (writer/registry.hpp), the ring pool's count of unread records
// (writer/rings.hpp), the flusher control's wait for a drain
// (writer/control.hpp), a thread's name in its ring (face/ring.hpp), and
// the runtime as the rest of the process sees it: built complete, its locks
// taken all or none (writer/flusher.hpp).
#include <doctest/doctest.h>

#include <edgetrace/edgetrace.hpp>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include <pthread.h>
#include <unistd.h>

namespace owners_test {

namespace et = edgetrace::detail;

namespace {

std::uint64_t ms_since(std::chrono::steady_clock::time_point start) {
  return static_cast<std::uint64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - start).count());
}

/// A runtime of the test's own (not the process's: no flusher thread, no
/// output opened), destroyed at the end of the case.
struct own_runtime {
  alignas(et::runtime) unsigned char storage[sizeof(et::runtime)];
  pthread_key_t key{};
  et::runtime* rt = nullptr;
  explicit own_runtime(std::vector<std::string> names = {}) {
    REQUIRE(pthread_key_create(&key, nullptr) == 0);
    et::settings config;
    config.ring_records = 1024;
    rt = new (storage) et::runtime(config, "/tmp/owners_test_never_opened.etr", key, std::move(names));
  }
  ~own_runtime() {
    rt->~runtime();
    pthread_key_delete(key);
  }
};

}  // namespace

TEST_CASE("unloaded ranges: published, held, copied, retired by epoch; full, the last one widens") {
  et::unloaded_ranges ranges;
  int a = 0;
  const auto at = [](const void* p) { return reinterpret_cast<std::uintptr_t>(p); };
  CHECK(ranges.epoch() == 0);
  ranges.publish({at(&a), at(&a), 0});  // empty: nothing published
  CHECK(ranges.epoch() == 0);
  bool read = false;
  CHECK(ranges.read_unless_unloaded(&a, [&] { read = true; }));
  CHECK(read);

  ranges.publish({at(&a), at(&a) + sizeof a, 0});
  CHECK(ranges.epoch() == 1);
  read = false;
  CHECK_FALSE(ranges.read_unless_unloaded(&a, [&] { read = true; }));
  CHECK_FALSE(read);  // never read inside a range
  const et::unloaded_ranges::copy_of first = ranges.copy();
  CHECK(first.count == 1);
  CHECK(first.epoch == 1);
  CHECK(first.holds(&a));
  CHECK_FALSE(first.holds(&read));

  ranges.publish({1000, 2000, 0});
  ranges.retire_up_to(1);  // the first one only
  const et::unloaded_ranges::copy_of second = ranges.copy();
  CHECK(second.count == 1);
  CHECK(second.epoch == 2);
  CHECK_FALSE(second.holds(&a));
  CHECK(second.holds(reinterpret_cast<const void*>(1500)));
  CHECK(ranges.read_unless_unloaded(&a, [] {}));

  // Full: every further range widens the last, so it drops more, never reads more.
  for (std::uintptr_t i = 1; i < et::unloaded_ranges::capacity; ++i) ranges.publish({i * 10000, i * 10000 + 10, 0});
  ranges.publish({900000, 900010, 0});
  const et::unloaded_ranges::copy_of full = ranges.copy();
  CHECK(full.count == et::unloaded_ranges::capacity);
  CHECK(full.holds(reinterpret_cast<const void*>(900005)));
  CHECK(full.holds(reinterpret_cast<const void*>(150005)));  // the old last range, widened
  ranges.retire_up_to(full.epoch);
  CHECK(ranges.copy().count == 0);
}

TEST_CASE("ring pool: unread_records counts what the attached rings published and nobody read yet") {
  et::ring_pool pool(1024);
  CHECK(pool.unread_records() == 0);
  et::thread_ring* one = pool.take();
  et::thread_ring* two = pool.take();
  REQUIRE(one != nullptr);
  REQUIRE(two != nullptr);
  pool.attach(one);
  pool.attach(two);
  one->write_pos.store(one->begin + 5, std::memory_order_release);
  two->write_pos.store(two->begin + 7, std::memory_order_release);
  CHECK(pool.unread_records() == 12);
  two->read_pos.store(two->begin + 7, std::memory_order_release);  // the flusher read them
  CHECK(pool.unread_records() == 5);
  {
    et::mutex_lock lock(pool.list_mutex());
    pool.unlink(pool.unlink(nullptr, two), one);
  }
  CHECK(pool.unread_records() == 0);
  et::unmap_ring(one);
  et::unmap_ring(two);
}

TEST_CASE("flusher control: wait_for_drain returns at once with room, and wakes on a drain without room") {
  et::flusher_control control;
  std::size_t calls = 0;
  CHECK(control.wait_for_drain(1, 5000000000u, [&] { return ++calls, std::size_t{3}; }) == 3);
  CHECK(calls == 1);  // enough room: no sleep, no second look

  std::atomic<std::size_t> room{0};
  std::atomic<bool> waiting{false};
  const auto start = std::chrono::steady_clock::now();
  std::thread drainer([&] {
    while (!waiting.load()) std::this_thread::yield();
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // the waiter is asleep by now, most likely
    room.store(4);
    control.wake_room_waiters();  // as the flusher does after a drain
  });
  const std::uint32_t before = control.room_word();
  const std::size_t got = control.wait_for_drain(2, 5000000000u, [&] {
    waiting.store(true);
    return room.load();
  });
  drainer.join();
  CHECK(got == 4);
  CHECK(control.room_word() != before);
  CHECK(ms_since(start) < 4000);  // woken, not timed out (the bound is 5 s)
}

TEST_CASE("thread ring: set_name cuts to 63 bytes, clears the rest and bumps the version") {
  et::thread_ring ring;
  const std::uint32_t version = ring.name_version.load(std::memory_order_relaxed);
  ring.set_name("decoder");
  CHECK(std::string(ring.name) == "decoder");
  CHECK(ring.name_version.load(std::memory_order_acquire) == version + 1);
  const std::string longer(100, 'x');
  ring.set_name(longer.c_str());
  CHECK(std::strlen(ring.name) == sizeof ring.name - 1);
  ring.set_name("ab");
  CHECK(std::string(ring.name) == "ab");
  for (std::size_t i = 2; i < sizeof ring.name; ++i) CHECK(ring.name[i] == '\0');
  CHECK(ring.name_version.load(std::memory_order_acquire) == version + 3);
}

TEST_CASE("runtime: built complete (owner, path, exit key, names), and its locks are taken all or none") {
  own_runtime own({"first", "second"});
  et::runtime& rt = *own.rt;
  CHECK(rt.owned_here());
  CHECK(std::string(rt.output_path()) == "/tmp/owners_test_never_opened.etr");
  CHECK(rt.exit_key() == own.key);
  CHECK(rt.config().ring_records == 1024);
  CHECK(std::string(rt.name(1)) == "first");  // ids as the parent had them (1-based)
  CHECK(std::string(rt.name(2)) == "second");
  const std::uint32_t id = rt.intern("new");
  CHECK(std::string(rt.name(id)) == "new");
  CHECK(rt.copy_names().size() == 3);
  CHECK_FALSE(rt.opened());
  CHECK_FALSE(rt.flusher_running());

  REQUIRE(rt.try_lock_all());
  bool other_got = true;
  std::thread([&] { other_got = rt.try_lock_all(); }).join();
  CHECK_FALSE(other_got);  // held here: the other thread takes none
  rt.unlock_all();
  std::thread([&] {
    other_got = rt.try_lock_all();
    if (other_got) rt.unlock_all();
  }).join();
  CHECK(other_got);
  rt.lock_all();
  rt.unlock_all();
}

TEST_CASE("runtime: a thread's ring is attached under the exit key and retired to the flusher") {
  own_runtime own;
  et::runtime& rt = *own.rt;
  et::thread_ring* ring = rt.take_ring();
  REQUIRE(ring != nullptr);
  rt.attach(ring);
  CHECK(pthread_getspecific(own.key) == ring);  // the exit hook will retire it
  ring->write_pos.store(ring->begin + 3, std::memory_order_release);
  // The output never opened (no flusher): no wait, the answer is whether
  // records are left unread.
  CHECK_FALSE(rt.flush_if_pending(std::chrono::seconds(5)));
  ring->read_pos.store(ring->begin + 3, std::memory_order_release);
  CHECK(rt.flush_if_pending(std::chrono::seconds(5)));
  rt.retire(ring, true);
  CHECK(pthread_getspecific(own.key) == nullptr);
  CHECK(ring->retired.load(std::memory_order_acquire));
  et::unmap_ring(ring);
}

}  // namespace owners_test

// SPDX-License-Identifier: MIT
// Tests of face/ring.hpp: wraparound, full-ring drops with in-band loss
// records, and a concurrent producer/consumer with exact accounting; and of
// the SPSC primitive under it (face/spsc.hpp) on its own.
#include <doctest/doctest.h>

#include <edgetrace/edgetrace.hpp>

#include <atomic>
#include <thread>
#include <vector>

namespace ring_test {

namespace et = edgetrace::detail;

namespace {

/// Installs a private ring as the calling thread's current ring, so push()
/// and push_slow() run for real without the process runtime.
struct ring_fixture {
  et::thread_ring* ring;
  et::thread_ring* saved;
  explicit ring_fixture(std::uint64_t slots) : ring(et::map_ring(slots)), saved(et::current_ring) {
    REQUIRE(ring != nullptr);
    et::current_ring = ring;
  }
  ~ring_fixture() {
    et::current_ring = saved;
    et::unmap_ring(ring);
  }
  /// Consumer side, as the flusher does it.
  std::vector<et::record> drain() const {
    std::vector<et::record> out;
    et::consume(*ring, [&](const et::record& r) { out.push_back(r); });
    return out;
  }
  std::size_t position() const { return static_cast<std::size_t>(ring->write_pos.load() - ring->begin); }
};

/// A named-span record word (never dereferenced, unlike a site pointer).
constexpr std::uint64_t span_word(std::uint32_t name_id) {
  return (std::uint64_t{name_id} << 32) | (1u << 2) | et::tag_named;
}

}  // namespace

TEST_CASE("ring: records come out in order across wraparound") {
  ring_fixture f(8);
  std::uint64_t next = 0;
  std::uint64_t expected = 0;
  for (int round = 0; round < 10; ++round) {
    for (int i = 0; i < 5; ++i, ++next) et::push(span_word(1), next, next + 100);
    for (const et::record& r : f.drain()) {
      CHECK(r.word == span_word(1));
      CHECK(r.t_begin == expected);
      CHECK(r.t_end == expected + 100);
      ++expected;
    }
  }
  CHECK(expected == 50);
  CHECK(f.ring->drop_count.load() == 0);
  CHECK(f.ring->pending_loss == 0);
  CHECK(f.position() == 50 % 8);  // wrapped six times around 8 slots
}

TEST_CASE("ring: a full ring drops the new record, counts it and writes the loss in-band") {
  ring_fixture f(8);  // 8 slots, 7 usable: one stays free
  for (std::uint64_t i = 0; i < 7; ++i) et::push(span_word(1), i, i + 1);
  CHECK(f.ring->write_limit == f.ring->write_pos.load());  // full: fast path disabled
  CHECK(et::unread(*f.ring) == 7);
  // Three more: all dropped, with their end ticks as the loss range.
  et::push(span_word(1), 100, 110);
  et::push(span_word(1), 120, 130);
  et::push(span_word(1), 140, 150);
  CHECK(f.ring->drop_count.load() == 3);
  CHECK(f.ring->pending_loss == 3);
  CHECK(et::unread(*f.ring) == 7);

  auto first = f.drain();
  REQUIRE(first.size() == 7);
  for (std::uint64_t i = 0; i < 7; ++i) CHECK(first[i].t_begin == i);

  // Room again: the next push writes the loss record, then the record,
  // across the wrap from the last slot to the first.
  et::push(span_word(2), 200, 210);
  auto second = f.drain();
  REQUIRE(second.size() == 2);
  CHECK(et::tag_of(second[0].word) == et::tag_loss);
  CHECK((second[0].word >> 2) == 3);
  CHECK(second[0].t_begin == 110);
  CHECK(second[0].t_end == 150);
  CHECK(second[1].word == span_word(2));
  CHECK(f.ring->pending_loss == 0);
  CHECK(f.ring->write_limit != f.ring->write_pos.load());  // fast path restored
}

TEST_CASE("ring: a pending loss needs room for two records") {
  ring_fixture f(4);  // 3 usable
  for (std::uint64_t i = 0; i < 3; ++i) et::push(span_word(1), i, i);
  et::push(span_word(1), 10, 10);  // dropped
  // Read exactly one record: one free slot is not enough for loss + record.
  std::size_t seen = 0;
  {
    // Consume a single record by hand: advance read_pos by one.
    f.ring->read_pos.store(f.ring->begin + 1, std::memory_order_release);
    ++seen;
  }
  et::push(span_word(1), 20, 20);
  CHECK(f.ring->drop_count.load() == 2);
  CHECK(f.ring->pending_loss == 2);
  const auto rest = f.drain();
  CHECK(rest.size() + seen == 3);
  et::push(span_word(3), 30, 31);
  const auto after = f.drain();
  REQUIRE(after.size() == 2);
  CHECK((after[0].word >> 2) == 2);
  CHECK(after[0].t_begin == 10);
  CHECK(after[0].t_end == 20);
  CHECK(after[1].t_end == 31);
}

TEST_CASE("ring: every slot count from 2 to 9 wraps and fills correctly") {
  for (std::uint64_t slots = 2; slots <= 9; ++slots) {
    CAPTURE(slots);
    ring_fixture f(slots);
    std::uint64_t next = 0, expected = 0, dropped_seen = 0;
    for (int round = 0; round < 40; ++round) {
      const int burst = round % 7;  // sometimes more than fits
      for (int i = 0; i < burst; ++i, ++next) et::push(span_word(1), next, next);
      for (const et::record& r : f.drain()) {
        if (et::tag_of(r.word) == et::tag_loss) {
          dropped_seen += r.word >> 2;
          expected += r.word >> 2;
          continue;
        }
        CHECK(r.t_begin >= expected);
        expected = r.t_begin + 1;
      }
    }
    CHECK(dropped_seen + f.ring->pending_loss == f.ring->drop_count.load());
  }
}

TEST_CASE("ring: concurrent producer and consumer account for every record") {
  ring_fixture f(64);
  constexpr std::uint64_t issued = 200000;
  std::atomic<bool> done{false};
  std::uint64_t received = 0;
  std::uint64_t lost = 0;
  std::uint64_t last_seen = 0;
  bool ordered = true;
  bool intact = true;
  std::thread consumer([&] {
    for (;;) {
      const bool finished = done.load(std::memory_order_acquire);
      for (const et::record& r : f.drain()) {
        if (et::tag_of(r.word) == et::tag_loss) {
          lost += r.word >> 2;
          continue;
        }
        ++received;
        if (r.t_end != r.t_begin + 7 || r.word != span_word(9)) intact = false;
        if (r.t_begin < last_seen) ordered = false;
        last_seen = r.t_begin;
      }
      if (finished) break;
    }
  });
  // The producer runs on another thread with its own current_ring.
  std::thread producer([&] {
    et::current_ring = f.ring;
    for (std::uint64_t i = 1; i <= issued; ++i) et::push(span_word(9), i, i + 7);
    done.store(true, std::memory_order_release);
  });
  producer.join();
  consumer.join();
  // A loss still pending at the end is what the flusher writes on retire.
  const std::uint64_t pending = f.ring->pending_loss;
  CHECK(intact);
  CHECK(ordered);
  CHECK(received + lost + pending == issued);
  CHECK(lost + pending == f.ring->drop_count.load());
}

// ------------------------------------------------------------ spsc primitive

TEST_CASE("spsc: a queue holds Capacity slots; room, publish_one and consume across wraparound") {
  et::spsc_queue<std::uint64_t, 5> q;
  CHECK(et::refresh_room(q) == 5);
  std::uint64_t next = 0, expected = 0;
  for (int round = 0; round < 7; ++round) {
    const std::size_t fill = et::refresh_room(q);
    REQUIRE(fill == 5);  // drained before each round
    for (std::size_t i = 0; i < fill; ++i) et::publish_one(q, next++);
    CHECK(et::refresh_room(q) == 0);
    CHECK(et::unread(q) == 5);
    // Take two, then the rest: positions wrap at different places each round.
    std::size_t taken = 0;
    et::consume_to(q, q.begin + (q.read_pos.own() - q.begin + 2) % 6,
                   [&](std::uint64_t v) {
                     CHECK(v == expected++);
                     ++taken;
                   },
                   [] {});
    CHECK(taken == 2);
    CHECK(et::refresh_room(q) == 2);
    CHECK(et::consume(q, [&](std::uint64_t v) { CHECK(v == expected++); }) == 3);
    CHECK(et::unread(q) == 0);
  }
  CHECK(expected == 35);
}

TEST_CASE("spsc: a producer thread and a consumer thread see every value once, in order") {
  static et::spsc_queue<std::uint64_t, 7> q;  // small: the producer waits for room most of the time
  constexpr std::uint64_t total = 200000;
  std::thread producer([] {
    for (std::uint64_t v = 0; v < total; ++v) {
      while (et::refresh_room(q) == 0) std::this_thread::yield();
      et::publish_one(q, v);
    }
  });
  std::uint64_t expected = 0;
  bool in_order = true;
  while (expected < total) {
    if (et::consume(q, [&](std::uint64_t v) { in_order = in_order && v == expected++; }) == 0)
      std::this_thread::yield();
  }
  producer.join();
  CHECK(in_order);
  CHECK(expected == total);
  CHECK(et::unread(q) == 0);
}

}  // namespace ring_test

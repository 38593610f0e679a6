/*
 * cursor_bench.cpp
 *	  What an ID costs to take from the server-wide generator's cursor word,
 *	  against UidGenerator's padded RingBuffer.
 *
 *	  make cursor-bench [CURSOR_BENCH_ARGS="ROUNDS IDS_PER_TAKER"]  (9, 4000000)
 *
 * Cursors, each with 1 and 2 taker threads:
 *	word, chunks of 1	take_chunk() of one word for every ID
 *	ChunkCache <= 8/64	take_chunk() through a ChunkCache of that maximum, as
 *						a backend would take them
 *	ring				RingBuffer of 4096 slots (UidGenerator's size for 9
 *						sequence bits), padding at 50 %, with a RingFiller
 *						thread; takers retry (and yield) on an empty ring
 *
 * Each run starts from a fresh cursor or a ring filled up; the takers are
 * released together and each takes the same number of IDs.  ns per ID is
 * the wall time from the release to the last taker's end divided by all
 * IDs taken, so 2 takers that scale perfectly halve it; CPU ns per ID is the
 * process's CPU time over the same span (the ring's filler included)
 * divided by the same IDs.  Rounds run every cursor and taker count once,
 * in an order that rotates from round to round, so that a disturbance of
 * the machine does not land on one cursor; medians of the rounds, and
 * ratios paired by round before their median is taken.
 *
 * Every taker reads the clock once per 1,024 IDs for its min_word: under
 * this load the cursor borrows far ahead of the clock, so the catch-up is
 * taken once per run, and the server reads the clock for every ID whatever
 * the cursor, so it is left out here (its cost is printed for scale).
 * Every taker checks that its IDs strictly increase, and the run fails if
 * they do not.
 */
#include "core/clock.hpp"
#include "core/layout.hpp"
#include "ring/ring_buffer.hpp"
#include "ring/ring_filler.hpp"
#include "core/shared_cursor.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace {

using uidgen::ChunkCache;
using uidgen::CursorWords;
using uidgen::Layout;
using uidgen::RingBuffer;
using uidgen::RingFiller;
using Steady = std::chrono::steady_clock;

constexpr int64_t worker = 17;
constexpr uint64_t ring_slots = 4096;
constexpr int ring_padding_percent = 50;
constexpr int max_takers = 2;

const Layout layout = Layout::default_layout();
const CursorWords words(layout);

/* The cursor word as the server keeps it: alone on its cache line. */
struct alignas(uidgen::cache_line_bytes) SharedWord
{
	std::atomic<uint64_t> value{0};
};

/* What one taker saw. */
struct TakerResult
{
	uint64_t disorder = 0; /* IDs not above the one before: must stay 0 */
	uint64_t waits = 0;	   /* takes that found nothing and retried */
	Steady::time_point end;
};

/* One run: one cursor, some takers. */
struct Sample
{
	double ns_per_id;
	double cpu_ns_per_id;
	double waits_per_id;
};

[[noreturn]] void
fail(const std::string &message)
{
	std::fprintf(stderr, "cursor_bench: %s\n", message.c_str());
	std::exit(1);
}

double
process_cpu_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

/* The taker's loop, the same for every cursor: take() is inlined into it. */
template <typename Take>
TakerResult
take_ids(Take &take, uint64_t ids)
{
	uidgen::SystemClock clock;
	TakerResult r;
	int64_t now = 0;
	int64_t last = -1;

	for (uint64_t i = 0; i < ids; i++)
	{
		if ((i & 1023) == 0)
			now = layout.delta_at(clock.now_ms());

		int64_t uid = take(now, r);

		r.disorder += uid <= last;
		last = uid;
	}
	r.end = Steady::now();
	return r;
}

/* Each taker's way to take an ID from the cursor, made in its own thread. */
struct WordTake
{
	SharedWord &cursor;

	int64_t operator()(int64_t now, TakerResult &)
	{
		auto chunk = uidgen::take_chunk(cursor.value, words.first_of(now), 1);

		if (!chunk)
			fail("the cursor closed");
		return words.uid_of(chunk->first, worker);
	}
};

struct CacheTake
{
	SharedWord &cursor;
	ChunkCache cache;

	int64_t operator()(int64_t now, TakerResult &)
	{
		int64_t uid;

		while (!cache.take(now, &uid))
		{
			auto chunk = uidgen::take_chunk(cursor.value, words.first_of(now), cache.next_size(now));

			if (!chunk)
				fail("the cursor closed");
			cache.fill(*chunk, now);
		}
		return uid;
	}
};

struct RingTake
{
	RingBuffer &ring;

	int64_t operator()(int64_t, TakerResult &r)
	{
		int64_t uid;

		while (!ring.take(&uid))
		{
			r.waits++;
			std::this_thread::yield();
		}
		return uid;
	}
};

/* Releases takers threads at once, each taking ids IDs with what make_take() returns. */
template <typename MakeTake>
Sample
run_takers(int takers, uint64_t ids, MakeTake make_take)
{
	std::atomic<int> ready{0};
	std::atomic<bool> go{false};
	std::vector<TakerResult> results(takers);
	std::vector<std::thread> pool;

	for (int t = 0; t < takers; t++)
		pool.emplace_back(
			[&, t]
			{
				auto take = make_take();

				ready.fetch_add(1);
				while (!go.load(std::memory_order_acquire))
				{
				}
				results[t] = take_ids(take, ids);
			});
	while (ready.load() < takers)
		std::this_thread::yield();

	double cpu_start = process_cpu_ns();
	Steady::time_point start = Steady::now();

	go.store(true, std::memory_order_release);
	for (auto &th : pool)
		th.join();

	double cpu = process_cpu_ns() - cpu_start;
	Steady::time_point end = start;
	uint64_t waits = 0;

	for (const TakerResult &r : results)
	{
		if (r.disorder != 0)
			fail("a taker's IDs did not strictly increase");
		end = std::max(end, r.end);
		waits += r.waits;
	}

	double total = static_cast<double>(ids) * takers;

	return Sample{std::chrono::duration<double, std::nano>(end - start).count() / total, cpu / total,
				  static_cast<double>(waits) / total};
}

Sample
run_word(int takers, uint64_t ids)
{
	SharedWord cursor;

	return run_takers(takers, ids, [&] { return WordTake{cursor}; });
}

Sample
run_cache(int takers, uint64_t ids, uint64_t max_chunk)
{
	SharedWord cursor;

	return run_takers(takers, ids, [&] { return CacheTake{cursor, ChunkCache(layout, worker, max_chunk)}; });
}

Sample
run_ring(int takers, uint64_t ids)
{
	uidgen::SystemClock clock;
	RingBuffer ring(ring_slots, ring_padding_percent);
	RingFiller filler(ring, layout, worker);
	std::atomic<bool> stop{false};
	std::thread filling([&] { filler.run(clock, stop); });

	/* Takers start on a full ring, as UidGenerator's fills it at start-up. */
	while (ring.available() < ring.size())
		std::this_thread::yield();

	Sample s = run_takers(takers, ids, [&] { return RingTake{ring}; });

	stop.store(true);
	filling.join();
	return s;
}

struct Cursor
{
	const char *name;
	std::function<Sample(int, uint64_t)> run;
};

double
median(std::vector<double> v)
{
	std::sort(v.begin(), v.end());
	size_t n = v.size();

	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The median of a[i] / b[i]: ratios paired by round. */
double
paired_ratio(const std::vector<double> &a, const std::vector<double> &b)
{
	std::vector<double> r;

	for (size_t i = 0; i < a.size(); i++)
		r.push_back(a[i] / b[i]);
	return median(r);
}

double
clock_read_ns()
{
	uidgen::SystemClock clock;
	constexpr int reads = 2000000;
	int64_t sum = 0;
	Steady::time_point start = Steady::now();

	for (int i = 0; i < reads; i++)
		sum += clock.now_ms();

	double ns = std::chrono::duration<double, std::nano>(Steady::now() - start).count() / reads;

	return sum == 0 ? 0 : ns; /* sum keeps the reads from being optimised away */
}

/* The first three fields of /proc/loadavg: how busy the machine was. */
std::string
load_average()
{
	char buf[64] = "";
	FILE *f = std::fopen("/proc/loadavg", "r");

	if (f == nullptr)
		return "unknown";

	double one, five, fifteen;
	bool read = std::fscanf(f, "%lf %lf %lf", &one, &five, &fifteen) == 3;

	std::fclose(f);
	if (!read)
		return "unknown";
	std::snprintf(buf, sizeof(buf), "%.2f %.2f %.2f", one, five, fifteen);
	return buf;
}

uint64_t
parse_count(const char *arg, const char *what)
{
	char *end;
	unsigned long long v = std::strtoull(arg, &end, 10);

	if (*arg == '\0' || *end != '\0' || v == 0)
		fail(std::string("invalid ") + what + " \"" + arg + "\"");
	return v;
}

} // namespace

int
main(int argc, char **argv)
{
	if (argc > 3)
		fail("usage: cursor_bench [ROUNDS [IDS_PER_TAKER]]");

	int rounds = argc > 1 ? static_cast<int>(parse_count(argv[1], "rounds")) : 9;
	uint64_t ids = argc > 2 ? parse_count(argv[2], "IDs per taker") : 4000000;
	std::vector<Cursor> cursors = {
		{"word, chunks of 1", run_word},
		{"word, ChunkCache up to 8", [](int t, uint64_t n) { return run_cache(t, n, 8); }},
		{"word, ChunkCache up to 64", [](int t, uint64_t n) { return run_cache(t, n, 64); }},
		{"ring, 4096 slots, padding 50 %", run_ring},
	};
	const size_t ring = cursors.size() - 1;
	/* ns[cursor][takers - 1][round], and the same for CPU and waits. */
	using Figures = std::vector<std::vector<std::vector<double>>>;
	Figures ns(cursors.size(), std::vector<std::vector<double>>(max_takers));
	Figures cpu = ns;
	Figures waits = ns;
	size_t runs = cursors.size() * max_takers;

	std::string load_before = load_average();

	std::printf("cursor_bench: %d rounds, %llu IDs per taker, %u CPUs, layout %s\n", rounds,
				static_cast<unsigned long long>(ids), std::thread::hardware_concurrency(),
				layout.describe().c_str());

	/* A warm-up run of each, unrecorded. */
	for (const Cursor &c : cursors)
		for (int t = 1; t <= max_takers; t++)
			c.run(t, ids / 10);

	for (int r = 0; r < rounds; r++)
	{
		for (size_t k = 0; k < runs; k++)
		{
			size_t which = (k + static_cast<size_t>(r)) % runs;
			size_t c = which / max_takers;
			int t = static_cast<int>(which % max_takers) + 1;
			Sample s = cursors[c].run(t, ids);

			ns[c][t - 1].push_back(s.ns_per_id);
			cpu[c][t - 1].push_back(s.cpu_ns_per_id);
			waits[c][t - 1].push_back(s.waits_per_id);
		}
		std::fprintf(stderr, "round %d of %d done\n", r + 1, rounds);
	}

	/*
	 * CPUs busy is CPU time over wall time, paired by run: with 2 takers it
	 * should be near 2, and when other work on the machine kept it near 1
	 * the 2 takers took turns and the scaling says nothing about the cursor.
	 */
	std::printf("\n| cursor | ns per ID, 1 taker | ns per ID, 2 takers | CPU ns per ID, 1 taker | "
				"CPU ns per ID, 2 takers | CPUs busy, 2 takers | throughput 2 takers / 1 |\n");
	std::printf("|---|---:|---:|---:|---:|---:|---:|\n");
	for (size_t c = 0; c < cursors.size(); c++)
		std::printf("| %s | %.2f | %.2f | %.2f | %.2f | %.2f | %.2fx |\n", cursors[c].name, median(ns[c][0]),
					median(ns[c][1]), median(cpu[c][0]), median(cpu[c][1]), paired_ratio(cpu[c][1], ns[c][1]),
					paired_ratio(ns[c][0], ns[c][1]));

	std::printf("\n| ring / word | ns per ID, 1 taker | ns per ID, 2 takers | CPU ns per ID, 1 taker | "
				"CPU ns per ID, 2 takers |\n");
	std::printf("|---|---:|---:|---:|---:|\n");
	for (size_t c = 0; c < ring; c++)
		std::printf("| ring / %s | %.2fx | %.2fx | %.2fx | %.2fx |\n", cursors[c].name,
					paired_ratio(ns[ring][0], ns[c][0]), paired_ratio(ns[ring][1], ns[c][1]),
					paired_ratio(cpu[ring][0], cpu[c][0]), paired_ratio(cpu[ring][1], cpu[c][1]));

	std::printf("\nring takes that found it empty and retried: %.3f %% with 1 taker, %.3f %% with 2\n",
				100 * median(waits[ring][0]), 100 * median(waits[ring][1]));
	std::printf("for scale, one clock read (CLOCK_REALTIME): %.1f ns\n", clock_read_ns());
	std::printf("load average before the run: %s, after: %s\n", load_before.c_str(), load_average().c_str());

	std::printf("\nns per ID, every round (in the order run):\n");
	for (size_t c = 0; c < cursors.size(); c++)
		for (int t = 1; t <= max_takers; t++)
		{
			std::printf("  %-32s %d taker%s:", cursors[c].name, t, t > 1 ? "s" : " ");
			for (double v : ns[c][t - 1])
				std::printf(" %6.2f", v);
			std::printf("\n");
		}
	return 0;
}

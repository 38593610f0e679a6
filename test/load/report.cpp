/*
 * report.cpp
 *	  Summaries of a uidgen_load run, for people and for the TAP tests.
 */
#include "report.hpp"

#include <cinttypes>

namespace uidgen_load {

namespace {

constexpr size_t max_violations_shown = 10;

void
print_origin(FILE *out, const Origin &origin)
{
	std::fprintf(out, "thread %d, session %" PRId64 " (backend pid %d)", origin.thread, origin.session,
				 origin.backend_pid);
}

} // namespace

bool
Summary::ok() const
{
	return duplicates == 0 && non_positive == 0 && out_of_layout == 0 && non_increasing == 0 && errors == 0 &&
		   !timed_out && !interrupted && ids == expected_ids;
}

Summary
summarize(const Options &options, const LoadOutcome &outcome, const UniquenessResult &uniqueness)
{
	Summary s{};

	s.mode = options.mode;
	s.method = options.method;
	s.seed = options.seed;
	s.parallel = options.connections;
	s.expected_ids = static_cast<int64_t>(options.connections) * options.ids;
	s.ids = static_cast<int64_t>(uniqueness.ids);
	s.seconds = outcome.seconds;
	s.duplicates = uniqueness.duplicates;
	s.distinct_workers = uniqueness.distinct_workers;
	s.peak_active_workers = outcome.peak_active_workers;
	s.peak_active_rows = outcome.peak_active_rows;
	s.peak_live_rows = outcome.peak_live_rows;
	s.registered_workers = outcome.registered_workers;
	s.errors = outcome.errors;
	s.timed_out = outcome.timed_out;
	s.interrupted = outcome.interrupted;
	for (const ThreadResult &t : outcome.threads)
	{
		s.non_positive += t.log.non_positive();
		s.out_of_layout += t.log.out_of_layout();
		s.non_increasing += t.log.non_increasing();
		s.sessions_changing_worker += t.log.sessions_changing_worker();
		s.connections += t.connections;
		s.committed_ids += t.committed;
		s.rolled_back_ids += t.rolled_back;
	}
	return s;
}

void
print_findings(FILE *out, const LoadOutcome &outcome, const UniquenessResult &uniqueness, const Layout &layout)
{
	size_t shown = 0;

	for (const Duplicate &dup : uniqueness.examples)
	{
		std::fprintf(out, "uidgen_load: duplicate ID %" PRId64 " (%s), received %" PRIu64 " times:\n", dup.id,
					 layout.decode(dup.id).c_str(), dup.copies);
		for (const Origin &origin : dup.origins)
		{
			std::fprintf(out, "    from ");
			print_origin(out, origin);
			std::fprintf(out, "\n");
		}
		if (dup.copies > dup.origins.size())
			std::fprintf(out, "    ...\n");
	}
	if (uniqueness.duplicates > uniqueness.examples.size())
		std::fprintf(out, "uidgen_load: %" PRIu64 " duplicates in all\n", uniqueness.duplicates);

	for (const ThreadResult &t : outcome.threads)
		for (const Violation &v : t.log.violations())
		{
			if (shown++ == max_violations_shown)
			{
				std::fprintf(out, "uidgen_load: further bad IDs are counted, not shown\n");
				return;
			}
			std::fprintf(out, "uidgen_load: ID %" PRId64 " (%s) from ", v.id, layout.decode(v.id).c_str());
			print_origin(out, v.origin);
			std::fprintf(out, ": %s", v.what.c_str());
			if (v.has_previous)
				std::fprintf(out, "; previous ID %" PRId64 " (%s)", v.previous, layout.decode(v.previous).c_str());
			std::fprintf(out, "\n");
		}
}

void
print_summary(FILE *out, const Summary &s, const Options &options)
{
	std::fprintf(out, "uidgen_load: mode %s, method %s, %d connections x %" PRId64 " IDs, fetch %d", mode_name(s.mode),
				 method_name(s.method), s.parallel, options.ids, options.fetch);
	if (s.mode == Mode::Churn)
		std::fprintf(out, ", %" PRId64 " per connection", options.per_connection);
	if (s.mode == Mode::Rollback)
		std::fprintf(out, ", rollback ratio %g", options.rollback_ratio);
	std::fprintf(out, ", seed %" PRIu64 "\n", s.seed);

	std::fprintf(out, "  IDs               %" PRId64 " of %" PRId64 " in %.3f s: %.0f IDs/s\n", s.ids, s.expected_ids,
				 s.seconds, s.ids_per_second());
	std::fprintf(out, "  committed         %" PRId64 ", rolled back %" PRId64 "\n", s.committed_ids, s.rolled_back_ids);
	std::fprintf(out, "  connections made  %" PRId64 " (%.0f/s)\n", s.connections,
				 s.seconds > 0 ? static_cast<double>(s.connections) / s.seconds : 0.0);
	std::fprintf(out, "  workers           %" PRId64 " distinct in the IDs, at most %" PRId64 " held at once\n",
				 s.distinct_workers, s.peak_active_workers);
	std::fprintf(out, "  worker table      sampled peak %" PRId64 " active rows (%" PRId64 " with a live backend),"
					  " %" PRId64 " rows at the end\n",
				 s.peak_active_rows, s.peak_live_rows, s.registered_workers);
	if (s.sessions_changing_worker > 0)
		std::fprintf(out, "  sessions whose worker changed  %" PRIu64 "\n", s.sessions_changing_worker);
	std::fprintf(out, "  duplicates        %" PRIu64 "\n", s.duplicates);
	std::fprintf(out, "  non-positive      %" PRIu64 "\n", s.non_positive);
	std::fprintf(out, "  out of layout     %" PRIu64 "\n", s.out_of_layout);
	std::fprintf(out, "  non-increasing    %" PRIu64 "\n", s.non_increasing);
	std::fprintf(out, "  errors            %" PRIu64 "\n", s.errors);
	if (s.timed_out)
		std::fprintf(out, "  stopped by the duration limit of %g s\n", options.duration_limit);
	if (s.interrupted)
		std::fprintf(out, "  stopped by a signal\n");
	std::fprintf(out, "result: %s\n", s.ok() ? "OK" : "FAILED");
}

void
print_json(FILE *out, const Summary &s)
{
	/* One line, numbers as numbers: what Perl's decode_json takes as it is. */
	std::fprintf(out,
				 "{\"ids\":%" PRId64 ",\"seconds\":%.3f,\"ids_per_second\":%.1f,\"duplicates\":%" PRIu64
				 ",\"non_positive\":%" PRIu64 ",\"non_increasing\":%" PRIu64 ",\"distinct_workers\":%" PRId64
				 ",\"peak_active_workers\":%" PRId64 ",\"connections\":%" PRId64 ",\"errors\":%" PRIu64
				 ",\"committed_ids\":%" PRId64 ",\"rolled_back_ids\":%" PRId64 ",\"out_of_layout\":%" PRIu64
				 ",\"expected_ids\":%" PRId64 ",\"peak_active_rows\":%" PRId64 ",\"peak_live_rows\":%" PRId64
				 ",\"registered_workers\":%" PRId64 ",\"sessions_changing_worker\":%" PRIu64
				 ",\"timed_out\":%s,\"interrupted\":%s,\"mode\":\"%s\",\"method\":\"%s\",\"seed\":%" PRIu64
				 ",\"ok\":%s}\n",
				 s.ids, s.seconds, s.ids_per_second(), s.duplicates, s.non_positive, s.non_increasing,
				 s.distinct_workers, s.peak_active_workers, s.connections, s.errors, s.committed_ids,
				 s.rolled_back_ids, s.out_of_layout, s.expected_ids, s.peak_active_rows, s.peak_live_rows,
				 s.registered_workers, s.sessions_changing_worker, s.timed_out ? "true" : "false",
				 s.interrupted ? "true" : "false", mode_name(s.mode), method_name(s.method), s.seed,
				 s.ok() ? "true" : "false");
}

} // namespace uidgen_load

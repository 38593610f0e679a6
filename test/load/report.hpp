/*
 * report.hpp
 *	  The figures of a run, as a human summary and as one JSON line.
 */
#ifndef UIDGEN_LOAD_REPORT_HPP
#define UIDGEN_LOAD_REPORT_HPP

#include <cstdint>
#include <cstdio>

#include "id_check.hpp"
#include "modes.hpp"
#include "options.hpp"

namespace uidgen_load {

struct Summary
{
	Mode mode;
	Method method;
	uint64_t seed;
	int parallel;
	int64_t expected_ids;
	int64_t ids;
	double seconds;
	uint64_t duplicates;
	uint64_t non_positive;
	uint64_t out_of_layout;
	uint64_t non_increasing;
	uint64_t sessions_changing_worker;
	int64_t distinct_workers;
	int64_t peak_active_workers;
	int64_t peak_active_rows;
	int64_t peak_live_rows;
	int64_t registered_workers;
	int64_t connections;
	int64_t committed_ids;
	int64_t rolled_back_ids;
	uint64_t errors;
	bool timed_out;
	bool interrupted;

	double ids_per_second() const { return seconds > 0 ? static_cast<double>(ids) / seconds : 0; }

	/* Whether the run passed: what the exit status says. */
	bool ok() const;
};

Summary summarize(const Options &options, const LoadOutcome &outcome, const UniquenessResult &uniqueness);

/* Examples of every problem found, to reproduce and to look up in the server's log. */
void print_findings(FILE *out, const LoadOutcome &outcome, const UniquenessResult &uniqueness, const Layout &layout);

void print_summary(FILE *out, const Summary &summary, const Options &options);
void print_json(FILE *out, const Summary &summary);

} // namespace uidgen_load

#endif /* UIDGEN_LOAD_REPORT_HPP */

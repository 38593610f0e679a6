/*
 * error.hpp
 *	  The one exception type the core throws.
 *
 * It carries everything the boundary needs to raise a PostgreSQL error: the
 * class of failure (mapped to a SQLSTATE in src/pg), a primary message in
 * PostgreSQL style, and an optional detail and hint.
 */
#pragma once


#include <stdexcept>
#include <string>

namespace uidgen {

enum class ErrorKind
{
	InvalidParameter,	/* 22023 invalid_parameter_value */
	OutOfRange,			/* 22003 numeric_value_out_of_range */
	TimeOutOfRange,		/* 22008 datetime_value_out_of_range */
	LimitExceeded,		/* 54000 program_limit_exceeded */
	NotInPrerequisiteState, /* 55000 object_not_in_prerequisite_state */
	ConnectionFailure,	/* 08006 connection_failure: a lease from the registry ran out */
	InvalidText,		/* 22P02 invalid_text_representation */
};

class Error : public std::runtime_error
{
public:
	Error(ErrorKind kind, std::string message, std::string detail = {}, std::string hint = {})
		: std::runtime_error(std::move(message)), kind_(kind), detail_(std::move(detail)),
		  hint_(std::move(hint))
	{
	}

	ErrorKind
	kind() const noexcept
	{
		return kind_;
	}
	const std::string &
	detail() const noexcept
	{
		return detail_;
	}
	const std::string &
	hint() const noexcept
	{
		return hint_;
	}

private:
	ErrorKind kind_;
	std::string detail_;
	std::string hint_;
};

} // namespace uidgen

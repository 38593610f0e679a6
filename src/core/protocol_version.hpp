/*
 * protocol_version.hpp
 *	  Which version of the registry protocol a member and a registry speak.
 *
 * The rule (src/registry/README.md, "The protocol"): a member and a registry
 * one protocol version apart work together, whichever of them was upgraded
 * first, so that a fleet upgrades one server at a time; further apart, both
 * refuse, naming both versions.  Each call carries the member's version and
 * each reply the registry's; they speak the lower one.  That works because
 * a version only adds: an argument with a default, which a member of the
 * version before never names, and a reply column, which it never reads
 * (members call by argument name and read replies by column name).
 */
#pragma once

namespace uidgen {

/* The version a member of version member speaks with a registry of version registry: 0 for none. */
constexpr int
spoken_protocol(int member, int registry)
{
	if (member < 1 || registry < 1 || member - registry > 1 || registry - member > 1)
		return 0;
	return member < registry ? member : registry;
}

} // namespace uidgen

/*
 * settings.hpp
 *	  uidgen's configuration parameters (GUCs).
 */
#pragma once

#include "core/generator.hpp"

namespace uidgen::pg {

/* The values behind the GUCs; defined in module.cpp. */
extern int generator_setting;		/* a GeneratorKind */
extern int max_backwards_wait_ms;
extern int max_borrow_ms;
extern bool worker_reuse;

inline GeneratorKind
current_generator_kind()
{
	return static_cast<GeneratorKind>(generator_setting);
}

inline GeneratorLimits
current_limits()
{
	return GeneratorLimits{max_borrow_ms, max_backwards_wait_ms};
}

void define_settings();

} // namespace uidgen::pg

/*
 * reservation.hpp
 *	  The database's time reservation: uidgen.reserved_until.
 *
 * One sequence per database holds a time unit (of the layout, since its
 * epoch) at or above every unit that any worker of the database may have
 * issued.  Sequences are WAL-logged and not transactional: a rollback does
 * not lower the mark, and a standby or a restored copy inherits it.  A
 * worker leaked by a crash is released no lower than the mark, so it is
 * reused only above every ID its dead holder issued, whatever the clock did
 * meanwhile (INV-9, INV-10).
 */
#pragma once

#include "core/layout.hpp"
#include "core/reservation.hpp"

#include <cstdint>
#include <optional>
#include <type_traits>

extern "C" {
#include "postgres.h"

#include "nodes/nodes.h"
}

namespace uidgen::pg {

/*
 * Extends the mark for one generator: when asked for a unit beyond what the
 * mark covers, raises it to that unit plus a window and flushes the WAL
 * record before returning, so that nothing is issued under a mark a crash
 * could lose.  Another backend's raise is adopted without writing.
 */
class DatabaseReservation final : public TimeReservation
{
public:
	/* Bound to the install whose uidgen.reserved_until exists now. */
	explicit DatabaseReservation(const Layout &layout);

	/* Refuses (55000) once the extension was dropped and created again. */
	int64_t extend(int64_t delta) override;

private:
	int64_t window_units_;
	Oid install_; /* uidgen.reserved_until of the install, InvalidOid before 1.1.0 */
};
static_assert(std::is_trivially_destructible_v<DatabaseReservation>);

/*
 * The mark as it stands, inside an SPI connection; nullopt when the
 * extension's SQL objects predate it (1.0.0, before ALTER EXTENSION
 * UPDATE).
 */
std::optional<int64_t> reserved_until();

/*
 * reserved_until() once every raise under way has ended (it waits for the
 * lock that serialises them), for a database's join: a raise that starts
 * after this returns sees what the caller did before it.
 */
std::optional<int64_t> settled_reserved_until();

/*
 * Sets the mark back to "nothing issued", for uid_configure: the mark counts
 * units of the layout, and a layout can change only while no worker has
 * ever registered.  Does nothing when the sequence does not exist (1.0.0).
 */
void reset_reservation();

/*
 * Inside an SPI connection, for the event trigger uidgen_keep_reach: whether
 * the command (a DROP EXTENSION, DROP SCHEMA ... CASCADE or DROP OWNED parse
 * tree) drops this extension, and role (the command's, not the SPI
 * connection's) may drop it: another role's command drops nothing of it,
 * and takes no lock here.
 */
bool command_drops_extension(Node *parsetree, Oid role);

/*
 * Inside an SPI connection, as the extension is dropped: raises the reach,
 * uidgen_reach.max_id (created when missing, outside the extension), to the
 * largest ID this install may have issued, holding the lock that serialises
 * raises until the drop commits.  Refuses (42501) a schema or sequence of
 * that name that a superuser did not make.
 */
void keep_reach();

/*
 * Inside an SPI connection: the reach of this install and of those before it
 * (the greater of install_reach() and uidgen.install_floor), an ID at or
 * above every ID this database's installs may have issued; 0 when none can
 * have issued.  Holds the raise lock until the transaction ends.
 */
int64_t database_reach();

/*
 * Inside an SPI connection: raises uidgen.install_floor to reach, the reach
 * of another database whose IDs this one continues (a logical-replication
 * cutover), never lowering it; returns the floor.  Errors (22023) for a
 * reach that is no ID of layout or whose unit lies further ahead of the
 * clock than a session may borrow and a window: taken under another layout.
 */
int64_t raise_install_floor(const Layout &layout, int64_t reach);

/*
 * Inside an SPI connection: the unit every worker of this install starts
 * after, so that it issues above the reach of earlier installs of the
 * extension in this database (uidgen.install_floor); Generator::no_floor
 * for a first install or SQL older than 2.0.0.
 */
int64_t install_floor_delta(const Layout &layout);

/*
 * For uid_configure and every claim: refuses (55000) a layout whose IDs
 * stay at or below the install floor (a unit of install_floor_delta()) for
 * longer than a session may borrow ahead.  Its workers could only wait, or
 * find the layout's time exhausted.
 */
void refuse_below_install_floor(const Layout &layout, int64_t floor);

} // namespace uidgen::pg

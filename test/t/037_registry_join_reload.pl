# Joining a registry while a statement runs across the reload that sets
# uidgen.registry (INV-19 of docs/design.md).  That statement keeps the
# worker it claimed without a registry, a number of the database's own
# numbering, which the registry may grant to another database.  It must
# issue nothing above the floor its database joins at: every ID above a
# database's join floor is covered by the guarantee, and before the fix the
# old worker went on issuing there (the review counted 883 and 1,007
# duplicates against a database granted the same number).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', member => 0, max_borrow => '2s');
my $member = new_uidgen_node('member', conf => [ "shared_preload_libraries = 'uidgen'", "uidgen.max_borrow = '2s'" ]);
$member->safe_psql('postgres', 'CREATE TABLE ids (id bigint, source text)');
$member->safe_psql('postgres', 'CREATE DATABASE other');
$member->safe_psql('other', 'CREATE EXTENSION uidgen; CREATE TABLE ids (id bigint, source text)');

# A statement of database postgres that commits as it goes, started before
# the server has a registry: it never processes the reload.
my ($old_out, $old_err) = ('', '');
my $old = IPC::Run::start(
	[ 'psql', '-X', '-v', 'VERBOSITY=verbose', '-d', $member->connstr('postgres'), '-c', q{
		DO $$ DECLARE t0 timestamptz := clock_timestamp();
		BEGIN
			WHILE clock_timestamp() < t0 + interval '120 s' LOOP
				INSERT INTO ids SELECT uid_next(), 'old' FROM generate_series(1, 100);
				COMMIT;
			END LOOP;
		END $$} ],
	'>', \$old_out, '2>', \$old_err);
$member->poll_query_until('postgres', q{SELECT count(*) > 0 FROM ids WHERE source = 'old'})
  or die 'the old statement did not get going';
my $old_worker = $member->safe_psql('postgres', q{SELECT min(uid_worker_id(id)) FROM ids WHERE source = 'old'});

# The reload: the server works for the registry from now on.
$member->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$member->reload;
wait_for_registry($member);

# Database other joins first and writes on: it never issued, so all its IDs
# are covered, and its first grant is the first worker of the first block.
my $writer = start_sql_loop($member, q{DO $$ BEGIN LOOP INSERT INTO ids SELECT uid_next(), 'other' FROM generate_series(1, 100); COMMIT; END LOOP; END $$},
	db => 'other', until => q{SELECT count(*) > 0 FROM ids});
is($member->safe_psql('other', 'SELECT min(uid_worker_id(id)) FROM ids'), $old_worker,
	"database other was granted worker $old_worker, the number the old statement issues under");

# Then database postgres joins, through a new session.
$member->safe_psql('postgres', q{INSERT INTO ids SELECT uid_next(), 'joined'});
my ($floor, $shift) = split /\|/, $member->safe_psql('postgres',
	'SELECT m.join_floor, c.worker_bits + c.seq_bits FROM uidgen.membership m, uidgen.config c');
cmp_ok($floor, '>=', 0, "database postgres joined at time unit $floor");

# By the time database other issues 4 s above that floor, a worker that
# went on would have issued above it too.
$member->poll_query_until('other', "SELECT max(id >> $shift) > $floor + 4000 FROM ids")
  or die 'database other did not issue past the join floor';
$member->safe_psql('postgres', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%DO $$%'});
$member->safe_psql('other', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%DO $$%'});
$old->finish;
finish_sql_loops($writer);

is($member->safe_psql('postgres', "SELECT count(*) FROM ids WHERE source = 'old' AND id >> $shift > $floor"), '0',
	'the old worker issued nothing above the join floor');
like($old_err, qr/ERROR:  08006: uidgen worker $old_worker was claimed before this server joined a registry/,
	'the statement that ran across the reload stopped at the reservation the join read: 08006');

# Covered: every ID of database other, and those of postgres above its floor.
my $covered = $member->safe_psql('postgres', "SELECT id FROM ids WHERE id >> $shift > $floor")
  . "\n" . $member->safe_psql('other', 'SELECT id FROM ids');
is(duplicate_ids($covered), 0, 'no ID covered by the guarantee was issued twice');

# The session goes on from the registry at its next command.
like($member->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'a new command issues from the registry');

done_testing();

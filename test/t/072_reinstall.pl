# DROP EXTENSION uidgen and CREATE EXTENSION uidgen again, at once, after
# a statement that borrowed time ahead: the new extension's workers are
# numbered from 1 again, so they must start above every ID the old one
# issued (the reach, uidgen_reach.max_id, which the drop leaves behind).  A
# session across the drop goes on above its own last ID, a statement across
# it stops at the reservation it held, and the same holds under a registry
# and in scope server (INV-13, ASM-6 of docs/design.md).
use strict;
use warnings;

use IPC::Run;
use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# Two IDs a millisecond: 20,000 IDs in one statement borrow about 10 s ahead.
my $layout = "41, 13, 1, '2026-01-01+00', 'millisecond'";
my $node = new_uidgen_node('reinstall', conf => ["uidgen.max_borrow = '1h'"]);

# A database with uidgen in the brief layout and a table of IDs that
# outlives the extension (no default, no dependency on it).
sub fresh_database
{
	my ($db) = @_;
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION uidgen; SELECT uid_configure($layout); CREATE TABLE ids (id bigint, phase int)");
}

sub reinstall
{
	my ($db, %params) = @_;
	$node->safe_psql($db, 'DROP EXTENSION uidgen; CREATE EXTENSION uidgen'
		. ($params{same_layout} // 1 ? "; SELECT uid_configure($layout)" : ''));
}

sub borrowed_ahead_s
{
	my ($db, $phase) = @_;
	return $node->safe_psql($db, "SELECT extract(epoch FROM max(uid_timestamp(id)) - clock_timestamp())::numeric(8,1) "
		. "FROM ids WHERE phase = $phase");
}

sub duplicates_in
{
	my ($db) = @_;
	return $node->safe_psql($db, 'SELECT count(*) - count(DISTINCT id) FROM ids');
}

# ---- a reinstall right after a statement that borrowed ahead ---------------

fresh_database('again');
$node->safe_psql('again', 'INSERT INTO ids SELECT uid_next(), 1 FROM generate_series(1, 20000)');
my $ahead = borrowed_ahead_s('again', 1);
cmp_ok($ahead, '>', 5, "the first install's statement borrowed $ahead s ahead of the clock");
is($node->safe_psql('again', q{SELECT to_regnamespace('uidgen_reach') IS NULL}), 't',
	'nothing of the reach exists while the extension is installed');

reinstall('again');
my $reach = $node->safe_psql('again', 'SELECT last_value FROM uidgen_reach.max_id');
cmp_ok($reach, '>=', $node->safe_psql('again', 'SELECT max(id) FROM ids'),
	'the reach the drop left behind covers every ID the first install issued');
is($node->safe_psql('again', 'SELECT last_value FROM uidgen.install_floor'), $reach,
	"the new install's floor is that reach");
$node->safe_psql('again', 'INSERT INTO ids SELECT uid_next(), 2 FROM generate_series(1, 20000)');
is(duplicates_in('again'), 0, 'no ID of the new install repeats one of the old');
is($node->safe_psql('again', 'SELECT min(id) > (SELECT max(id) FROM ids WHERE phase = 1) FROM ids WHERE phase = 2'),
	't', "the new install's IDs all lie above the old one's");

# Once more, into the default layout: the reach is an ID, not a time, so it
# holds across layouts.
reinstall('again', same_layout => 0);
$node->safe_psql('again', 'INSERT INTO ids SELECT uid_next(), 3 FROM generate_series(1, 20000)');
is(duplicates_in('again'), 0, 'a reinstall under another layout repeats no ID either');
is($node->safe_psql('again', 'SELECT min(id) > (SELECT max(id) FROM ids WHERE phase < 3) FROM ids WHERE phase = 3'),
	't', 'its IDs lie above those of both earlier installs');
# Back to the brief layout, whose IDs are far smaller than the default's:
# refused, since its workers could not start above the reach.
$node->safe_psql('again', 'DROP EXTENSION uidgen; CREATE EXTENSION uidgen');
like(psql_error($node, 'again', "SELECT uid_configure($layout)"), qr/55000: cannot use layout .* earlier install/,
	'a layout whose IDs lie below the reach of an earlier install is refused');

# A first install pays nothing: its floor is zero, its first ID is of now.
$node->safe_psql('postgres', 'CREATE DATABASE first');
is($node->safe_psql('first', q{CREATE EXTENSION uidgen;
	SELECT last_value = 0 AND abs(extract(epoch FROM uid_timestamp(uid_next()) - clock_timestamp())) < 1
	  FROM uidgen.install_floor}), 't', "a first install's floor is zero and its first ID is of the clock");

# ---- the other ways a drop happens ----------------------------------------------

# Under session_replication_role = replica (migration scripts, logical
# replication's DDL), and by dropping the extension's schema: the trigger fires.
for my $case (['replica', 'SET session_replication_role = replica; DROP EXTENSION uidgen'],
	['schema', 'DROP SCHEMA public CASCADE; CREATE SCHEMA public'])
{
	my ($db, $drop) = @$case;
	fresh_database($db);
	$node->safe_psql($db, 'CREATE SCHEMA keep; ALTER TABLE ids SET SCHEMA keep');
	$node->safe_psql($db, 'INSERT INTO keep.ids SELECT uid_next(), 1 FROM generate_series(1, 20000)');
	$node->safe_psql($db, "$drop; RESET session_replication_role; CREATE EXTENSION uidgen; SELECT uid_configure($layout)");
	$node->safe_psql($db, 'INSERT INTO keep.ids SELECT uid_next(), 2 FROM generate_series(1, 20000)');
	is($node->safe_psql($db, 'SELECT count(*) - count(DISTINCT id) FROM keep.ids'), 0,
		"a drop by \"$drop\" keeps the reach: no ID repeated");
}

# Another role's DROP EXTENSION, even one left open in a transaction, takes
# no lock of uidgen's and writes nothing.
$node->safe_psql('postgres', 'CREATE ROLE someone LOGIN');
fresh_database('others');
$node->safe_psql('others', 'SELECT uid_next()');
my $other = $node->background_psql('others', on_error_stop => 0, extra_params => ['-U', 'someone']);
$other->query('BEGIN; DROP EXTENSION IF EXISTS no_such_extension');
is($node->safe_psql('others', "SET statement_timeout = '20s'; SELECT count(DISTINCT uid_next()) FROM generate_series(1, 40000)"),
	40000, "another role's open DROP EXTENSION does not hold up issuing");
$other->quit;

# A schema uidgen_reach that a superuser did not make is refused, never used.
$node->safe_psql('postgres', 'CREATE ROLE dbo LOGIN; CREATE DATABASE owned OWNER dbo');
$node->safe_psql('owned', 'CREATE EXTENSION uidgen; SELECT uid_next()');
$node->safe_psql('owned', q{SET ROLE dbo; CREATE SCHEMA uidgen_reach;
	CREATE FUNCTION uidgen_reach.pwn() RETURNS bigint LANGUAGE plpgsql AS $$
	BEGIN
		IF (SELECT rolsuper FROM pg_roles WHERE rolname = current_user) THEN
			EXECUTE 'ALTER ROLE dbo SUPERUSER';
		END IF;
		RETURN 0;
	END $$;
	CREATE VIEW uidgen_reach.max_id AS SELECT uidgen_reach.pwn() AS last_value});
like(psql_error($node, 'owned', 'DROP EXTENSION uidgen'), qr/42501: schema "uidgen_reach" or its sequence "max_id" was not made by a superuser/,
	'a drop refuses a schema uidgen_reach another role made');
like(psql_error($node, 'owned', 'ALTER EVENT TRIGGER uidgen_keep_reach DISABLE; DROP EXTENSION uidgen; CREATE EXTENSION uidgen'),
	qr/42501: schema "uidgen_reach"/, 'and so does a later CREATE EXTENSION');
is($node->safe_psql('postgres', q{SELECT rolsuper FROM pg_roles WHERE rolname = 'dbo'}), 'f',
	'the other role gained nothing');

# A reinstall under a layout whose IDs lie far below the reach: refused at
# once (55000), not a sleep until the clock gets there.
$node->safe_psql('postgres', 'CREATE DATABASE larger');
$node->safe_psql('larger', "CREATE EXTENSION uidgen; SELECT uid_configure(31, 20, 12, '2000-01-01+00', 'second'); SELECT uid_next()");
$node->safe_psql('larger', 'DROP EXTENSION uidgen; CREATE EXTENSION uidgen');
like(psql_error($node, 'larger', "SET statement_timeout = '20s'; SELECT uid_next()"), qr/55000: cannot use layout/,
	'the first uid_next() under a layout below the reach is refused at once');
is($node->safe_psql('larger', "SELECT uid_configure(31, 20, 12, '2000-01-01+00', 'second') IS NOT NULL"), 't',
	'and the earlier layout can still be set, since no worker was claimed');

# ---- a session across the drop ---------------------------------------------

fresh_database('across');
my $s = $node->background_psql('across', on_error_stop => 0);
$s->query_safe('INSERT INTO ids SELECT uid_next(), 1 FROM generate_series(1, 20000)');
my $last = $s->query_safe('SELECT uid_lastval()');
reinstall('across');
$s->query('INSERT INTO ids SELECT uid_next(), 2 FROM generate_series(1, 20000)');
$s->query_safe('INSERT INTO ids SELECT uid_next(), 2 FROM generate_series(1, 20000)');
my $first_after = $s->query_safe("SELECT min(id) FROM ids WHERE phase = 2");
cmp_ok($first_after, '>', $last, "the session's first ID after the reinstall lies above its last before it");
$node->safe_psql('across', 'INSERT INTO ids SELECT uid_next(), 3 FROM generate_series(1, 20000)');
is(duplicates_in('across'), 0, 'neither the session nor a new one repeats an ID of the old install');
$s->quit;

# ---- a statement across the drop -------------------------------------------

# The session takes its worker and its reservation in one transaction, then
# issues an ID a millisecond in one statement for 20 s, each reported as a
# notice as it goes (its rows would go with the error that ends it).
fresh_database('statement');
my ($out, $err) = ('', '');
my $h = IPC::Run::start(['psql', '-X', '-d', $node->connstr('statement'), '-c', 'SELECT uid_next()',
	'-c', q{DO $$ DECLARE t0 timestamptz := clock_timestamp();
		BEGIN
			WHILE clock_timestamp() < t0 + interval '20 s' LOOP
				RAISE NOTICE 'uid %', uid_next();
				PERFORM pg_sleep(0.001);
			END LOOP;
		END $$}], '>', \$out, '2>', \$err);
$node->poll_query_until('statement', q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE query LIKE 'DO %' AND state = 'active')})
  or die 'the statement did not start';
reinstall('statement');
# The new install issues while the old statement goes on.
for my $round (1 .. 20)
{
	$node->safe_psql('statement', 'INSERT INTO ids SELECT uid_next(), 2 FROM generate_series(1, 1000)');
}
$h->finish;
my @old = $err =~ /uid (\d+)/g;
cmp_ok(scalar @old, '>', 100, 'the statement across the drop issued IDs (' . scalar(@old) . ')');
like($err, qr/dropped and created again/, 'it stopped at the reservation it held, with an error that says why');
my $new = $node->safe_psql('statement', 'SELECT id FROM ids');
is(duplicate_ids(\@old, $new), 0, 'no ID of the new install repeats one of the statement across the drop');

$node->stop;

# ---- scope server, preloaded --------------------------------------------------

my $server = new_uidgen_node('reinstall_server', scope => 'server', conf => ["uidgen.max_borrow = '1h'"]);
$server->safe_psql('postgres', "CREATE DATABASE again");
$server->safe_psql('again', "CREATE EXTENSION uidgen; SELECT uid_configure($layout); CREATE TABLE ids (id bigint, phase int)");
$server->safe_psql('again', 'INSERT INTO ids SELECT uid_next(), 1 FROM generate_series(1, 20000)');
$server->safe_psql('again', "DROP EXTENSION uidgen; CREATE EXTENSION uidgen; SELECT uid_configure($layout)");
# The old keeper leaves; the next uid_next() waits for a new one.
$server->safe_psql('again', 'INSERT INTO ids SELECT uid_next(), 2 FROM generate_series(1, 20000)');
is($server->safe_psql('again', 'SELECT count(*) - count(DISTINCT id) FROM ids'), 0,
	'scope server: no ID of the new install repeats one of the old');
is($server->safe_psql('again', 'SELECT min(id) > (SELECT max(id) FROM ids WHERE phase = 1) FROM ids WHERE phase = 2'),
	't', "scope server: the new install's IDs lie above the old one's");
$server->stop;

# ---- under a registry -----------------------------------------------------------

my $registry = new_registry_node('reinstall_registry', conf => ["uidgen.max_borrow = '1h'"], max_borrow => '1h');
$registry->safe_psql('postgres', 'CREATE DATABASE again');
wait_for_registry($registry);
# The registry's layout is the default one: borrow with a statement of 3,000,000 IDs.
$registry->safe_psql('again', 'CREATE EXTENSION uidgen; CREATE TABLE ids (id bigint, phase int)');
$registry->safe_psql('again', 'INSERT INTO ids SELECT uid_next(), 1 FROM generate_series(1, 3000000)');
$registry->safe_psql('again', 'DROP EXTENSION uidgen; CREATE EXTENSION uidgen');
$registry->safe_psql('again', 'INSERT INTO ids SELECT uid_next(), 2 FROM generate_series(1, 3000000)');
is($registry->safe_psql('again', 'SELECT count(*) - count(DISTINCT id) FROM ids'), 0,
	'under a registry: no ID of the new install repeats one of the old');
$registry->stop;

done_testing();

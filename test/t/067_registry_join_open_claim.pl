# Joining a registry while the database's first worker claim is still open
# (issue 20, item 5; INV-19 of docs/design.md).  Session A of database
# postgres takes the database's first worker, of its own numbering, in a
# transaction it keeps open, and issues ahead of the clock; its claim row
# is not committed, so the worker table shows no row.  The server then
# joins a registry: database other joins first and is granted the same
# number; then database postgres joins.  Its join floor must be above
# every ID session A issued or may still issue (the database's time
# reservation), or A's IDs count as covered by the guarantee and collide
# with database other's.  Before the fix the floor was -1: a database with
# no committed worker row was taken for one that never issued.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $dir = PostgreSQL::Test::Utils::tempdir();

my $registry = new_registry_node('registry', member => 0, max_borrow => '2s');
my $member = new_uidgen_node('member', conf => [ "shared_preload_libraries = 'uidgen'", "uidgen.max_borrow = '2s'" ]);
$member->safe_psql('postgres', 'CREATE TABLE ids (id bigint, source text)');
$member->safe_psql('postgres', 'CREATE DATABASE other');
$member->safe_psql('other', 'CREATE EXTENSION uidgen; CREATE TABLE ids (id bigint, source text)');

# A session of database db that takes its first worker in a transaction it
# keeps open, with one statement that runs across reloads (it never
# processes them) and streams its IDs to file on the client's side: they
# are issued (the client has them), though its claim row never commits.  A
# short pause every 2,000 IDs keeps the file small.  Returns its handle,
# with refs to its input and its errors.
sub start_open_session
{
	my ($db, $file) = @_;
	my ($in, $out, $err) = ("BEGIN;\n\\copy (SELECT uid_next() FROM generate_series(1, 100000000) g, "
		  . "LATERAL (SELECT CASE WHEN g % 2000 = 0 THEN pg_sleep(0.01) END) s) TO '$file'\n", '', '');
	my $h = IPC::Run::start([ 'psql', '-X', '-d', $member->connstr($db) ],
		'<', \$in, '>', \$out, '2>', \$err, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
	$h->pump while length $in;
	return ($h, \$in, \$err);
}

# Waits until that session's statement failed, its transaction still open;
# returns its error.
sub wait_until_stopped
{
	my ($db, $h, $err) = @_;
	$member->poll_query_until($db,
		q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE state = 'idle in transaction (aborted)' AND datname = current_database())})
	  or die "the session of database $db did not stop";
	$h->pump until $$err =~ /ERROR/;
	return $$err;
}

# Session A: the database's first claim.
my $a_file = "$dir/a.txt";
my ($a, $a_in, $a_err) = start_open_session('postgres', $a_file);
$member->poll_query_until('postgres', 'SELECT is_called FROM uidgen.worker_node_id_seq')
  or die "session A did not get going: $$a_err";
is($member->safe_psql('postgres', 'SELECT count(*) FROM uidgen.worker_node'), '0',
	'session A issues under a worker whose claim row is not committed');
my $a_worker = $member->safe_psql('postgres', 'SELECT last_value FROM uidgen.worker_node_id_seq');

# The reload: the server works for the registry from now on.
$member->append_conf('postgresql.conf', join("\n", registry_conf($registry)) . "\n");
$member->reload;
wait_for_registry($member);

# Database other joins first: it never issued, and its first grant is the
# first worker of the first block, the number session A issues under.
my $writer = start_sql_loop($member, q{DO $$ BEGIN LOOP INSERT INTO ids SELECT uid_next(), 'other' FROM generate_series(1, 100); COMMIT; END LOOP; END $$},
	db => 'other', until => q{SELECT count(*) > 0 FROM ids});
is($member->safe_psql('other', 'SELECT min(uid_worker_id(id)) FROM ids'), $a_worker,
	"database other was granted worker $a_worker, the number session A issues under");

# Session A goes on until its reservation runs out: the join of database
# other stops it there, and its transaction stays open.
like(wait_until_stopped('postgres', $a, $a_err),
	qr/ERROR:  uidgen worker $a_worker was claimed before this server joined a registry/,
	'session A stopped at its reservation');

# Database postgres joins through a new session, while session A's claim
# is not committed.
$member->safe_psql('postgres', q{INSERT INTO ids SELECT uid_next(), 'joined'});
my ($floor, $shift) = split /\|/, $member->safe_psql('postgres',
	'SELECT m.join_floor, c.worker_bits + c.seq_bits FROM uidgen.membership m, uidgen.config c');

$member->safe_psql('postgres', 'CREATE TABLE a_ids (id bigint)');
$member->safe_psql('postgres', "COPY a_ids FROM '$a_file'");
my ($a_count, $a_last) = split /\|/, $member->safe_psql('postgres', "SELECT count(*), max(id >> $shift) FROM a_ids");
cmp_ok($a_count, '>', 0, "session A issued $a_count IDs");
cmp_ok($floor, '>=', $a_last, "database postgres joined at time unit $floor, at or above session A's last ($a_last)");

# Database other issues on past session A's IDs; then both stop.
$member->poll_query_until('other', "SELECT max(id >> $shift) > $a_last FROM ids")
  or die 'database other did not issue past session A';
$member->safe_psql('other', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() AND query LIKE '%DO $$%'});
finish_sql_loops($writer);
$$a_in = "ROLLBACK;\n\\q\n";
$a->finish;

# Covered: every ID of database other, and those of postgres above its floor.
my $covered = $member->safe_psql('postgres', "SELECT id FROM a_ids WHERE id >> $shift > $floor UNION ALL "
	  . "SELECT id FROM ids WHERE id >> $shift > $floor")
  . "\n" . $member->safe_psql('other', 'SELECT id FROM ids');
is(duplicate_ids($covered), 0, 'no ID covered by the guarantee was issued twice');

# The same with a first claim from the blocks of a registry: it takes no
# fresh id from the database's sequence.  Session C of database third joins
# the registry (its join commits apart) and takes the database's first
# worker from the server's blocks in a transaction it keeps open, issuing
# across the reload that sets uidgen.registry to another registry.
# Database third then joins that one (which imported the first's export),
# while C's claim is not committed: above C's IDs.
my $registry2 = new_registry_node('registry2', member => 0, max_borrow => '2s');
$member->safe_psql('postgres', 'CREATE DATABASE third');
$member->safe_psql('third', 'CREATE EXTENSION uidgen');
my $c_file = "$dir/c.txt";
my ($c, $c_in, $c_err) = start_open_session('third', $c_file);
$member->poll_query_until('third', q{SELECT count(*) > 0 FROM pg_stat_activity WHERE wait_event = 'PgSleep' AND datname = 'third'})
  or die "session C did not get going: $$c_err";
is($member->safe_psql('third',
	q{SELECT (SELECT count(*) FROM uidgen.membership) || ' joined, ' || (SELECT count(*) FROM uidgen.worker_node) || ' rows'}),
	'1 joined, 0 rows',
	'session C issues under a worker from the blocks whose claim row is not committed');
# The documented move: the first registry's export seals it, the second
# imports it, and the member may then move there (INV-20).
my $export = $registry->safe_psql('registry', "SELECT uid_registry_export('"
	  . $registry2->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity') . "')");
$registry2->safe_psql('registry', "SELECT uid_registry_import(\$x\$$export\$x\$)");
$member->append_conf('postgresql.conf', join("\n", registry_conf($registry2)) . "\n");
$member->reload;
# The agent goes on with the first registry until it has reached the second.
$member->poll_query_until('third', "SELECT bool_and(registry LIKE '%port=" . $registry2->port
	  . "%' AND pending_registry IS NULL) FROM uidgen.registry_status")
  or die 'the agent did not reach the second registry';
$member->poll_query_until('third', 'SELECT uid_next() IS NOT NULL')
  or die 'database third did not join the second registry';
my ($floor2, $joined_id) = split /\|/, $member->safe_psql('third', 'SELECT join_floor, registry_id FROM uidgen.membership');
is($joined_id, $registry2->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity'),
	'database third joined the second registry');
wait_until_stopped('third', $c, $c_err);
$member->safe_psql('third', 'CREATE TABLE c_ids (id bigint)');
$member->safe_psql('third', "COPY c_ids FROM '$c_file'");
my ($c_count, $c_last) = split /\|/, $member->safe_psql('third', "SELECT count(*), max(id >> $shift) FROM c_ids");
cmp_ok($c_count, '>', 0, "session C issued $c_count IDs");
cmp_ok($floor2, '>=', $c_last, "database third joined the second registry at time unit $floor2, at or above session C's last ($c_last)");
$$c_in = "ROLLBACK;\n\\q\n";
$c->finish;

done_testing();

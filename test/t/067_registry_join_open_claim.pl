# Joining a registry while the database's first worker claim is still open
# (issue 20, item 5; docs/design.md section 8.6).  Session A of database
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

# Session A: the database's first claim, in a transaction it keeps open,
# with one statement that runs across the reload (it never processes it)
# and streams its IDs to a file on the client's side: they are issued (the
# client has them), though the claim row never commits.  A short pause
# every 2,000 IDs keeps the file small.
my $a_file = "$dir/a.txt";
my ($a_in, $a_out, $a_err) = ("BEGIN;\n\\copy (SELECT uid_next() FROM generate_series(1, 100000000) g, "
	  . "LATERAL (SELECT CASE WHEN g % 2000 = 0 THEN pg_sleep(0.01) END) s) TO '$a_file'\n", '', '');
my $a = IPC::Run::start([ 'psql', '-X', '-d', $member->connstr('postgres') ],
	'<', \$a_in, '>', \$a_out, '2>', \$a_err, IPC::Run::timeout($PostgreSQL::Test::Utils::timeout_default));
$a->pump while length $a_in;
$member->poll_query_until('postgres', 'SELECT is_called FROM uidgen.worker_node_id_seq')
  or die "session A did not get going: $a_err";
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
$member->poll_query_until('postgres',
	q{SELECT EXISTS (SELECT FROM pg_stat_activity WHERE state = 'idle in transaction (aborted)')})
  or die 'session A did not stop';
$a->pump until $a_err =~ /ERROR/;
like($a_err, qr/ERROR:  uidgen worker $a_worker was claimed before this server joined a registry/,
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
$a_in = "ROLLBACK;\n\\q\n";
$a->finish;

# Covered: every ID of database other, and those of postgres above its floor.
my $covered = $member->safe_psql('postgres', "SELECT id FROM a_ids WHERE id >> $shift > $floor UNION ALL "
	  . "SELECT id FROM ids WHERE id >> $shift > $floor")
  . "\n" . $member->safe_psql('other', 'SELECT id FROM ids');
is(duplicate_ids($covered), 0, 'no ID covered by the guarantee was issued twice');

done_testing();

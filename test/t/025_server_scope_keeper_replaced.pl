# A session of scope server that borrowed a private worker from the keeper
# outlives that keeper.  The keeper's exit releases the worker above
# everything its reservation allowed, and a new keeper publishes a new
# generation with a reservation of its own.  The session must not go on
# issuing under the worker it borrowed once the reservation it was lent has
# run out: the worker may be someone else's by then.  Before the fix, its
# first ID after an idle spell was checked against the new keeper's
# reservation alone (server_generator.cpp, wait_for_reservation()), so it
# issued under the released worker while a session of scope backend had
# reused that worker (found by review; INV-14).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('keeper_replaced', scope => 'server', conf => ["uidgen.max_borrow = '1s'"]);
$node->safe_psql('postgres', q{
	CREATE TABLE b_ids (n serial, id bigint);
	CREATE TABLE e_ids (id bigint);
	CREATE TABLE e_worker (worker bigint);
	CREATE TABLE go (go bool)});

# B runs bulk statements until it outruns the shared cursor and borrows a
# private worker of its own.
my $b = $node->background_psql('postgres');
my ($borrowed, $keeper) = borrow_private_worker($node, $b, 'SELECT count(uid_next()) FROM generate_series(1, 200000)');
isnt($borrowed, $keeper->{worker}, "B borrowed private worker $borrowed from keeper $keeper->{keeper_pid} "
	. "(its cursor's worker: $keeper->{worker})");

# The keeper leaves (SIGTERM: its exit releases its workers), and a new
# one starts for another session.
kill 'TERM', $keeper->{keeper_pid};
$node->poll_query_until('postgres',
	"SELECT NOT EXISTS (SELECT FROM uidgen.server_generator WHERE keeper_pid = $keeper->{keeper_pid})")
  or die 'the keeper did not leave';
$node->safe_psql('postgres', 'SELECT uid_next()');
my $new_keeper = server_generator($node);
isnt($new_keeper->{keeper_pid}, $keeper->{keeper_pid}, "a new keeper ($new_keeper->{keeper_pid}) serves the database");

# Once the clock has passed the unit the old keeper released B's worker at,
# sessions of scope backend may reuse it: they claim until one holds it,
# then issue for 3 s once go has a row.
$node->poll_query_until('postgres', qq{
	SELECT w.status = 'released'
	       AND w.last_time < (uid_min(clock_timestamp()) >> (l.worker_bits + l.seq_bits))
	  FROM uidgen.worker_node w, uid_layout() l WHERE w.id = $borrowed})
  or die "worker $borrowed did not become reusable";
$node->adjust_conf('postgresql.conf', 'uidgen.scope', "'backend'");
$node->reload;
$node->poll_query_until('postgres', "SELECT current_setting('uidgen.scope') = 'backend'")
  or die 'uidgen.scope did not become backend';
my @writers;
for my $i (1 .. 8)
{
	push @writers, start_gated_writer($node, seconds => 3, pause => 0,
		insert => 'INSERT INTO e_ids SELECT uid_next() FROM generate_series(1, 20000); '
		  . 'INSERT INTO e_worker SELECT uid_current_worker() '
		  . 'WHERE NOT EXISTS (SELECT FROM e_worker WHERE worker = uid_current_worker())',
		until => "SELECT count(*) >= $i FROM e_worker");
	last if $node->safe_psql('postgres', "SELECT count(*) FROM e_worker WHERE worker = $borrowed") > 0;
}
is($node->safe_psql('postgres', "SELECT count(*) FROM e_worker WHERE worker = $borrowed"), '1',
	"a session of scope backend reused worker $borrowed");

# E issues; B, idle since its keeper left, issues too.
my $before_go = $node->safe_psql('postgres', 'SELECT count(*) FROM e_ids');
$node->safe_psql('postgres', 'INSERT INTO go VALUES (true)');
$node->poll_query_until('postgres', "SELECT count(*) > $before_go FROM e_ids") or die 'the writers did not go on';
$b->query_safe('INSERT INTO b_ids (id) SELECT uid_next() FROM generate_series(1, 1000)');
finish_sql_loops(@writers);
$b->quit;

my $first = $node->safe_psql('postgres', 'SELECT uid_worker_id(id) FROM b_ids ORDER BY n LIMIT 1');
isnt($first, $borrowed, "B's first ID after its keeper left is not under worker $borrowed, which that keeper "
	. "released (it came from worker $first)");
my $b_ids = $node->safe_psql('postgres', 'SELECT id FROM b_ids');
my $e_ids = $node->safe_psql('postgres', 'SELECT id FROM e_ids');
note(sprintf('B issued %d IDs, the backend sessions %d', scalar(() = $b_ids =~ /\n/g) + 1,
	scalar(() = $e_ids =~ /\n/g) + 1));
is(duplicate_ids($b_ids, $e_ids), 0, 'no ID was issued twice');

done_testing();

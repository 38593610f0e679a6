# A keeper (scope server) under a registry holds its cursor's worker and
# the private workers it lends under leases of their own (issue 20, item 2):
# each is capped by its own lease, not by the lowest of them.  With a block
# size of 1 every worker is a lease of its own.  Session B borrows a private
# worker; then that worker's lease ends while the cursor's goes on: the
# registry records the block under another lease, as when a lease lapsed
# and its block went to another holder, so the member's next renewal drops
# it.  The private worker stops (nothing above its lease's ceiling), is not
# lent again, and B, in the middle of a procedure, goes back to the cursor
# once the worker's reservation is spent; the keeper and the cursor go on.  Before, every worker of a keeper was capped by all its leases at
# once: one lease that ended ended the keeper, and with it the cursor that
# every session of the database issues from.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

# Few IDs a unit (2^6 a millisecond), so that a loop of uid_next() in
# PL/pgSQL outruns the cursor and then its private worker, borrowing ahead.
my $registry = new_registry_node('registry', member => 0, lease_ttl => '1min');
$registry->safe_psql('registry',
	'SELECT uid_configure(worker_bits => 16, seq_bits => 6); SELECT uid_registry_configure(block_size => 1)');

my $m = new_member_node('m', $registry, scope => 'server');
wait_for_registry($m);
$m->safe_psql('postgres', q{
	CREATE TABLE c_ids (id bigint);
	CREATE TABLE progress (phase text, worker bigint, ids bigint, last_id bigint);
	-- B: issues until it borrows a private worker, then until it issues
	-- from another worker, then 200,000 more; says how far it got.
	CREATE PROCEDURE run_b(cursor_worker bigint) LANGUAGE plpgsql AS $$
	DECLARE
		id bigint;
		private bigint;
		n bigint := 0;
		last_private bigint;
	BEGIN
		LOOP
			id := uid_next();
			EXIT WHEN uid_worker_id(id) <> cursor_worker;
		END LOOP;
		private := uid_worker_id(id);
		INSERT INTO progress VALUES ('borrowed', private, 0, id);
		COMMIT;
		LOOP
			id := uid_next();
			EXIT WHEN uid_worker_id(id) <> private;
			n := n + 1;
			last_private := id;
		END LOOP;
		INSERT INTO progress VALUES ('back', uid_worker_id(id), n, last_private);
		COMMIT;
		n := 0;
		FOR i IN 1 .. 200000 LOOP
			id := uid_next();
			IF uid_worker_id(id) = private THEN
				n := n + 1;
			END IF;
		END LOOP;
		INSERT INTO progress VALUES ('after', private, n, NULL);
	END $$});

$m->safe_psql('postgres', 'SELECT uid_next()');
my $keeper = server_generator($m);
my ($b_out, $b_err) = ('', '');
my $b = IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $m->connstr('postgres'),
	'-c', "CALL run_b($keeper->{worker})" ], '>', \$b_out, '2>', \$b_err);
$m->poll_query_until('postgres', "SELECT EXISTS (SELECT FROM progress WHERE phase = 'borrowed')")
  or die "B did not borrow a private worker: $b_err";
my $borrowed = $m->safe_psql('postgres', "SELECT worker FROM progress WHERE phase = 'borrowed'");
isnt($borrowed, $keeper->{worker}, "B borrowed private worker $borrowed from keeper $keeper->{keeper_pid} "
	. "(its cursor's worker: $keeper->{worker})");
is($registry->safe_psql('registry', "SELECT count(DISTINCT lease_id) FROM uidgen.worker_block "
	. "WHERE first_worker IN ($borrowed, $keeper->{worker}) AND status = 'leased'"),
	'2', 'the two workers are under two leases');

# The private worker's lease ends at the member's next renewal.
my $log_offset = -s $m->logfile;
$registry->safe_psql('registry',
	"UPDATE uidgen.worker_block SET lease_id = gen_random_uuid() WHERE first_worker = $borrowed");
$m->poll_query_until('postgres',
	"SELECT NOT EXISTS (SELECT FROM uidgen.registry_status WHERE first_worker = $borrowed)")
  or die "the member still holds the lease of worker $borrowed";
pass("the member's agent dropped the lease of worker $borrowed at its renewal");

# The keeper notices at its next tick: it withdraws the worker, or (before)
# it failed with the lease's error and exited.
$m->wait_for_log(qr/the lease of private worker $borrowed ended|background worker "uidgen keeper" \(PID $keeper->{keeper_pid}\) exited/,
	$log_offset);
my $log = slurp_file($m->logfile, $log_offset);
like($log, qr/the lease of private worker $borrowed ended; it is lent no more/,
	"the keeper withdrew worker $borrowed");
unlike($log, qr/background worker "uidgen keeper" \(PID $keeper->{keeper_pid}\) exited/, 'the keeper did not exit');

# B, still borrowing ahead, spends the worker's reservation and goes back
# to the cursor; sessions of the cursor issue meanwhile.
my $c_failed = 0;
for my $i (1 .. 1000)
{
	$c_failed++ if $m->psql('postgres', 'INSERT INTO c_ids SELECT uid_next() FROM generate_series(1, 1000)') != 0;
	last if $m->safe_psql('postgres', "SELECT count(*) FROM progress WHERE phase = 'after'") eq '1' || !$b->pumpable;
}
$b->finish;
is($b->result(0), 0, 'B ran to its end without an error') or diag($b_err);
my ($back, $ids, $last_id) = split /\|/, $m->safe_psql('postgres',
	"SELECT worker, ids, last_id FROM progress WHERE phase = 'back'");
is($back, $keeper->{worker}, "B went back to the cursor's worker $keeper->{worker} after $ids IDs from worker $borrowed");
ok($m->log_contains("gave back private worker $borrowed, whose lease ended", $log_offset),
	'B gave the worker back once its reservation was spent (not for a pause in its demand)');
is($c_failed, 0, 'every statement of C issued');
is(server_generator($m)->{keeper_pid}, $keeper->{keeper_pid}, 'the same keeper serves the database');
is($m->safe_psql('postgres', "SELECT ids FROM progress WHERE phase = 'after'"), '0',
	"none of B's next 200,000 IDs came from worker $borrowed");

# Nothing under the withdrawn worker above the ceiling the registry recorded for its block.
my $last = $m->safe_psql('postgres', "SELECT uid_timestamp($last_id)");
my ($unit, $ceiling) = split /\|/, $registry->safe_psql('registry',
	"SELECT uidgen.registry_delta('$last'), ceiling_delta FROM uidgen.worker_block WHERE first_worker = $borrowed");
cmp_ok($unit, '<=', $ceiling, "worker $borrowed issued up to time unit $unit, within its block's ceiling $ceiling");
is(duplicate_ids($m->safe_psql('postgres', 'SELECT id FROM c_ids')), 0, "no ID of C's was issued twice");

done_testing();

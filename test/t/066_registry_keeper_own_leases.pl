# A keeper (scope server) under a registry holds its cursor's worker and
# the private workers it lends under leases of their own (issue 20, item 2):
# each is capped by its own lease, not by the lowest of them.  With a block
# size of 1 every worker is a lease of its own.  Session B borrows a private
# worker; then that worker's lease ends while the cursor's goes on: the
# registry records the block under another lease, as when a lease lapsed
# and its block went to another holder, so the member's next renewal drops
# it.  The private worker stops (nothing above its lease's ceiling), is not
# lent again, and B goes back to the cursor; the keeper and the cursor go
# on.  Before, every worker of a keeper was capped by all its leases at
# once: one lease that ended ended the keeper, and with it the cursor that
# every session of the database issues from.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes qw(time);
use UidgenTest;

my $registry = new_registry_node('registry', member => 0, lease_ttl => '1min');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');

my $m = new_member_node('m', $registry, scope => 'server');
wait_for_registry($m);
$m->safe_psql('postgres', q{
	CREATE TABLE b_ids (n bigserial, id bigint);
	CREATE TABLE c_ids (id bigint)});

# B runs bulk statements until it outruns the shared cursor and borrows a
# private worker of its own.
my $b = $m->background_psql('postgres');
my ($borrowed, $keeper) = borrow_private_worker($m, $b,
	'INSERT INTO b_ids (id) SELECT uid_next() FROM generate_series(1, 200000)');
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

# B goes on, back on the cursor once its private reservation is spent; a
# session C issues from the cursor meanwhile.  No error.
my $before = $m->safe_psql('postgres', 'SELECT max(n) FROM b_ids');
my $c_failed = 0;
my $back;
my $until = time + 120;
while (time < $until)
{
	$b->query_safe('INSERT INTO b_ids (id) SELECT uid_next() FROM generate_series(1, 20000)');
	$c_failed++ if $m->psql('postgres', 'INSERT INTO c_ids SELECT uid_next() FROM generate_series(1, 1000)') != 0;
	$back = $b->query_safe('SELECT uid_current_worker()');
	last if $back ne $borrowed;
}
isnt($back, $borrowed, "B issues from worker $back now, not from worker $borrowed");
is($c_failed, 0, 'every statement of C issued (the cursor went on)');
is(server_generator($m)->{keeper_pid}, $keeper->{keeper_pid}, 'the same keeper serves the database');

# Further demand never borrows the withdrawn worker again: after B's first
# ID from another worker, none is from it.
for (1 .. 5)
{
	$b->query_safe('INSERT INTO b_ids (id) SELECT uid_next() FROM generate_series(1, 200000)');
}
$b->quit;
my $back_at = $m->safe_psql('postgres',
	"SELECT min(n) FROM b_ids WHERE n > $before AND uid_worker_id(id) <> $borrowed");
is($m->safe_psql('postgres', "SELECT count(*) FROM b_ids WHERE n > $back_at AND uid_worker_id(id) = $borrowed"),
	'0', "no ID from worker $borrowed after B left it");

# And nothing under it above the ceiling the registry recorded for its block.
my $last = $m->safe_psql('postgres',
	"SELECT uid_timestamp(max(id)) FROM b_ids WHERE uid_worker_id(id) = $borrowed");
my ($unit, $ceiling) = split /\|/, $registry->safe_psql('registry',
	"SELECT uidgen.registry_delta('$last'), ceiling_delta FROM uidgen.worker_block WHERE first_worker = $borrowed");
cmp_ok($unit, '<=', $ceiling, "worker $borrowed issued up to time unit $unit, within its block's ceiling $ceiling");

my $all = $m->safe_psql('postgres', 'SELECT id FROM b_ids UNION ALL SELECT id FROM c_ids');
is(duplicate_ids($all), 0, 'no ID was issued twice');

done_testing();

# A session retires its worker when the worker's lease runs out, and keeps
# it in its list of held workers, to release it at exit.  A failed
# registration then aborts, which takes the retired worker's object lock,
# and DISCARD ALL (what PgBouncer sends after every transaction) its
# advisory lock: the session holds the worker's entry but none of its locks.
# When the registry leases the same block to the server again, the session
# must not take the same worker a second time: before the fix its list had
# two entries for it, the bookkeeping released the locks of the one it
# issued under, and it issued under a worker it held no lock on, while
# another session claimed the same worker (the nemesis, seed 41: 1,499
# duplicates inside one database; docs/evidence.md).
#
# Worker bits 1 and blocks of one worker: the fleet has one block, so the
# registry can only lease block 1 again.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '3s', max_borrow => '1s', conf => \@borrow);
$registry->safe_psql('registry', 'SELECT uid_configure(worker_bits => 1, seq_bits => 9)');
$registry->safe_psql('registry', 'SELECT uid_registry_configure(block_size => 1)');
my $m1 = new_member_node('m1', $registry, conf => \@borrow);
wait_for_registry($m1);
$m1->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');

my $s1 = $m1->background_psql('postgres', on_error_stop => 0);
$s1->query_safe('INSERT INTO ids SELECT uid_next()');
is($s1->query_safe('SELECT uid_current_worker()'), '1', 's1 holds worker 1');
my $s1_pid = $s1->query_safe('SELECT pg_backend_pid()');

# The locks s1 holds on worker 1, of either kind.
sub s1_locks
{
	return $m1->safe_psql('postgres', qq{
		SELECT count(*) FROM pg_locks
		 WHERE pid = $s1_pid AND granted AND classid = 'uidgen.worker_node'::regclass AND objid = 1
		   AND ((locktype = 'object' AND objsubid = 0) OR (locktype = 'advisory' AND objsubid = 3))});
}
is(s1_locks(), '2', 's1 holds both locks of worker 1');

# Runs sql in s1 and returns its error, or '' when it succeeded.
sub s1_try
{
	my ($sql) = @_;
	$s1->{stderr} = '';
	my (undef, $ret) = $s1->query($sql);
	my $error = $ret == 0 ? '' : join('', $s1->{stderr} =~ /(ERROR:.*)/g);
	$s1->{stderr} = '';
	return $error;
}

# The registry is dropped and created again, and the database moves to it
# (the documented act for a registry lost for good, as the nemesis does): the server drops the old
# registry's block, so s1's next raise of its reservation fails, and its
# next command retires the worker and fails to register, since the new
# registry leases nothing until told that this is a new fleet.
$registry->safe_psql('registry', q{
	DROP EXTENSION uidgen CASCADE;
	CREATE EXTENSION uidgen;
	SELECT uid_configure(worker_bits => 1, seq_bits => 9);
	SELECT uid_registry_configure(lease_ttl => '3s', max_borrow => '1s', block_size => 1)});
$m1->safe_psql('postgres', 'SELECT uid_registry_move(old_registry_lost => true)');
my $error = '';
my $until = time + 60;
while (time < $until && $error !~ /has run out/)
{
	$error = s1_try('INSERT INTO ids SELECT uid_next()');
	select(undef, undef, undef, 0.05);
}
like($error, qr/lease of uidgen worker 1 has run out/, "s1's lease ran out: $error");
$error = s1_try('INSERT INTO ids SELECT uid_next()');
like($error, qr/registry/, "s1 retired worker 1 and could not register: $error");
s1_try('DISCARD ALL');
is(s1_locks(), '0', 'after the abort and DISCARD ALL, s1 holds no lock of its retired worker 1');

# The new registry leases block 1 to the server.  s1 tries until it issues
# or is refused for want of a worker.
$registry->safe_psql('registry', 'SELECT uid_registry_start_fleet()');
$until = time + 60;
do
{
	$error = s1_try('INSERT INTO ids SELECT uid_next()');
} while (time < $until && $error =~ /no answer|hands out no|lease of uidgen worker/);
my $s1_worker = $s1->query_safe('SELECT uid_current_worker()');
note("s1 after the registry came back: " . ($error eq '' ? "issued under worker $s1_worker" : $error));
if ($error eq '')
{
	is(s1_locks(), '2', "s1 issued under worker $s1_worker again: only while it holds both of its locks");
}
else
{
	is($s1_worker, '', "s1 did not take its retired worker 1 again (it was refused: $error)");
}

# s1 ends, releasing the worker it retired at the last unit it issued
# under it; another session reuses the worker above that, and issues.
$s1->quit;

# s2 will reuse worker 1 under the new lease of block 1, whose floor is
# above the last unit s1 issued under it (the worker's row notes that one,
# at s1's exit).  m1's clock steps back between the two: the reused worker
# must issue nothing at or below its lease's floor, under which another
# server may have issued since (before: its floor was the row's, and it
# issued there; INV-10, INV-17).  The step is uidgen.debug_clock_offset.
is($m1->safe_psql('postgres', 'SELECT unit FROM uidgen.config'), 'millisecond', 'a unit is a millisecond');
my $lease_floor = $registry->safe_psql('registry', q{
	SELECT h.floor_delta FROM uidgen.worker_block b JOIN uidgen.worker_block_lease h USING (block, lease_id)
	 WHERE b.block = 1});
# An ID's unit is id >> 10 under worker_bits 1 and seq_bits 9.
my $s1_last = $m1->safe_psql('postgres', 'SELECT max(id >> 10) FROM ids');
cmp_ok($lease_floor - $s1_last, '>', 10, "the new lease's floor is above s1's last unit");
my $now_unit = $m1->safe_psql('postgres', 'SELECT uid_min(clock_timestamp()) >> 10');
my $offset = int(($s1_last + $lease_floor) / 2) - $now_unit;
$m1->append_conf('postgresql.conf', "uidgen.debug_clock_offset = '${offset}ms'\n");
$m1->reload;
my $s2 = $m1->background_psql('postgres', on_error_stop => 0);
$until = time + 10;
my $stepped_errors = '';
while (time < $until && $s2->query_safe('SELECT uid_current_worker()') eq '')
{
	my (undef, $ret) = $s2->query('INSERT INTO ids SELECT uid_next() FROM generate_series(1, 200)');
	$stepped_errors .= join('', $s2->{stderr} =~ /(ERROR:.*\n)/g) if $ret != 0;
	$s2->{stderr} = '';
	select(undef, undef, undef, 0.05);
}
note("s2 with m1's clock stepped back by ${offset} ms: errors:\n$stepped_errors");
ok($stepped_errors ne '' || $m1->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id >> 10 > $s1_last") > 0,
	"the step reached s2's backend (it issued or erred)");
is($m1->safe_psql('postgres', "SELECT count(*) FROM ids WHERE id >> 10 > $s1_last AND id >> 10 <= $lease_floor"),
	'0', "the reused worker issued nothing at or below its lease's floor");
$m1->append_conf('postgresql.conf', "uidgen.debug_clock_offset = '0'\n");
$m1->reload;
$s2->quit;
$s2 = $m1->background_psql('postgres', on_error_stop => 0);
$until = time + 90;
my $s2_ok = 0;
while (time < $until && !$s2_ok)
{
	my (undef, $ret) = $s2->query('INSERT INTO ids SELECT uid_next() FROM generate_series(1, 2000)');
	$s2_ok = $ret == 0;
	$s2->{stderr} = '';
	select(undef, undef, undef, 0.2) unless $s2_ok;
}
ok($s2_ok, 's2 issues under worker ' . $s2->query_safe('SELECT uid_current_worker()') . ' once s1 has ended');
$s2->quit;
is($m1->safe_psql('postgres', 'SELECT count(*) - count(DISTINCT id) FROM ids'), '0', 'no ID was issued twice');

done_testing();

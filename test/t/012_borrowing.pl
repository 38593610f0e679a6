# Borrowed time: a burst far above 2^s IDs per unit runs ahead of the clock,
# but never by more than uidgen.max_borrow, and decoded times return to the
# wall clock once the burst is over.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('borrowing', conf => ["uidgen.max_borrow = '500ms'"]);
# 64 IDs per millisecond: a burst of 200,000 needs 3.1 s of time units.
$node->safe_psql('postgres', 'SELECT uid_configure(41, 16, 6)');

my $ahead_ms = $node->safe_psql('postgres', q{
	SELECT round(extract(epoch FROM max(uid_timestamp(u)) - clock_timestamp()) * 1000)
	  FROM uid_next_batch(200000) u});
cmp_ok($ahead_ms, '>', 100, "a burst borrowed time: the last ID is $ahead_ms ms ahead of the clock");
cmp_ok($ahead_ms, '<=', 501, 'but never more than max_borrow (500 ms) ahead');

# Every ID of a burst within the bound, measured as it is issued.
is($node->safe_psql('postgres', q{
	SELECT bool_and(uid_timestamp(u) <= clock_timestamp() + interval '501 ms')
	  FROM uid_next_batch(100000) u}), 't', 'each ID within max_borrow of the clock when issued');

# Idle until the clock has passed the burst's last unit (at most max_borrow:
# pg_sleep never returns early):
# the next ID is back on the wall clock, between the clock readings just
# before and just after it (a reading on each side, so that a busy machine
# pausing the session between them does not count as drift).
my $drift = $node->safe_psql('postgres', q{
	SELECT max(uid_timestamp(u)) AS burst_end FROM uid_next_batch(100000) u \gset
	SELECT pg_sleep(greatest(0, extract(epoch FROM :'burst_end'::timestamptz + interval '2 ms' - clock_timestamp())));
	SELECT clock_timestamp() AS before_id \gset
	SELECT uid_timestamp(uid_next()) AS id_time \gset
	SELECT clock_timestamp() AS after_id \gset
	SELECT round(1000 * greatest(0, extract(epoch FROM :'before_id'::timestamptz - :'id_time'::timestamptz),
	                                extract(epoch FROM :'id_time'::timestamptz - :'after_id'::timestamptz)))});
$drift = (split /\n/, $drift)[-1];
cmp_ok($drift, '<=', 5, "after the burst, decoded time is back on the wall clock ($drift ms off)");

# The default generator never borrows: it waits at a unit's end.  Once no
# session holds a worker and every released one's last unit is in the past
# (the burst sessions borrowed up to max_borrow ahead):
$node->poll_query_until('postgres', q{
	SELECT count(*) FILTER (WHERE status = 'active') = 0
	   AND coalesce(max(last_time), -1) < (SELECT uid_min(clock_timestamp()) >> (worker_bits + seq_bits) FROM uid_layout())
	  FROM uidgen.worker_node})
  or die 'the borrowed time did not run out: ' . worker_rows($node);
is($node->safe_psql('postgres', q{
	SET uidgen.generator = 'default';
	SELECT bool_and(uid_timestamp(u) <= clock_timestamp()) FROM uid_next_batch(20000) u}),
	't', 'default generator: never ahead of the clock');

$node->stop;
done_testing();

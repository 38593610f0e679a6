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

# Idle for longer than the bound: the next ID is back on the wall clock.
my $drift = $node->safe_psql('postgres', q{
	SELECT uid_next_batch(100000) IS NULL;
	SELECT pg_sleep(0.7);
	SELECT abs(round(extract(epoch FROM uid_timestamp(uid_next()) - clock_timestamp()) * 1000))});
$drift = (split /\n/, $drift)[-1];
cmp_ok($drift, '<=', 5, "after the burst, decoded time is back on the wall clock ($drift ms off)");

# The default generator never borrows: it waits at a unit's end.
is($node->safe_psql('postgres', q{
	SET uidgen.generator = 'default';
	SELECT pg_sleep(0.6);
	SELECT bool_and(uid_timestamp(u) <= clock_timestamp()) FROM uid_next_batch(20000) u}),
	"\nt", 'default generator: never ahead of the clock');

$node->stop;
done_testing();

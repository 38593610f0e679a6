# A member's clock steps far ahead for a moment (issue 20, item 1: clocks
# decide liveness only).  While it is ahead, a lease's ceiling stops every
# ID, but nothing durable may take the clock's word for how far this
# database issued: not a database's join floor, not its time reservation
# raised by a keeper that starts during the step.  Else, once the clock is
# right again, the database issues nothing until the fleet's time passes
# the clock's mistake, an hour here (the nemesis met it, seed 151: a floor
# 50 minutes ahead, raised further by every join and move since).  Nor
# may a keeper that runs across the step go on with a cursor a backend
# moved an hour ahead, or raise the reservation to its lease's cap because
# its own clock is past it (database postgres).  The step is
# uidgen.debug_clock_offset, which every process reads.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# A lease TTL of 5 minutes: a young life's leases last 30 s, so a lease's
# cap is some 40 s ahead of the clock, and a reservation raised to the cap
# stands out from one the clock raised (15 s ahead).
my $registry = new_registry_node('registry', member => 0, lease_ttl => '5min');
my $m = new_member_node('m', $registry, conf => [ "uidgen.scope = 'server'" ]);
wait_for_registry($m);
$m->safe_psql('postgres', 'CREATE DATABASE late');
$m->safe_psql('postgres', 'CREATE DATABASE kept');
$m->safe_psql('late', 'CREATE EXTENSION uidgen');
$m->safe_psql('kept', 'CREATE EXTENSION uidgen');
like($m->safe_psql('kept', 'SELECT uid_next()'), qr/^\d+$/, 'database kept issues before the step');
like($m->safe_psql('postgres', 'SELECT uid_next()'), qr/^\d+$/, 'so does database postgres, whose keeper goes on across the step');

# The time unit of the real clock, in database db.
sub now_unit
{
	my ($db) = @_;
	return $m->safe_psql($db, q{SELECT ((extract(epoch FROM clock_timestamp()) - extract(epoch FROM epoch)) * 1000)::bigint
		/ CASE unit WHEN 'second' THEN 1000 ELSE 1 END FROM uidgen.config});
}

# Whether database db issues an ID within seconds (each try bounded: a
# generator whose floor is ahead of the clock sleeps until the clock nears it).
sub issues_within
{
	my ($db, $seconds) = @_;
	my $deadline = time + $seconds;
	while (time < $deadline)
	{
		my ($ret, $out) = $m->psql($db, "SET statement_timeout = '5s'; SELECT uid_next() > 0");
		return 1 if $ret == 0 && $out eq 't';
		select(undef, undef, undef, 0.2);
	}
	return 0;
}

# The step: an hour ahead, seen by a new session (its error names it).
$m->append_conf('postgresql.conf', "uidgen.debug_clock_offset = '1h'\n");
$m->reload;
$m->poll_query_until('postgres', q{SELECT current_setting('uidgen.debug_clock_offset') = '1h'})
  or die 'the offset did not reach the sessions';

# Database late's first ID: its join; and database kept's keeper, ended,
# is started again during the step.
my ($ret, $out, $err) = $m->psql('late', 'SELECT uid_next()');
like($err, qr/past the ceiling of its uidgen lease/, 'during the step, the first ID of database late is refused: past the ceiling');
$m->safe_psql('kept', q{SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE backend_type = 'uidgen keeper' AND datname = 'kept'});
$m->poll_query_until('kept', q{SELECT NOT EXISTS (SELECT FROM pg_stat_activity WHERE backend_type = 'uidgen keeper' AND datname = 'kept')})
  or die 'the keeper of database kept did not end';
($ret, $out, $err) = $m->psql('kept', 'SELECT uid_next()');
like($err, qr/past the ceiling of its uidgen lease/, 'and so is an ID of database kept, from a new keeper');
($ret, $out, $err) = $m->psql('postgres', 'SELECT uid_next()');
isnt($ret, 0, 'and an ID of database postgres, from its keeper of before the step');

# The clock is right again.
$m->append_conf('postgresql.conf', "uidgen.debug_clock_offset = 0\n");
$m->reload;
$m->poll_query_until('postgres', q{SELECT current_setting('uidgen.debug_clock_offset') = '0'})
  or die 'the offset did not go';

# First every database's floor and reservation, at once: a reservation
# raised to a lease's cap while the clock was ahead would be overtaken by
# the clock within a minute.
for my $db ('late', 'kept', 'postgres')
{
	my $now = now_unit($db);
	my $floor = $m->safe_psql($db, 'SELECT coalesce(max(join_floor), -1) FROM uidgen.membership');
	cmp_ok($floor, '<', $now + 30000, "database $db: its join floor ($floor) is not ahead of the clock ($now)");
	my $mark = $m->safe_psql($db, 'SELECT last_value FROM uidgen.reserved_until');
	cmp_ok($mark, '<', $now + 30000, "database $db: its time reservation ($mark) is not ahead of the clock by more than a raise");
}
ok(issues_within($_, 30), "database $_ issues again within 30 s") for ('late', 'kept', 'postgres');

done_testing();

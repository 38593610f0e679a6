# A failover of the registry to its synchronous standby, as an operator sets
# it up: each member's uidgen.registry names both servers, with
# target_session_attrs=read-write, and the standby is promoted once the
# primary is gone.  What it costs (the availability table in
# docs/reference.md):
# - a member that holds leases issues throughout: the outage is shorter than
#   five sixths of a lease, and its agent reaches the promoted standby by the
#   same text (the same registry identity): 0 failed statements, the same
#   blocks;
# - the promoted registry, on a new timeline, cannot tell whether it lost
#   state (an asynchronous standby may have), so it quarantines new leases
#   for the lease TTL + max_borrow + the clock bound from its first call;
#   the member shows the quarantine's end;
# - a member that joins in it leases its first block within seconds of its end.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use UidgenTest;

my $ttl = 20;
my @borrow = ("uidgen.max_borrow = '1s'");
my $primary = new_registry_node('registry', member => 0, lease_ttl => "${ttl}s", max_borrow => '1s',
	conf => \@borrow, init => { allows_streaming => 1 });
my $standby = new_streaming_standby($primary, 'registry_standby');
# Synchronous: a lease is on the standby before the member uses it (ASM-1).
$primary->append_conf('postgresql.conf', "synchronous_standby_names = 'registry_standby'\n");
$primary->reload;
$primary->poll_query_until('postgres', q{SELECT count(*) = 1 FROM pg_stat_replication WHERE sync_state = 'sync'})
  or die 'the standby is not synchronous';

# Both servers in one connection string: libpq takes the one that accepts writes.
my $both = sprintf("host=%s,%s port=%d,%d dbname=registry target_session_attrs=read-write",
	$primary->host, $standby->host, $primary->port, $standby->port);
my @member_conf = ("shared_preload_libraries = 'uidgen'", "uidgen.registry = '$both'", @borrow);
my $member = new_uidgen_node('member', conf => \@member_conf);
wait_for_registry($member);
my $late = new_uidgen_node('late', conf => [ "shared_preload_libraries = 'uidgen'", @borrow ]);

$member->safe_psql('postgres', q{
	CREATE TABLE ids (id bigint, source text);
	CREATE TABLE failures (at timestamptz, source text, sqlstate text, message text);
	CREATE TABLE stop (stop bool)});
my @loops = map { start_recording_writer($member, $_) } 'a', 'b';
my $blocks = held_blocks($member);
my $registry_id = $primary->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity');

# ---- the failover ---------------------------------------------------------------

my $t0 = Time::HiRes::time();
$primary->stop('immediate');
$standby->promote;
$standby->poll_query_until('registry', 'SELECT NOT pg_is_in_recovery()') or die 'the standby was not promoted';
my $t1 = Time::HiRes::time();
note(sprintf('the primary was stopped and the standby promoted in %.1f s', $t1 - $t0));

ok(poll_for($member, 60, 'SELECT bool_and(quarantine_until IS NOT NULL) FROM uidgen.registry_status'),
	'the member reaches the promoted standby and learns its quarantine');
my $until = $member->safe_psql('postgres', 'SELECT DISTINCT quarantine_until FROM uidgen.registry_status');
is($standby->safe_psql('registry', "SELECT uid_registry_quarantine_until() = '$until'::timestamptz"), 't',
	"the promoted registry shows the same end ($until)");
# The quarantine counts from the first call that notices the promotion: the member's, within
# 5 s of retries and a round (up to 10 s on a loaded machine) of it.
my $window = $standby->safe_psql('registry',
	"SELECT extract(epoch FROM '$until'::timestamptz - to_timestamp($t1))::numeric(8,1)");
my $bound = $standby->safe_psql('registry', 'SELECT extract(epoch FROM uidgen.registry_holder_bound())');
cmp_ok($window, '<=', $bound + 15, "no new lease for $window s after the promotion (bound $bound s + a member's call)");
note("a registry failover: no new block for $window s after the promotion (TTL + max_borrow + clock bound: $bound s)");
is($standby->safe_psql('registry', 'SELECT registry_id FROM uidgen.registry_identity'), $registry_id,
	'the promoted standby is the same registry identity');

# A member that joins in the quarantine gets its first block after it.
$late->append_conf('postgresql.conf', "uidgen.registry = '$both'\n");
$late->reload;
wait_for_registry($late);
my $late_wait = first_lease_after($standby, $late, $until);
cmp_ok($late_wait, '>=', 0, "a member that joined in the quarantine leased its first block after its end");
# Refused all along, its agent retries at most every 5 s: within 5 s and a round (up to 10 s
# on a loaded machine, as in test 087).
cmp_ok($late_wait, '<', 15, "within 5 s and a round of it ($late_wait s)");
my $late_ids = $late->safe_psql('postgres', 'SELECT uid_next() FROM generate_series(1, 1000)');

# The member issued all along.
my $before = $member->safe_psql('postgres', 'SELECT count(*) FROM ids');
$member->poll_query_until('postgres', "SELECT count(*) > $before FROM ids") or die 'the member stopped issuing';
$member->safe_psql('postgres', 'INSERT INTO stop VALUES (true)');
finish_sql_loops(@loops);
is(recorded_failures($member), '', 'no statement of the member failed across the failover and the quarantine');
note('a registry failover: 0 failed statements on a member that holds leases');
is(held_blocks($member), $blocks, 'the member holds the blocks it held before the failover');
is(duplicate_ids($member->safe_psql('postgres', 'SELECT id FROM ids'), $late_ids), 0, 'no ID was issued twice');

done_testing();

# A registry restart that lost nothing cannot be told from one that lost
# state (docs/design.md, the registry), so it quarantines new leases for the
# lease TTL + max_borrow + the clock bound (issue 34, item 5).  What the
# quarantine costs, and that everyone sees its end:
# - a member that holds leases goes on issuing through it (its leases renew):
#   0 failed statements, the same blocks;
# - its uidgen.registry_status shows the quarantine's end, the one the
#   registry's uid_registry_quarantine_until() shows its operators;
# - a member that joins in it gets no block until it ends, and sees why;
# - once it ends, both show NULL and the new member issues.
#
# Before registry_status had quarantine_until, a member showed the end only
# in the text of an error, and only when it needed a new block.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use Time::HiRes ();
use UidgenTest;

my $ttl = 20;
my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => "${ttl}s", max_borrow => '1s',
	conf => \@borrow);
my $member = new_member_node('member', $registry, conf => \@borrow);
wait_for_registry($member);
# A server that becomes a member in the quarantine (set up now: a new node
# takes seconds on a loaded machine).
my $late = new_uidgen_node('late', conf => [ "shared_preload_libraries = 'uidgen'", @borrow ]);

is($member->safe_psql('postgres', 'SELECT count(*) FROM uidgen.registry_status WHERE quarantine_until IS NOT NULL'),
	'0', 'before the restart the member shows no quarantine');
is($registry->safe_psql('registry', 'SELECT uid_registry_quarantine_until() IS NULL'), 't',
	'before the restart the registry shows none');

# Two sessions issue all along; a failure is written down and the session
# goes on.
$member->safe_psql('postgres', q{
	CREATE TABLE ids (id bigint, source text);
	CREATE TABLE failures (at timestamptz, source text, sqlstate text, message text);
	CREATE TABLE stop (stop bool)});
my @loops = map { start_recording_writer($member, $_) } 'a', 'b';
my $blocks = held_blocks($member);

# ---- the restart --------------------------------------------------------------

$registry->restart;
my $restarted = $registry->safe_psql('registry', 'SELECT pg_postmaster_start_time()');
my $until = $registry->safe_psql('registry', 'SELECT uid_registry_quarantine_until()');
isnt($until, '', "the registry shows its quarantine's end at once ($until)");
my $window = $registry->safe_psql('registry', "SELECT extract(epoch FROM '$until'::timestamptz - '$restarted')::numeric(8,1)");
my $bound = $registry->safe_psql('registry', 'SELECT extract(epoch FROM uidgen.registry_holder_bound())');
cmp_ok($window, '<=', $bound + 5, "it ends within the lease TTL + max_borrow + the clock bound ($bound s) of the restart");
note("a registry restart: no new block for $window s (TTL + max_borrow + clock bound: $bound s)");

ok(poll_for($member, 60, 'SELECT bool_and(quarantine_until IS NOT NULL) FROM uidgen.registry_status'),
	"the member learns the quarantine's end from its renewals");
my $seen = $member->safe_psql('postgres', 'SELECT DISTINCT quarantine_until FROM uidgen.registry_status');
is($registry->safe_psql('registry', "SELECT uid_registry_quarantine_until() = '$seen'::timestamptz"), 't',
	"the member's quarantine_until ($seen) is the registry's");

# A member that joins now: no block until the quarantine ends, and it shows
# why and until when.
$late->append_conf('postgresql.conf', join("\n", registry_conf($registry), @borrow) . "\n");
$late->reload;
ok(poll_for($late, 60, q{SELECT bool_and(error LIKE '%hands out no worker block until%' AND quarantine_until IS NOT NULL
                                  AND block IS NULL) FROM uidgen.registry_status}),
	'a member that joins in the quarantine gets no block, and shows why');
is($registry->safe_psql('registry', "SELECT '$seen'::timestamptz = "
	  . "'" . $late->safe_psql('postgres', 'SELECT DISTINCT quarantine_until FROM uidgen.registry_status') . "'::timestamptz"),
	't', 'it shows the same end');

# The quarantine passes; the member renews all along and issues.
my $before = $member->safe_psql('postgres', 'SELECT count(*) FROM ids');
wait_for_clock_past($registry, $until, '0 s');
$member->poll_query_until('postgres', "SELECT count(*) > $before FROM ids")
  or die 'the member issued nothing in the quarantine';
ok(poll_for($member, 60, 'SELECT bool_and(quarantine_until IS NULL) FROM uidgen.registry_status'),
	'after its end the member shows no quarantine');
is($registry->safe_psql('registry', 'SELECT uid_registry_quarantine_until() IS NULL'), 't',
	'nor does the registry');
wait_for_registry($late);
my $late_wait = first_lease_after($registry, $late, $until);
# Its agent, refused all along, retries at most every 5 s (retry_max_ms: no session waits for
# a worker), so its first lease comes within 5 s of the end and one round: a second here, and
# up to 10 s on a loaded machine, where a round's connection and calls wait for a core.
cmp_ok($late_wait, '<', 15, "the late member leases a block within 5 s and a round of the end ($late_wait s)");
note("a member that joined in the quarantine leased its first block $late_wait s after its end");
my $late_ids = $late->safe_psql('postgres', 'SELECT uid_next() FROM generate_series(1, 1000)');

$member->safe_psql('postgres', 'INSERT INTO stop VALUES (true)');
finish_sql_loops(@loops);
is(recorded_failures($member), '', 'no statement of the member failed across the restart and the quarantine');
note('a registry restart: 0 failed statements on a member that holds leases');
is(held_blocks($member), $blocks, 'the member holds the blocks it held before the restart');
is(duplicate_ids($member->safe_psql('postgres', 'SELECT id FROM ids'), $late_ids), 0, 'no ID was issued twice');

done_testing();

# A member role cannot quarantine the registry with a made-up counter
# witness (issue 32, item 5's isolation of member roles).  Every rules
# reply carries the registry's counter and the registry's proof of it, a
# digest with the registry's secret; the registry heeds a counter_seen only
# with its proof.  On the code before the proof, one call of
# registry_rules() with a made-up counter quarantined the registry for
# every member, for registry_holder_bound().  The witness itself still
# works: a registry whose counter goes back (here by setval(), as a
# file-level copy of the stopped server would have it) quarantines at the
# member's next rules call, which sends its counter with the proof.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '3s', max_borrow => '1s', conf => \@borrow);
my $intruder = new_member_role($registry, 'intruder');

my $member = new_member_node('member', $registry, conf => \@borrow);
$member->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
$member->safe_psql('postgres', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
ok($registry->poll_query_until('registry', 'SELECT uid_registry_quarantine_until() IS NULL'),
	'no quarantine before the intruder calls');

sub as_intruder { return psql_as($intruder, $_[0]); }

sub not_quarantined
{
	my ($what) = @_;
	is($registry->safe_psql('registry', 'SELECT uid_registry_quarantine_until() IS NULL'), 't',
		"$what does not quarantine the registry");
}

# A genuine reply, whose proof the intruder may replay.
my ($rc, undef, $reply) = as_intruder(q{SELECT counter || ' ' || counter_proof FROM uidgen.registry_rules(protocol => 1)});
is($rc, 0, 'a member role reads the rules');
my ($counter, $proof) = split / /, $reply;
like($proof, qr/^[0-9a-f]{64}$/, 'the reply carries a proof of its counter');

($rc) = as_intruder('SELECT counter FROM uidgen.registry_rules(protocol => 1, counter_seen => 4611686018427387903)');
is($rc, 0, 'a counter without a proof is no error');
not_quarantined('a made-up counter without a proof');

($rc) = as_intruder('SELECT counter FROM uidgen.registry_rules(protocol => 1, counter_seen => ' . ($counter + 1000)
	  . ", counter_seen_proof => '" . ('ab' x 32) . "')");
not_quarantined('a made-up counter with a made-up proof');

($rc) = as_intruder('SELECT counter FROM uidgen.registry_rules(protocol => 1, counter_seen => ' . ($counter + 1000)
	  . ", counter_seen_proof => '$proof')");
not_quarantined("a made-up counter with another counter's proof");

($rc) = as_intruder("SELECT counter FROM uidgen.registry_rules(protocol => 1, counter_seen => $counter, "
	  . "counter_seen_proof => '$proof')");
is($rc, 0, 'a genuine counter with its proof is taken');
not_quarantined('a replayed genuine counter, which the registry is past');

ok($registry->log_contains(
		"uidgen registry counter 4611686018427387903 sent by a member without this registry's proof is ignored"),
	'the registry logs a counter it ignores');

# The member goes on: new databases take workers, which needs new leases.
for my $n (1 .. 3)
{
	$member->safe_psql('postgres', "CREATE DATABASE d$n");
	$member->safe_psql("d$n", 'CREATE EXTENSION uidgen');
	my ($r, $o, $e) = $member->psql("d$n", 'SELECT uid_next()');
	is($r, 0, "new database d$n of the member issues after the intruder's calls") or diag($e);
}

# The witness with its proof: the registry's counter goes back below what
# the member saw, and the member's next rules call quarantines it.
# The quarantine lasts registry_holder_bound() (5 s here), which a loaded
# machine can spend between two polls: its end is read as recorded, which
# stays, and must have moved.
my $seen = $registry->safe_psql('registry', 'SELECT last_value FROM uidgen.registry_counter');
my $recorded = $registry->safe_psql('registry',
	q{SELECT coalesce(quarantine_until, '-infinity') FROM uidgen.registry_state});
$registry->safe_psql('registry', "SELECT setval('uidgen.registry_counter', greatest(1, $seen - 500))");
ok($registry->poll_query_until('registry',
		"SELECT quarantine_until > '$recorded'::timestamptz FROM uidgen.registry_state"),
	"the member's counter with its proof still quarantines a registry that went back");
ok($registry->log_contains('is behind the \d+ a member saw: this registry went back'),
	'the registry logs that it went back');

done_testing();

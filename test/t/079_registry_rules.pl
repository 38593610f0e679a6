# A registry's rules are checked against each other when they are set: a
# lease TTL too short for members to keep a worker granted (they grant a
# worker only from a lease with a second left, and renew a lease within the
# agent's one-second tick once a sixth of it has passed; the registry renews
# only a lease whose ceiling is more than the clock bound ahead) is refused
# with the smallest TTL that works; and that TTL, set, keeps a member issuing
# for many leases, old sessions and new ones alike.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $registry = new_registry_node('registry', lease_ttl => '30s');
wait_for_registry($registry);

# ---- refused, naming the smallest TTL that works ------------------------------

my $err = psql_error($registry, 'registry', "SELECT uid_registry_configure(lease_ttl => '1 s')");
like($err, qr/ERROR:  22023: lease_ttl 00:00:01 is too short to keep a uidgen worker granted/,
	'a TTL of 1 s is refused: 22023');
my ($smallest) = $err =~ /The smallest lease_ttl that works with these rules is ([0-9:.]+)\./;
is($smallest, '00:00:02', 'and the error names the smallest TTL that works: 2 s at the default rules');
is($registry->safe_psql('registry', 'SELECT lease_ttl FROM uidgen.registry_config'), '00:00:30',
	'the rules are unchanged');

# The clock bound enters when max_borrow is shorter than it.
$err = psql_error($registry, 'registry', "SELECT uid_registry_configure(max_borrow => '0', max_clock_skew => '1 s', lease_ttl => '2 s')");
like($err, qr/ERROR:  22023: .*smallest lease_ttl that works with these rules is 00:00:02\.4\d*\./s,
	'with max_borrow 0 and a clock bound of 1 s, 2 s is refused and about 2.4 s named');
# The TTL shortened from 30 s to 2 s while a lease of 30 s is held: the
# renewal under the new rules, which ends the lease sooner, lowers neither
# the ceiling nor reusable_after the registry recorded for the block under
# the old ones (leases.pml, RULES_LOWER_CEILING).
$registry->safe_psql('registry',
	q{CREATE TABLE rules_before AS SELECT block, lease_expires_at, ceiling_delta, reusable_after FROM uidgen.worker_block});
$registry->safe_psql('registry', "SELECT uid_registry_configure(lease_ttl => '2 s')");
$registry->poll_query_until('registry', q{
	SELECT count(*) > 0 FROM rules_before b JOIN uidgen.worker_block w USING (block)
	 WHERE w.lease_expires_at < b.lease_expires_at})
  or die 'no lease was renewed under the shorter TTL';
is($registry->safe_psql('registry', q{
	SELECT count(*) FROM rules_before b JOIN uidgen.worker_block w USING (block)
	 WHERE w.ceiling_delta < b.ceiling_delta OR w.reusable_after < b.reusable_after}),
	'0', 'a lease renewed under a shorter TTL keeps the ceiling and reusable_after recorded under the longer one');
# A change of another rule is checked against the TTL that stands.
$err = psql_error($registry, 'registry', "SELECT uid_registry_configure(max_borrow => '0')");
like($err, qr/ERROR:  22023: lease_ttl 00:00:02 is too short/, 'so is a max_borrow that the standing TTL cannot keep up with');
is($registry->safe_psql('registry', 'SELECT max_borrow FROM uidgen.registry_config'), '00:00:10',
	'max_borrow is unchanged');

# ---- the smallest, set, keeps issuing ---------------------------------------

$registry->safe_psql('registry', "SELECT uid_registry_configure(lease_ttl => '$smallest')");
$registry->safe_psql('postgres', 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next())');
$registry->poll_query_until('postgres',
	q{SELECT bool_and(lease_left_ms <= 2000) FROM uidgen.registry_status WHERE block IS NOT NULL})
  or die 'the member never held a lease of the new TTL';

# One session issues for 20 s, ten TTLs; new sessions claim meanwhile.
my ($out, $errout) = ('', '');
my $loop = IPC::Run::start([ 'psql', '-X', '-v', 'ON_ERROR_STOP=1', '-d', $registry->connstr('postgres'), '-c', q{
	DO $$ DECLARE t0 timestamptz := clock_timestamp();
	BEGIN
		WHILE clock_timestamp() < t0 + interval '20 s' LOOP
			INSERT INTO t SELECT FROM generate_series(1, 50);
			COMMIT;
			PERFORM pg_sleep(0.01);
		END LOOP;
	END $$} ], '>', \$out, '2>', \$errout);
my $new_ok = 0;
my $new_first_error = '';
for (1 .. 20)
{
	my ($o, $e);
	my $ret = $registry->psql('postgres', 'INSERT INTO t SELECT FROM generate_series(1, 10)', stdout => \$o, stderr => \$e);
	$ret == 0 ? $new_ok++ : ($new_first_error ||= $e);
	sleep 1;
}
ok($loop->finish, "a session issued for 20 s under leases of $smallest without an error") or diag($errout);
is($new_ok, 20, '20 new sessions, one a second, each issued') or diag($new_first_error);
is($registry->safe_psql('postgres', 'SELECT count(*) = count(DISTINCT id) FROM t'), 't', 'no ID twice');

$registry->stop;
done_testing();

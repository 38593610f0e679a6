# A major-version upgrade by logical replication (issue 32, item 1): the
# publisher is the old server, the subscriber the new one, and uidgen's
# tables stay empty on the subscriber by design (INV-21), so its workers are
# numbered from 1 as the publisher's were.  Without a cutover step the
# subscriber issues, at its clock, IDs the publisher issued ahead of its own
# (borrowing): the hazard, shown in database hazard.  The cutover step:
# uid_reach() on the publisher once its writes stopped, uid_adopt_reach()
# on the subscriber before its first ID; then no ID repeats (database
# cutover).  No registry: a subscriber that is a member is a new server
# life whose workers come from fresh grants (reference.md).
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# Two IDs a millisecond: 100,000 IDs in one statement borrow about 50 s ahead.
my $layout = "41, 13, 1, '2026-01-01+00', 'millisecond'";
my $count = 100000;
my @conf = ("uidgen.max_borrow = '1h'");
my $pub = new_uidgen_node('publisher', init => { allows_streaming => 'logical' }, conf => \@conf);
my $sub = new_uidgen_node('subscriber', conf => \@conf);
$pub->safe_psql('postgres', "SELECT uid_configure($layout); CREATE TABLE events (id bigint DEFAULT uid_next(), phase int)");
$pub->safe_psql('postgres', 'CREATE PUBLICATION p FOR ALL TABLES');
my $pub_connstr = $pub->connstr . ' dbname=postgres';
for my $db ('cutover', 'hazard')
{
	$sub->safe_psql('postgres', "CREATE DATABASE $db");
	$sub->safe_psql($db, "CREATE EXTENSION uidgen; SELECT uid_configure($layout); CREATE TABLE events (id bigint DEFAULT uid_next(), phase int)");
	$sub->safe_psql($db, "CREATE SUBSCRIPTION s_$db CONNECTION '$pub_connstr' PUBLICATION p");
	$sub->poll_query_until($db, q{SELECT count(*) > 0 AND bool_and(srsubstate IN ('r', 's')) FROM pg_subscription_rel})
	  or die "$db: the subscription's initial copy did not finish";
}

# The publisher issues, far ahead of its clock; then its writes stop.
$pub->safe_psql('postgres', "INSERT INTO events (phase) SELECT 1 FROM generate_series(1, $count)");
my $ahead = $pub->safe_psql('postgres', 'SELECT extract(epoch FROM uid_timestamp(max(id)) - clock_timestamp()) > 20 FROM events');
is($ahead, 't', 'the publisher issued more than 20 s ahead of its clock');
my $reach = $pub->safe_psql('postgres', 'SELECT uid_reach()');
is($pub->safe_psql('postgres', "SELECT max(id) <= $reach FROM events"), 't', "the publisher's reach $reach covers its IDs");
$pub->wait_for_catchup("s_$_") for 'cutover', 'hazard';

# The hazard: the subscriber issues at once, with no cutover step.
$sub->safe_psql('hazard', "DROP SUBSCRIPTION s_hazard; INSERT INTO events (phase) SELECT 2 FROM generate_series(1, $count)");
my $hazard = $sub->safe_psql('hazard', 'SELECT count(*) - count(DISTINCT id) FROM events');
cmp_ok($hazard, '>', 0, "without the cutover step the subscriber issued $hazard of the publisher's IDs again");

# The cutover step, refused where it would not hold.
like(psql_error($sub, 'cutover', "SELECT uid_adopt_reach(uid_max(now() + interval '1 day'))"),
	qr/ERROR:  22023: reach \d+ lies \d+ ms ahead of this server's clock under layout/,
	'a reach far ahead of the clock (another layout) is refused: 22023');
like(psql_error($sub, 'hazard', "SELECT uid_next(); SELECT uid_adopt_reach($reach)"),
	qr/ERROR:  55006: cannot adopt a reach in a session that holds a uidgen worker/,
	'a session that holds a worker cannot adopt a reach: 55006');
is($sub->safe_psql('cutover', "SELECT uid_adopt_reach($reach)"), $reach, 'the subscriber adopted the reach');
is($sub->safe_psql('cutover', 'SELECT uid_adopt_reach(1)'), $reach, 'a lower reach never lowers the floor');
$sub->safe_psql('cutover', "DROP SUBSCRIPTION s_cutover; INSERT INTO events (phase) SELECT 2 FROM generate_series(1, $count)");
is($sub->safe_psql('cutover', 'SELECT count(*), count(*) - count(DISTINCT id) FROM events'), (2 * $count) . '|0',
	'after the cutover step the subscriber issued none of the publisher\'s IDs');
is($sub->safe_psql('cutover', "SELECT min(id) > $reach FROM events WHERE phase = 2"), 't',
	'every ID the subscriber issued lies above the reach');

done_testing();

# ALTER EXTENSION uidgen UPDATE from every released version, with live data:
# a table keyed by DEFAULT uid_next(), a session holding a registered worker
# through the update, and new sessions after it.  No ID may repeat, and the
# update brings what the new version adds (the time reservation; UUIDs,
# masks, blocks and uid_now() of 2.0.0), with the catalog of a fresh install.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('upgrade');
my $default = $node->safe_psql('postgres',
	"SELECT default_version FROM pg_available_extensions WHERE name = 'uidgen'");
my @released = split /\n/, $node->safe_psql('postgres', q{
	SELECT version FROM pg_available_extension_versions
	 WHERE name = 'uidgen' AND version <> (SELECT default_version FROM pg_available_extensions WHERE name = 'uidgen')
	 ORDER BY string_to_array(version, '.')::int[]});
cmp_ok(scalar(@released), '>', 0, "released versions before $default: @released");

for my $version (@released)
{
	my $db = "from_" . ($version =~ s/\W/_/gr);
	$node->safe_psql('postgres', "CREATE DATABASE $db");
	$node->safe_psql($db, "CREATE EXTENSION uidgen VERSION '$version'");
	$node->safe_psql($db, 'CREATE TABLE t (id bigint PRIMARY KEY DEFAULT uid_next(), phase text)');

	# A session registered under the old version, with live IDs.
	my $old = $node->background_psql($db, on_error_stop => 0);
	$old->query("SET client_min_messages = error");
	$old->query_safe("INSERT INTO t (phase) SELECT 'before' FROM generate_series(1, 5000)");
	my $worker = $old->query_safe('SELECT uid_current_worker()');
	like($worker, qr/^\d+$/, "$version: a session holds worker $worker");

	# A library newer than SQL without the time reservation (1.0.0) says so once, and keeps working.
	my $predates_reservation =
	  $node->safe_psql($db, "SELECT to_regclass('uidgen.reserved_until') IS NULL") eq 't';
	my ($stdout, $stderr);
	$node->psql($db, 'SELECT uid_next() > 0', stdout => \$stdout, stderr => \$stderr);
	like($stderr, qr/SQL objects of extension "uidgen" are older than its library.*ALTER EXTENSION uidgen UPDATE/s,
		"$version: the new library warns that the SQL is old") if $predates_reservation;
	is($stderr, '', "$version: SQL with the reservation needs no warning") unless $predates_reservation;

	$node->safe_psql($db, 'ALTER EXTENSION uidgen UPDATE');
	is($node->safe_psql($db, "SELECT extversion FROM pg_extension WHERE extname = 'uidgen'"), $default,
		"$version: updated to $default");
	is($node->safe_psql($db, q{
		SELECT string_agg(proname || ' ' || provolatile::text, ', ' ORDER BY proname) FROM pg_proc
		 WHERE proname IN ('uid_min', 'uid_max', 'uid_interval', 'uid_safe_horizon')}),
		'uid_interval i, uid_max i, uid_min i, uid_safe_horizon v',
		"$version: uid_min(), uid_max() and uid_interval() are IMMUTABLE, uid_safe_horizon() is there");
	my $mark = $node->safe_psql($db, 'SELECT last_value FROM uidgen.reserved_until');
	my $known = $node->safe_psql($db, 'SELECT coalesce(max(last_time), -1) FROM uidgen.worker_node');
	cmp_ok($mark, '>=', $known, "$version: the reservation starts at the latest unit the worker table knew ($known)");

	# The session from before the update goes on under its worker, increasing.
	$old->query_safe("INSERT INTO t (phase) SELECT 'same session' FROM generate_series(1, 5000)");
	is($old->query_safe('SELECT uid_current_worker()'), $worker, "$version: the old session kept its worker");
	is($node->safe_psql($db, q{
		SELECT bool_and(a.id > b.max) FROM t a, (SELECT max(id) FROM t WHERE phase = 'before') b
		 WHERE a.phase = 'same session'}), 't', "$version: and its IDs went on increasing");

	# uid_safe_horizon() of the update stays below a transaction the old session holds open.
	my $held = $old->query_safe("BEGIN; INSERT INTO t (phase) VALUES ('held') RETURNING id");
	cmp_ok($node->safe_psql($db, 'SELECT uid_safe_horizon()'), '<', $held,
		"$version: the safe horizon stays below the open transaction of a session from before the update");
	$old->query_safe('COMMIT');

	# New sessions reserve time, and churn through the load client into the same table.
	$node->safe_psql($db, "INSERT INTO t (phase) SELECT 'new session' FROM generate_series(1, 1000)");
	is($node->safe_psql($db, q{
		SELECT last_value >= (SELECT max(id) >> 22 FROM t) FROM uidgen.reserved_until}), 't',
		"$version: a new session's IDs are covered by the reservation");
	my $dsn = $node->connstr($db);
	my ($code, $f) = run_load($node, '--dsn', $dsn, '--mode', 'churn', '--method', 'insert', '--table', 't',
		'--connections', '4', '--ids', '5000', '--per-connection', '100', '--fetch', '100');
	is($code, 0, "$version: churn after the update found nothing wrong");
	$old->quit;

	# What 2.0.0 adds for users works on the IDs issued before the update.
	is($node->safe_psql($db, q{
		SELECT bool_and(uuid_to_uid(uid_to_uuid(id)) = id) FROM t}), 't',
		"$version: uid_to_uuid() and uuid_to_uid() round-trip the IDs of before the update");
	$node->safe_psql($db, "SELECT uid_mask_key_create('public')");
	is($node->safe_psql($db, q{
		SELECT bool_and(uid_unmask(uid_mask(id, 'public'), 'public') = id) AND count(DISTINCT uid_mask(id, 'public')) = count(*)
		  FROM t}), 't', "$version: uid_mask() and uid_unmask() under a new key");
	$node->safe_psql($db, q{
		INSERT INTO t (id, phase) SELECT b + i, 'block' FROM (SELECT uid_next_block(50) AS b) x, generate_series(0, 49) i});
	cmp_ok($node->safe_psql($db, 'SELECT uid_now()'), '>=',
		$node->safe_psql($db, q{SELECT max(id) FROM t WHERE phase = 'new session'}),
		"$version: uid_now() is at or above what a session issued before");

	is($node->safe_psql($db, 'SELECT uid_reach() >= max(id) FROM t'), 't',
		"$version: uid_reach() covers every ID, those of before the update included");
	is($node->safe_psql($db, 'SELECT uid_registry_leave()'), 'f', "$version: a database that never joined leaves nothing");
	is($node->safe_psql($db, 'SELECT count(*) = count(DISTINCT id) AND count(*) = 31051 FROM t'), 't',
		"$version: every one of 31,051 IDs unique, a block of 50 among them");

	# The updated database is the same as a fresh one of the new version.  (A fresh
	# install runs the same update scripts today; this guards a full install
	# script of a later version against drifting from them.)
	$node->safe_psql('postgres', "CREATE DATABASE fresh_$db");
	$node->safe_psql("fresh_$db", 'CREATE EXTENSION uidgen');
	my $objects = q{
		SELECT pg_describe_object(classid, objid, objsubid) FROM pg_depend
		 WHERE refclassid = 'pg_extension'::regclass AND deptype = 'e'
		   AND refobjid = (SELECT oid FROM pg_extension WHERE extname = 'uidgen') ORDER BY 1};
	is($node->safe_psql($db, $objects), $node->safe_psql("fresh_$db", $objects),
		"$version: the updated extension has the objects of a fresh $default");
	# And the same signatures, markings, settings, privileges and comments.
	my $catalog = q{
		SELECT p.oid::regprocedure::text, pg_get_function_result(p.oid), p.provolatile, p.proisstrict,
		       p.proparallel, p.prosecdef, p.proconfig, p.proacl, obj_description(p.oid, 'pg_proc')
		  FROM pg_proc p
		  JOIN pg_depend d ON d.classid = 'pg_proc'::regclass AND d.objid = p.oid AND d.deptype = 'e'
		 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'uidgen')
		UNION ALL
		SELECT c.oid::regclass::text, c.relkind::text, NULL, NULL, NULL, NULL, c.reloptions, c.relacl,
		       obj_description(c.oid, 'pg_class')
		  FROM pg_class c
		  JOIN pg_depend d ON d.classid = 'pg_class'::regclass AND d.objid = c.oid AND d.deptype = 'e'
		 WHERE d.refobjid = (SELECT oid FROM pg_extension WHERE extname = 'uidgen')
		 ORDER BY 1};
	is($node->safe_psql($db, $catalog), $node->safe_psql("fresh_$db", $catalog),
		"$version: and the same function signatures, volatility, privileges and comments");
	like($node->safe_psql($db, $catalog),
		qr/uid_adopt_reach\(bigint\).*uid_mask\(bigint,text\).*uid_next_block\(integer\).*uid_now\(\).*uid_reach\(\).*uid_registry_leave\(\).*uid_to_uuid\(bigint\).*uuid_to_uid\(uuid\)/s,
		"$version: the update brought uid_adopt_reach, uid_mask, uid_next_block, uid_now, uid_reach, uid_registry_leave, uid_to_uuid and uuid_to_uid");
	like(psql_error($node, $db, "SELECT uid_registry_configure(lease_ttl => '1 s')"),
		qr/ERROR:  22023: lease_ttl 00:00:01 is too short.*HINT:  The smallest lease_ttl that works with these rules is 00:00:02\./s,
		"$version: the updated uid_registry_configure() checks the rules against each other");
	# Never started as a fleet's: it waits as a new registry does.
	is($node->safe_psql($db, q{SELECT uid_registry_quarantine_until() = i.created_at + uidgen.registry_holder_bound()
		AND NOT EXISTS (SELECT FROM uidgen.registry_status WHERE quarantine_until IS NOT NULL)
		FROM uidgen.registry_identity i}), 't',
		"$version: the update shows when a registry's wait or quarantine ends");
	# Moving a fleet: an updated database is a new registry, in its wait (it may replace a lost one),
	# which it cannot export; once started, it exports and refuses its own export.
	like(psql_error($node, $db, 'SELECT uid_registry_export(gen_random_uuid())'),
		qr/ERROR:  55000: cannot export uidgen registry [-0-9a-f]+ while it holds new leases back/,
		"$version: the updated database refuses an export during a new registry's wait");
	$node->safe_psql($db, 'SELECT uid_registry_start_fleet()');
	like(psql_error($node, $db, 'SELECT uid_registry_import(uid_registry_export(gen_random_uuid()))'),
		qr/ERROR:  22023: uidgen registry [-0-9a-f]+ cannot import its own export/,
		"$version: and once started, exports and refuses its own export");
	# The counter witness: the updated registry replies with its counter and its proof, and a
	# counter a member saw above it, with its proof (the registry went back), quarantines it and
	# moves its counter above.
	my $counter = $node->safe_psql($db, 'SELECT counter FROM uidgen.registry_rules(protocol => 1)');
	like($counter, qr/^\d+$/, "$version: the updated registry replies with its counter");
	is($node->safe_psql($db, "SELECT counter_proof = uidgen.registry_counter_proof(counter) "
		  . "FROM uidgen.registry_rules(protocol => 1)"), 't', "$version: and its proof");
	my $seen = $counter + 1000;
	is($node->safe_psql($db, "SELECT counter <= $seen FROM uidgen.registry_rules(protocol => 1, "
		  . "counter_seen => $seen, counter_seen_proof => uidgen.registry_counter_proof($seen))"), 't',
		"$version: a member that saw a higher counter sees it behind");
	isnt($node->safe_psql($db, 'SELECT uid_registry_quarantine_until()'), '',
		"$version: and the registry quarantines");
	cmp_ok($node->safe_psql($db, 'SELECT counter FROM uidgen.registry_rules(protocol => 1)'), '>', $seen,
		"$version: with its counter moved above");
	like(psql_error($node, $db, 'SELECT counter FROM uidgen.registry_rules(protocol => 1, counter_seen => -1)'),
		qr/ERROR:  22023: uidgen registry counter -1 is out of range/, "$version: a negative counter is refused");
	# A counter without the registry's proof is no witness: ignored, so that no member role moves
	# the counter or quarantines the registry with a made-up one (048).
	my $before = $node->safe_psql($db, 'SELECT counter FROM uidgen.registry_rules(protocol => 1)');
	cmp_ok($node->safe_psql($db, 'SELECT counter FROM uidgen.registry_rules(protocol => 1, '
		  . 'counter_seen => 4611686018427387904)'), '<', $before + 10,
		"$version: a counter without a proof is ignored");
	my $proof_of_before = $node->safe_psql($db, "SELECT uidgen.registry_counter_proof($before)");
	cmp_ok($node->safe_psql($db, 'SELECT counter FROM uidgen.registry_rules(protocol => 1, counter_seen => '
		  . ($before + 5000) . ", counter_seen_proof => '$proof_of_before')"), '<', $before + 10,
		"$version: and so is a counter with another's proof");
	like(psql_error($node, $db, 'SELECT counter FROM uidgen.registry_rules(protocol => 3)'),
		qr/ERROR:  08P01: uidgen member protocol 3 cannot work with registry protocol 1/,
		"$version: a member two protocol versions apart is refused, naming both");
}

# A 1.1 installation that lost its reservation refuses to issue rather than issue unreserved IDs.
$node->safe_psql('postgres', 'CREATE DATABASE damaged');
$node->safe_psql('damaged', q{
	CREATE EXTENSION uidgen;
	ALTER EXTENSION uidgen DROP SEQUENCE uidgen.reserved_until;
	DROP SEQUENCE uidgen.reserved_until});
my ($ret, $stdout, $stderr) = $node->psql('damaged', 'SELECT uid_next()');
like($stderr, qr/ERROR:  sequence "uidgen.reserved_until" is missing/, 'a missing reservation is an error');
is($node->safe_psql('damaged', q{SELECT count(*) FILTER (WHERE status = 'active'), coalesce(max(last_time), -1)
	FROM uidgen.worker_node}), '0|-1', 'and no ID was issued under the worker it had taken, released at exit');

$node->stop;
done_testing();

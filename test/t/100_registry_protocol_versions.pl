# The registry protocol's compatibility rule (src/registry/README.md, "The
# protocol"): a member and a registry one protocol version apart work
# together, whichever was upgraded first; further apart, the call is refused
# naming both versions.  Members of this build speak version 1; members of
# a test build (make MEMBER_PROTOCOL=2, which scripts/test.sh makes for this
# file) speak version 2, which adds an argument to registry_renew()
# (member_note) and a reply column to registry_rules() (registry_note).  The
# registry goes from version 1 to 2 in place, as an upgrade of its extension
# would take it, while both members issue, then to 3.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $v2_install = $ENV{UIDGEN_PROTOCOL2_INSTALL}
  or BAIL_OUT('UIDGEN_PROTOCOL2_INSTALL names no test build of protocol 2 (make test builds one for this file)');

my @borrow = ("uidgen.max_borrow = '1s'");
my $registry = new_registry_node('registry', member => 0, lease_ttl => '4s', max_borrow => '1s', conf => \@borrow);
(my $connstr = new_member_role($registry, 'member_role')) =~ s/'/''/g;
my @member_conf = ("shared_preload_libraries = 'uidgen'", "uidgen.registry = '$connstr'", @borrow);

my $m1 = new_uidgen_node('member1', conf => \@member_conf);
my $m2 = new_uidgen_node('member2', conf => \@member_conf, install_path => $v2_install);
for my $m ($m1, $m2)
{
	$m->safe_psql('postgres', 'CREATE TABLE ids (id bigint)');
}

sub spoken
{
	my ($member) = @_;
	return $member->safe_psql('postgres', 'SELECT DISTINCT protocol FROM uidgen.registry_status');
}

sub issue
{
	my ($member, $n) = @_;
	$member->safe_psql('postgres', "INSERT INTO ids SELECT uid_next() FROM generate_series(1, $n)");
}

# A lease renewed after now at the registry: the member's renewal went through.
sub renewed_after
{
	my ($member, $since) = @_;
	my $life = $member->safe_psql('postgres', 'SELECT DISTINCT life FROM uidgen.registry_status');
	return $registry->poll_query_until('registry', qq{
		SELECT count(*) > 0 FROM uidgen.worker_block
		 WHERE life = '$life' AND status = 'leased' AND lease_expires_at > '$since'::timestamptz + interval '4s'});
}

# ---- registry 1: member 1, and member 2 (upgraded first) --------------------
issue($m1, 100);
issue($m2, 100);
is($m1->safe_psql('postgres', 'SELECT uid_registry_protocol()'), '1', 'this build speaks protocol 1');
is($m2->safe_psql('postgres', 'SELECT uid_registry_protocol()'), '2', 'the test build speaks protocol 2');
is(spoken($m1), '1', 'member 1 speaks protocol 1 with registry 1');
is(spoken($m2), '1', 'member 2 speaks protocol 1 with registry 1, the lower of the two');

# ---- the registry upgraded to 2 in place, with both members running --------
my $upgraded = $registry->safe_psql('registry', 'SELECT now()');
$registry->safe_psql('registry', <<'SQL');
CREATE OR REPLACE FUNCTION uidgen.registry_protocol_version() RETURNS int
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 2 $$;
DO $v2$
DECLARE
	rules text := pg_get_functiondef('uidgen.registry_rules(int, bigint, text)'::regprocedure);
	renew text := pg_get_functiondef('uidgen.registry_renew(int, uuid, text, int, text, int, text[], bigint[], '
	                                 'bigint[], bigint[], text[], uuid[], uuid[], bigint[], uuid[])'::regprocedure);
	-- The roles that may make the calls now, read before the old calls go.
	holders name[] := ARRAY(
		SELECT r.rolname FROM pg_proc p, aclexplode(p.proacl) a, pg_roles r
		 WHERE p.oid = 'uidgen.registry_rules(int, bigint, text)'::regprocedure
		   AND a.privilege_type = 'EXECUTE' AND r.oid = a.grantee AND r.oid <> p.proowner);
	holder name;
BEGIN
	-- Version 2 adds a reply column to registry_rules() ...
	rules := replace(rules, 'OUT counter_proof text)', 'OUT counter_proof text, OUT registry_note text)');
	rules := replace(rules, 'counter_proof := uidgen.registry_counter_proof(counter);',
	                 'counter_proof := uidgen.registry_counter_proof(counter); '
	                 'registry_note := CASE WHEN protocol >= 2 THEN ''a registry of protocol 2'' END;');
	-- ... and an argument, with a default, to registry_renew().
	renew := replace(renew, 'released_leases uuid[] DEFAULT NULL::uuid[])',
	                 'released_leases uuid[] DEFAULT NULL::uuid[], member_note text DEFAULT NULL::text)');
	renew := replace(renew, 'PERFORM uidgen.registry_check_protocol(protocol);',
	                 'PERFORM uidgen.registry_check_protocol(protocol); '
	                 'IF member_note IS NOT NULL THEN '
	                 'INSERT INTO public.protocol_notes VALUES (member_note) ON CONFLICT DO NOTHING; END IF;');
	ALTER EXTENSION uidgen DROP FUNCTION uidgen.registry_rules(int, bigint, text);
	DROP FUNCTION uidgen.registry_rules(int, bigint, text);
	ALTER EXTENSION uidgen DROP FUNCTION uidgen.registry_renew(int, uuid, text, int, text, int, text[], bigint[],
	                                                           bigint[], bigint[], text[], uuid[], uuid[], bigint[], uuid[]);
	DROP FUNCTION uidgen.registry_renew(int, uuid, text, int, text, int, text[], bigint[], bigint[], bigint[], text[],
	                                    uuid[], uuid[], bigint[], uuid[]);
	CREATE TABLE public.protocol_notes (note text PRIMARY KEY);
	EXECUTE rules;
	EXECUTE renew;
	-- As an upgrade script must: the new calls go to the roles that held the old.
	REVOKE EXECUTE ON FUNCTION uidgen.registry_rules(int, bigint, text) FROM PUBLIC;
	EXECUTE 'REVOKE EXECUTE ON FUNCTION ' || 'uidgen.registry_renew(int, uuid, text, int, text, int, text[], '
	        'bigint[], bigint[], bigint[], text[], uuid[], uuid[], bigint[], uuid[], text)' || ' FROM PUBLIC';
	FOREACH holder IN ARRAY holders LOOP
		PERFORM uid_registry_grant_member(holder);
	END LOOP;
END
$v2$;
SQL
is($registry->safe_psql('registry', 'SELECT uidgen.registry_protocol_version()'), '2', 'the registry speaks protocol 2');
is($registry->safe_psql('registry', q{SELECT has_function_privilege('member_role', 'uidgen.registry_rules(int, bigint, text)',
	'EXECUTE')}), 't', "the member role holds the new registry_rules(), granted from the old one's holders");

ok(poll_for($m2, 60, q{SELECT bool_and(protocol = 2) FROM uidgen.registry_status}),
	'member 2 speaks protocol 2 with registry 2');
ok($registry->poll_query_until('registry', q{SELECT count(*) = 1 FROM protocol_notes}),
	"registry 2 received member 2's added argument");
is($registry->safe_psql('registry', 'SELECT note FROM protocol_notes'), 'a member of protocol 2',
	'the added argument came from member 2');
is(spoken($m1), '1', 'member 1 goes on speaking protocol 1 with registry 2');
ok(renewed_after($m1, $upgraded), 'member 1 renews its lease at registry 2');
ok(renewed_after($m2, $upgraded), 'member 2 renews its lease at registry 2');
for my $m ([ 1, $m1 ], [ 2, $m2 ])
{
	is($m->[1]->safe_psql('postgres', q{SELECT count(*) FROM uidgen.registry_status WHERE error IS NOT NULL}), '0',
		"member $m->[0] records no failure at registry 2");
}

# A new database of each member takes a worker: a claim at registry 2.
for my $m ($m1, $m2)
{
	$m->safe_psql('postgres', 'CREATE DATABASE fresh');
	$m->safe_psql('fresh', 'CREATE EXTENSION uidgen; CREATE TABLE ids (id bigint)');
	$m->safe_psql('fresh', 'INSERT INTO ids SELECT uid_next() FROM generate_series(1, 100)');
}
pass('a new database of member 1 and of member 2 issues under registry 2');

# ---- registry 3: member 1 is two versions behind ------------------------------
my $refused_at = $registry->safe_psql('registry', 'SELECT now()');
$registry->safe_psql('registry', q{
	CREATE OR REPLACE FUNCTION uidgen.registry_protocol_version() RETURNS int
	LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 3 $$});
ok(poll_for($m1, 60, q{SELECT bool_or(error LIKE '%member protocol 1 cannot work with registry protocol 3%')
                          FROM uidgen.registry_status}),
	'member 1 is refused by registry 3, naming both versions');
my $direct = psql_error($registry, 'registry', 'SELECT * FROM uidgen.registry_rules(protocol => 1)');
like($direct, qr/08P01.*member protocol 1 cannot work with registry protocol 3/s,
	'the refusal is a protocol violation (08P01)');
like($direct, qr/one protocol version apart/, 'its detail states the rule');
ok(renewed_after($m2, $refused_at), 'member 2, one version behind, still renews at registry 3');
is(spoken($m2), '2', 'member 2 speaks protocol 2 with registry 3');
issue($m2, 100);

# Back to 2: member 1 works again, with nothing lost.
$registry->safe_psql('registry', q{
	CREATE OR REPLACE FUNCTION uidgen.registry_protocol_version() RETURNS int
	LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT 2 $$});
ok(poll_for($m1, 60, q{SELECT bool_and(error IS NULL AND agent_status = 'ready') FROM uidgen.registry_status}),
	'member 1 works again once the registry is one version from it');
issue($m1, 100);

# ---- the IDs of both members -------------------------------------------------
my %seen;
my $dup = 0;
for my $m ($m1, $m2)
{
	for my $db ('postgres', 'fresh')
	{
		$seen{$_}++ and $dup++ for split /\n/, $m->safe_psql($db, 'SELECT id FROM ids');
	}
}
is(scalar(keys %seen), 600, 'both members issued throughout: 600 IDs');
is($dup, 0, 'no ID twice across members of two protocol versions');

done_testing();

# UUIDs of uid_to_uuid() as PostgreSQL's own UUIDv7 reader sees them: on
# PostgreSQL 18, uuid_extract_timestamp() of an ID's UUID is uid_timestamp()
# of the ID, for milliseconds and seconds layouts.  17's reads version 1
# only (NULL for version 7), 15 has none: there the test asserts that, leaves
# the comparison out, and checks the rest: the UUIDs are version 7,
# round-trip and sort by time.
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

my $node = new_uidgen_node('uuid_timestamp');
my $version = $node->safe_psql('postgres', 'SHOW server_version_num');
my $has_extract = $node->safe_psql('postgres',
	q{SELECT count(*) FROM pg_proc WHERE proname = 'uuid_extract_timestamp'});

if ($version >= 180000)
{
	is($has_extract, '1', "PostgreSQL $version has uuid_extract_timestamp()");
}
elsif ($version >= 170000)
{
	is($node->safe_psql('postgres', q{
		SELECT uuid_extract_timestamp(uid_to_uuid(uid_next())) IS NULL
		   AND uuid_extract_timestamp('c232ab00-9414-11ec-b3c8-9f6bdeced846') IS NOT NULL}),
		't', "PostgreSQL $version's uuid_extract_timestamp() reads version 1 UUIDs only: the comparison is left out");
}
else
{
	is($has_extract, '0', "PostgreSQL $version has no uuid_extract_timestamp(): the comparison is left out");
}

# IDs issued, and random IDs of the default layout over its whole range of times.
$node->safe_psql('postgres', q{
	CREATE TABLE ids AS SELECT uid_next() AS id FROM generate_series(1, 10000);
	SELECT setseed(0.18);
	INSERT INTO ids
	SELECT (floor(random() * 2199023255552)::bigint << 22) | (floor(random() * 8192)::bigint << 9)
	       | floor(random() * 512)::bigint
	  FROM generate_series(1, 100000);
});
is($node->safe_psql('postgres', q{
	SELECT bool_and(uuid_to_uid(uid_to_uuid(id)) = id AND substr(uid_to_uuid(id)::text, 15, 1) = '7') FROM ids}),
	't', 'UUIDs of 110,000 IDs are version 7 and round-trip');

# The seconds layout of a JavaScript-safe set-up, in a database of its own.
$node->safe_psql('postgres', 'CREATE DATABASE seconds');
$node->safe_psql('seconds', q{
	CREATE EXTENSION uidgen;
	SELECT uid_configure(31, 10, 12, '2026-01-01+00', 'second');
	CREATE TABLE ids AS SELECT uid_next() AS id FROM generate_series(1, 5000);
	INSERT INTO ids SELECT max_id FROM uid_layout();
	INSERT INTO ids VALUES (0);
});

# UUIDs of IDs a second apart compare as their times.
is($node->safe_psql('postgres', q{
	SELECT uid_to_uuid(uid_max(now() - interval '1 s')) < uid_to_uuid(uid_min(now() + interval '1 s'))}),
	't', 'UUIDs of IDs a second apart compare as their times');

SKIP:
{
	skip "PostgreSQL $version's uuid_extract_timestamp() does not read version 7 (18 does)", 2 if $version < 180000;

	is($node->safe_psql('postgres', q{
		SELECT count(*) FROM ids WHERE uuid_extract_timestamp(uid_to_uuid(id)) IS DISTINCT FROM uid_timestamp(id)}),
		'0', 'uuid_extract_timestamp(uid_to_uuid(id)) = uid_timestamp(id) for 110,000 IDs (milliseconds)');
	is($node->safe_psql('seconds', q{
		SELECT count(*) FROM ids WHERE uuid_extract_timestamp(uid_to_uuid(id)) IS DISTINCT FROM uid_timestamp(id)}),
		'0', 'and for a seconds layout, its last second included');
}

done_testing();

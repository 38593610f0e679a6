# pg_partman 5 (5.2.4, built from source by scripts/partman-build.sh for 17
# and 18) partitioning a table by its uid_next() key, a partition a day, by
# the recipe of docs/partitioning-and-text.md, section "pg_partman 5": the
# test runs its SQL blocks as written there, on a server clock that it moves
# ahead by whole days (libfaketime) from noon UTC.  Maintenance is driven by
# the clock: an idle table gets tomorrow's partition, and one ID of the
# future moves no retention; partitions go once they ended the retention
# before now().
use strict;
use warnings;

use PostgreSQL::Test::Cluster;
use PostgreSQL::Test::Utils;
use Test::More;
use UidgenTest;

# A server with pg_partman 5 in its extension directory (PARTMAN_INSTALL of
# scripts/test.sh); Debian's 15 has 4.7, tested by 050_partman.pl.
my $sharedir = `pg_config --sharedir`;
chomp $sharedir;
my $control = "$sharedir/extension/pg_partman.control";
my ($partman_version) = -e $control ? (`cat $control` =~ /default_version\s*=\s*'(\d+)\./) : ();
plan skip_all => "pg_partman 5 is not installed in this server's extension directory ($sharedir/extension)"
  unless defined $partman_version && $partman_version >= 5;

my $recipe = doc_sql_blocks('docs/partitioning-and-text.md', '### pg_partman 5');
is_deeply([ sort keys %$recipe ], [qw(partman5-function partman5-maintenance partman5-setup)],
	'the section shows three SQL blocks, all run here');

# Day 0 is the UTC day of the next noon; day n, n days later.
sub go_to_day { set_fake_clock(partman_day_offset($_[0])) }
go_to_day(0);
my $node = new_uidgen_node('partman5', fake_clock => 1);

sub run_recipe { $node->safe_psql('postgres', $recipe->{ $_[0] }) }
run_recipe('partman5-setup');
run_recipe('partman5-function');
is($node->safe_psql('postgres', q{SELECT extversion FROM pg_extension WHERE extname = 'pg_partman'}), '5.2.4',
	'pg_partman 5.2.4');

my $day_ids = $node->safe_psql('postgres', "SELECT uid_interval('1 day')");
my $day0 = $node->safe_psql('postgres', "SELECT uid_min(date_trunc('day', now(), 'UTC'))");

# Every partition as "day:rows", oldest first; one that is not a UTC day says so.
sub partitions { partman_partitions($node, $day0, $day_ids) }
sub days { partman_days(@_) }
sub default_rows { partman_default_rows($node) }
sub new_rows { partman_new_rows($node, $_[0]) }

is(partitions(), days({}, 0, 1), "create_parent(p_type => 'range') made day 0's partition and one more, UTC days");

run_recipe('partman5-maintenance');
is(partitions(), days({}, 0 .. 2), 'maintenance made the days up to now() + 2 days, on an empty table');
new_rows(1000);
is(partitions(), days({ 0 => 1000 }, 0 .. 2), "new rows are in day 0's partition");

# Days -40 to -1, made by pg_partman, each with a row of its noon.
$node->safe_psql('postgres', q{
	SELECT partman.create_partition_id('public.events', array_agg(id - id % uid_interval('1 day')))
	  FROM (SELECT uid_min(now() - d * interval '1 day') AS id FROM generate_series(1, 40) d) days;
	INSERT INTO public.events (id, payload)
	SELECT uid_min(now() - d * interval '1 day'), '{}' FROM generate_series(1, 40) d});
is(default_rows(), 0, 'past days have their partitions');
my %rows = (map({ (-$_ => 1) } 1 .. 40), 0 => 1000);
run_recipe('partman5-maintenance');
delete $rows{-$_} for 31 .. 40;
is(partitions(), days(\%rows, -30 .. 2),
	'maintenance dropped the days that ended 30 days before now() (-31 and older) and kept day -30');

# One ID 2 days ahead: retention stays with the clock.
$node->safe_psql('postgres', q{INSERT INTO public.events (id, payload) VALUES (uid_min(now() + interval '2 days'), '{}')});
$rows{2} = 1;
run_recipe('partman5-maintenance');
is(partitions(), days(\%rows, -30 .. 3),
	"after an ID of day 2, maintenance dropped nothing more; pg_partman's own premake made day 3 past it");

# Day 10, the table idle since day 0.
go_to_day(10);
run_recipe('partman5-maintenance');
delete $rows{-$_} for 21 .. 30;
is(partitions(), days(\%rows, -20 .. 3, 10 .. 12),
	'on day 10, idle, maintenance made days 10 to 12 by the clock and dropped the days older than day -20');
new_rows(500);
$rows{10} = 500;
is(partitions(), days(\%rows, -20 .. 3, 10 .. 12), "day 10's rows are in its partition");
is(default_rows(), 0, 'and none in the default partition');

like(psql_error($node, 'postgres', q{SELECT public.uid_partman_maintenance('public.nothing', '1 day', '1 day')}),
	qr/table "public.nothing" is not a partition set of pg_partman/, 'the function refuses a table partman does not manage');

$node->stop;
done_testing();

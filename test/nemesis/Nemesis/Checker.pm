# Nemesis::Checker: what the nemesis asserts over every ID a client
# received (docs/nemesis.md, "What the checker asserts").
#
# Every ID of every client file, committed or not, goes through one sort
# (sort -n, on disk: millions of IDs in little memory), and the sorted run
# is read once:
#
# - an ID is covered when its database had joined the registry before it:
#   its time unit is above the database's join floor (uidgen.membership,
#   INV-19 of docs/design.md); covered IDs must be unique over the union
#   of every database of every server;
# - a duplicate that PostgreSQL's own crash exception explains (INV-1:
#   every copy but the last from a transaction that did not commit, all in
#   one database of one server, and a crash of that server between them) is
#   counted apart, never hidden;
# - an ID a client received while its server was outside the fleet
#   (uidgen.registry unset, until its agent was ready again) is outside:
#   it may collide by nature, and a collision with one is counted apart;
# - every ID is positive and decodes under the layout: unused bits clear.
#
# Every error is kept with its time and client too, for the failed
# statements in the window after each fault.
package Nemesis::Checker;

use strict;
use warnings;

use File::Temp ();

# The SQLSTATEs uidgen's documents name (README.md, docs/*.md): in
# parentheses, after "SQLSTATE", or in backquotes.
sub documented_sqlstates
{
	my ($top) = @_;
	my %codes;
	for my $file ("$top/README.md", grep { !/nemesis\.md$/ } glob("$top/docs/*.md"))
	{
		open my $f, '<', $file or next;
		local $/;
		my $text = <$f>;
		my @groups = ($text =~ /\(([^()]*)\)/g, $text =~ /SQLSTATE:? +(\w{5})/g, $text =~ /`(\w{5})`/g);
		for my $group (@groups)
		{
			$codes{$1} = 1 while $group =~ /(?<![\w.])([0-9][0-9A-Z]{4})(?![\w.])/g;
		}
	}
	return \%codes;
}

# Errors a fault brings about in PostgreSQL itself rather than in uidgen:
# a client meets them when the server it talks to goes away.
our %FAULT_ERRORS = (
	conn => 'libpq could not connect (the server was down, starting or refusing)',
	lost => 'the connection broke without an error message',
	'08000' => 'connection exception', '08003' => 'connection does not exist',
	'08006' => 'connection failure', '57P01' => 'terminated by an administrator (a fast stop, a template clone)',
	'57P02' => 'crash shutdown', '57P03' => 'cannot connect now (starting up, shutting down)',
	'55000' => 'database not accepting connections (a template clone)',
	'25006' => 'read-only transaction (a standby promoted during a statement)',
);

sub new
{
	my ($class, %params) = @_;
	return bless {%params}, $class;
}

# Checks every client's file now.  crashes: server name => [ unix times
# of crashes ]; floors: "server/db" => join floor; outside: server name =>
# [ [from, to] unix times it was outside the fleet ]; faults: the faults so
# far, for the blame.  Returns a hash of counts and findings; errors lists
# every error as [ unix time, sqlstate, client index ].
sub check
{
	my ($self, %params) = @_;
	my $layout = $params{layout};
	my $bits = $layout->{time_bits} + $layout->{worker_bits} + $layout->{seq_bits};
	my $unit_shift = $layout->{worker_bits} + $layout->{seq_bits};
	my %r = (ids => 0, committed => 0, rolled_back => 0, unknown => 0, uncovered => 0, bad => 0,
		duplicates => 0, duplicate_ids => 0, crash_exception => 0, outside => 0, outside_collisions => 0,
		errors => {}, error_list => [], findings => [], outside_findings => [], blame => {});

	my $tmp = File::Temp->new(DIR => $self->{tmpdir});
	my @clients = @{ $params{clients} };
	for my $i (0 .. $#clients)
	{
		my $c = $clients[$i];
		open my $in, '<', $c->{file} or next;
		while (my $line = <$in>)
		{
			next unless $line =~ /\n$/;	# the client may be writing it
			if ($line =~ /^([CRU]) (-?\d+) (\d+)$/)
			{
				print $tmp "$2 $1 $3 $i\n";
			}
			elsif ($line =~ /^E (\d+) (\S+) (.*)$/)
			{
				my $e = $r{errors}{$2} //= { count => 0, example => $3, client => $c->{name} };
				$e->{count}++;
				push @{ $r{error_list} }, [ $1 / 1000, $2, $i ];
			}
		}
	}
	close $tmp;
	open my $sorted, '-|', 'sort', '-n', '-k1,1', '-S', '64M', '-T', $self->{tmpdir}, $tmp->filename
	  or die "sort: $!";

	my @group;
	my $flush = sub {
		return unless @group > 1;
		$self->judge_group(\%r, \@group, \@clients, %params);
	};
	my $previous = '';
	while (my $line = <$sorted>)
	{
		my ($id, $outcome, $ms, $i) = split ' ', $line;
		$r{ids}++;
		$r{ $outcome eq 'C' ? 'committed' : $outcome eq 'R' ? 'rolled_back' : 'unknown' }++;
		# Positive, and nothing above the layout's bits.
		if ($id !~ /^[1-9]\d*$/ || length($id) > 19 || ($bits < 63 && ($id >> $bits) != 0))
		{
			$r{bad}++;
			push @{ $r{findings} }, "ID $id of $clients[$i]{name} is not positive or does not decode" if $r{bad} <= 10;
			next;
		}
		my $c = $clients[$i];
		my $floor = $params{floors}{ $c->{node}->name . '/' . $c->{db} };
		my $unit = $id >> $unit_shift;
		my $covered = defined $floor && $unit > $floor;
		$r{uncovered}++ unless $covered;
		my $outside = grep { $ms / 1000 >= $_->[0] && $ms / 1000 <= $_->[1] } @{ $params{outside}{ $c->{node}->name } // [] };
		$r{outside}++ if $outside;
		my $occurrence = { id => $id, outcome => $outcome, ms => $ms, client => $i, covered => $covered,
			outside => $outside };
		if ($id ne $previous)
		{
			$flush->();
			@group = ();
			$previous = $id;
		}
		push @group, $occurrence;
	}
	$flush->();
	close $sorted;
	return \%r;
}

# One ID received more than once: a duplicate, or PostgreSQL's crash
# exception, or outside the guarantee (not covered, or issued outside the
# fleet: a collision counted apart).
sub judge_group
{
	my ($self, $r, $group, $clients, %params) = @_;
	my @outside = grep { $_->{outside} } @$group;
	my @covered = grep { $_->{covered} && !$_->{outside} } @$group;
	if (@outside && @outside + @covered > 1)
	{
		$r->{outside_collisions}++;
		push @{ $r->{outside_findings} }, "ID $group->[0]{id}: " . join(', ', map {
			sprintf('%s %s at %.3f%s', $clients->[ $_->{client} ]{name}, $_->{outcome}, $_->{ms} / 1000,
				$_->{outside} ? ' (outside the fleet)' : '')
		} @outside, @covered) if @{ $r->{outside_findings} } < 10;
	}
	return unless @covered > 1;
	@covered = sort { $a->{ms} <=> $b->{ms} } @covered;
	my $first = $covered[0];
	my $server = $clients->[ $first->{client} ]{node}->name;
	my $db = $clients->[ $first->{client} ]{db};
	my $same_database = !grep {
		$clients->[ $_->{client} ]{node}->name ne $server || $clients->[ $_->{client} ]{db} ne $db
	} @covered;
	my $uncommitted = !grep { $_->{outcome} eq 'C' } @covered[ 0 .. $#covered - 1 ];
	my $crash = 0;
	if ($same_database && $uncommitted)
	{
		my ($from, $to) = ($first->{ms} / 1000, $covered[-1]{ms} / 1000);
		$crash = grep { $_ >= $from - 1 && $_ <= $to } @{ $params{crashes}{$server} // [] };
	}
	my $text = "ID $first->{id}: " . join(', ', map {
		sprintf('%s %s at %.3f', $clients->[ $_->{client} ]{name}, $_->{outcome}, $_->{ms} / 1000)
	} @covered);
	# The fault that preceded the second copy.
	my $second = $covered[1]{ms} / 1000;
	my ($before) = grep { $_->{started} && $_->{started} <= $second } reverse @{ $params{faults} // [] };
	my $blame = $before ? "#$before->{n} $before->{kind}" : 'no fault before it';
	if ($crash)
	{
		$r->{crash_exception}++;
		push @{ $r->{crash_findings} }, "$text (crash exception; after $blame)" if @{ $r->{crash_findings} // [] } < 10;
		return;
	}
	$r->{duplicate_ids}++;
	$r->{duplicates} += @covered - 1;
	$r->{blame}{$blame} += @covered - 1;
	push @{ $r->{findings} }, "DUPLICATE $text (after $blame)" if $r->{duplicate_ids} <= 20;
}

1;

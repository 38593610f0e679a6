#!/usr/bin/perl
# proxy.pl: the TCP proxy between a member and the registry, which the
# nemesis controls (docs/nemesis.md).
#
#   proxy.pl PORT DIR
#
# Listens on 127.0.0.1:PORT and forwards every connection to the Unix
# socket named in DIR/target (read again for each new connection: a
# failover or a restored registry is a new server).  DIR/mode says what it
# does, read again every 100 ms:
#
#   pass    forwards both ways
#   drop    closes every connection it has and each new one at once
#   stall   accepts, but forwards nothing either way until the mode changes
#
# It writes its pid to DIR/pid and runs until SIGTERM.
use strict;
use warnings;

use IO::Select;
use IO::Socket::INET;
use IO::Socket::UNIX;

my ($port, $dir) = @ARGV;
die "usage: proxy.pl PORT DIR\n" unless $port && $dir;

my $listener = IO::Socket::INET->new(
	LocalAddr => '127.0.0.1',
	LocalPort => $port,
	Listen => 64,
	ReuseAddr => 1) or die "proxy: cannot listen on 127.0.0.1:$port: $!\n";
open my $pidfile, '>', "$dir/pid" or die "proxy: $dir/pid: $!\n";
print $pidfile "$$\n";
close $pidfile;

my $stop = 0;
$SIG{TERM} = $SIG{INT} = sub { $stop = 1 };
$SIG{PIPE} = 'IGNORE';

my %peer;		# socket (as a string) => its other end
my %sock;		# socket (as a string) => socket
my $select = IO::Select->new($listener);

sub read_file
{
	my ($name, $default) = @_;
	open my $f, '<', "$dir/$name" or return $default;
	my $value = <$f> // $default;
	chomp $value;
	return $value;
}

sub close_pair
{
	my ($s) = @_;
	my $other = $peer{$s};
	for my $x (grep { defined } ($s, $other))
	{
		$select->remove($x);
		delete $peer{$x};
		delete $sock{$x};
		close $x;
	}
}

while (!$stop)
{
	my $mode = read_file('mode', 'pass');
	# A copy of the list: close_pair frees what the hash holds.
	if ($mode eq 'drop')
	{
		my @open = values %sock;
		close_pair($_) for @open;
	}
	my @ready = $select->can_read(0.1);
	for my $s (@ready)
	{
		if ($s == $listener)
		{
			my $client = $listener->accept or next;
			if ($mode eq 'drop')
			{
				close $client;
				next;
			}
			my $server = IO::Socket::UNIX->new(Peer => read_file('target', ''), Type => SOCK_STREAM);
			unless ($server)
			{
				close $client;
				next;
			}
			$peer{$client} = $server;
			$peer{$server} = $client;
			$sock{$client} = $client;
			$sock{$server} = $server;
			$select->add($client, $server);
			next;
		}
		next unless $sock{$s};
		next if $mode eq 'stall';
		my $n = sysread($s, my $buffer, 65536);
		if (!$n)
		{
			close_pair($s);
			next;
		}
		my $out = $peer{$s};
		my $off = 0;
		while ($off < $n)
		{
			my $w = syswrite($out, $buffer, $n - $off, $off);
			unless ($w)
			{
				close_pair($s);
				last;
			}
			$off += $w;
		}
	}
	# Stalled sockets stay readable: do not spin on them.
	select(undef, undef, undef, 0.1) if $mode eq 'stall' && @ready;
}
my @open = values %sock;
close_pair($_) for @open;

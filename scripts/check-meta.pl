#!/usr/bin/perl
# scripts/check-meta.pl [META.json [EXTENSION.control]]: "make check-meta".
#
# Checks META.json, the PGXN release's description, against the PGXN Meta
# Spec 1.0.0 (https://pgxn.org/spec/): the required keys (name, abstract,
# maintainer, license, provides, meta-spec, version) and the types and forms
# of every key the spec defines; keys the spec does not define must start
# with "x_".  Then it checks that the release's version, and the version of
# the extension of the same name in "provides", equal default_version in the
# extension's control file (default: NAME.control beside META.json), and
# that the files "provides" names exist.
#
# Prints every problem found, one a line, and exits 1 if there was one.
# Uses only Perl's core modules (JSON::PP), which Debian's perl includes.
use strict;
use warnings;
use JSON::PP ();
use File::Basename qw(dirname);

my $meta_path = shift // 'META.json';
my $control_path = shift;
my @errors;
sub problem { push @errors, "$meta_path: @_" }

sub fatal { print STDERR "@_\n"; exit 1 }

open my $fh, '<:raw', $meta_path or fatal("$meta_path: $!");
my $text = do { local $/; <$fh> };
close $fh;
my $meta = eval { JSON::PP->new->utf8->decode($text) };
if (!defined $meta) {
	(my $why = $@) =~ s/\s+$//;
	fatal("$meta_path: not valid JSON: $why");
}
ref $meta eq 'HASH' or fatal("$meta_path: not a JSON object");

# ---- the forms the spec uses ------------------------------------------------

sub is_string { my $v = shift; defined $v && !ref $v && length $v }
# Semantic Versioning as the spec cites it: MAJOR.MINOR.PATCH, with an
# optional prerelease suffix ("1.0.0beta1"; "1.0.0-beta1" is accepted too).
my $SEMVER = qr/(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)\.(?:0|[1-9][0-9]*)(?:-?[A-Za-z][0-9A-Za-z-]*)?/;
sub is_semver { my $v = shift; is_string($v) && $v =~ /^$SEMVER$/ }
# A term (name, extension, tag): no slash, backslash or control character;
# a name has at least two characters and no white space.
sub is_term { my $v = shift; is_string($v) && $v !~ m{[/\\\p{Cc}]} }
sub is_name { my $v = shift; is_term($v) && length $v >= 2 && $v !~ /\s/ }
# A version range of prereqs: 0 (any), or comparisons joined by commas.
sub is_range {
	my $v = shift;
	return 1 if defined $v && !ref $v && $v eq '0';
	return 0 unless is_string($v);
	for my $part (split /\s*,\s*/, $v) {
		return 0 unless $part =~ /^(?:(?:==|!=|>=|<=|>|<)\s*)?$SEMVER$/;
	}
	1;
}
my %LICENSES = map { $_ => 1 } qw(agpl_3 apache_1_1 apache_2_0 artistic_1 artistic_2 bsd
	freebsd gfdl_1_2 gfdl_1_3 gpl_1 gpl_2 gpl_3 lgpl_2_1 lgpl_3_0 mit mozilla_1_0 mozilla_1_1
	openssl perl_5 postgresql qpl_1_0 ssleay sun zlib open_source restricted unrestricted unknown);

# Keys of a map that the spec does not define and that are not custom ("x_").
sub unknown_keys {
	my ($where, $map, @known) = @_;
	my %known = map { $_ => 1 } @known;
	problem("$where: unknown key \"$_\" (custom keys start with x_)")
		for grep { !$known{$_} && !/^x_/i } sort keys %$map;
}

# ---- the keys -----------------------------------------------------------------

for my $key (qw(name abstract maintainer license provides meta-spec version)) {
	problem("the required key \"$key\" is missing") unless exists $meta->{$key};
}
unknown_keys('top level', $meta, qw(name abstract description version maintainer license
	provides meta-spec prereqs release_status resources generated_by no_index tags));

problem('"name" must be a string of two or more characters without white space, slash or backslash')
	if exists $meta->{name} && !is_name($meta->{name});
for my $key (qw(abstract description generated_by)) {
	problem("\"$key\" must be a non-empty string") if exists $meta->{$key} && !is_string($meta->{$key});
}
problem("\"version\" must be a semantic version (like 1.2.3), not " . JSON::PP->new->allow_nonref->encode($meta->{version}))
	if exists $meta->{version} && !is_semver($meta->{version});

if (exists $meta->{maintainer}) {
	my $m = $meta->{maintainer};
	problem('"maintainer" must be a string or a non-empty array of strings')
		unless is_string($m) || (ref $m eq 'ARRAY' && @$m && !grep { !is_string($_) } @$m);
}

if (exists $meta->{license}) {
	my $l = $meta->{license};
	if (ref $l eq 'HASH') {
		problem('"license" as an object maps names to URLs') unless %$l && !grep { !is_string($_) } values %$l;
	} else {
		my @names = ref $l eq 'ARRAY' ? @$l : ($l);
		problem('"license" must be a license name (like "postgresql"), an array of them, or an object')
			unless @names && !grep { !is_string($_) || !$LICENSES{$_} } @names;
	}
}

if (exists $meta->{'meta-spec'}) {
	my $s = $meta->{'meta-spec'};
	if (ref $s ne 'HASH') {
		problem('"meta-spec" must be an object');
	} else {
		problem('"meta-spec"."version" must be "1.0.0"') unless ($s->{version} // '') eq '1.0.0';
		problem('"meta-spec"."url" must be a string') if exists $s->{url} && !is_string($s->{url});
		unknown_keys('"meta-spec"', $s, qw(version url));
	}
}

my $top = dirname($meta_path);
if (exists $meta->{provides}) {
	my $p = $meta->{provides};
	if (ref $p ne 'HASH' || !%$p) {
		problem('"provides" must be an object naming at least one extension');
	} else {
		for my $ext (sort keys %$p) {
			my $e = $p->{$ext};
			my $where = "\"provides\".\"$ext\"";
			problem("$where: the extension's name must be a term") unless is_term($ext);
			if (ref $e ne 'HASH') {
				problem("$where must be an object");
				next;
			}
			problem("$where.\"file\" is required, a string") unless is_string($e->{file});
			problem("$where.\"version\" is required, a semantic version") unless is_semver($e->{version});
			for my $key (qw(abstract docfile)) {
				problem("$where.\"$key\" must be a non-empty string") if exists $e->{$key} && !is_string($e->{$key});
			}
			for my $key (qw(file docfile)) {
				problem("$where.\"$key\": no file $e->{$key} in the release")
					if is_string($e->{$key}) && !-f "$top/$e->{$key}";
			}
			unknown_keys($where, $e, qw(file version abstract docfile));
		}
	}
}

if (exists $meta->{prereqs}) {
	my $p = $meta->{prereqs};
	if (ref $p ne 'HASH') {
		problem('"prereqs" must be an object');
	} else {
		unknown_keys('"prereqs"', $p, qw(configure build test runtime develop));
		for my $phase (sort keys %$p) {
			my $rels = $p->{$phase};
			if (ref $rels ne 'HASH') {
				problem("\"prereqs\".\"$phase\" must be an object");
				next;
			}
			unknown_keys("\"prereqs\".\"$phase\"", $rels, qw(requires recommends suggests conflicts));
			for my $rel (sort keys %$rels) {
				my $deps = $rels->{$rel};
				if (ref $deps ne 'HASH') {
					problem("\"prereqs\".\"$phase\".\"$rel\" must be an object");
					next;
				}
				problem("\"prereqs\".\"$phase\".\"$rel\".\"$_\": not a version range (0, or like \">= 1.2.0\")")
					for grep { !is_range($deps->{$_}) } sort keys %$deps;
			}
		}
	}
}

problem('"release_status" must be one of stable, testing, unstable')
	if exists $meta->{release_status} && !grep { ($meta->{release_status} // '') eq $_ } qw(stable testing unstable);

if (exists $meta->{tags}) {
	my $t = $meta->{tags};
	problem('"tags" must be a non-empty array of terms of at most 255 characters')
		unless ref $t eq 'ARRAY' && @$t && !grep { !is_term($_) || length $_ > 255 } @$t;
}

if (exists $meta->{resources}) {
	my $r = $meta->{resources};
	if (ref $r ne 'HASH') {
		problem('"resources" must be an object');
	} else {
		unknown_keys('"resources"', $r, qw(homepage bugtracker repository));
		problem('"resources"."homepage" must be a string') if exists $r->{homepage} && !is_string($r->{homepage});
		for (['bugtracker', qw(web mailto)], ['repository', qw(url web type)]) {
			my ($key, @fields) = @$_;
			next unless exists $r->{$key};
			if (ref $r->{$key} ne 'HASH') {
				problem("\"resources\".\"$key\" must be an object");
				next;
			}
			unknown_keys("\"resources\".\"$key\"", $r->{$key}, @fields);
			problem("\"resources\".\"$key\".\"$_\" must be a string")
				for grep { exists $r->{$key}{$_} && !is_string($r->{$key}{$_}) } @fields;
		}
	}
}

# ---- the versions against the control file ------------------------------------

if (is_name($meta->{name})) {
	my $name = $meta->{name};
	$control_path //= $top eq "." ? "$name.control" : "$top/$name.control";
	open my $cf, '<', $control_path or fatal("$control_path: $!");
	my ($default) = map { /^\s*default_version\s*=\s*'([^']*)'/ ? $1 : () } <$cf>;
	close $cf;
	defined $default or fatal("$control_path: no default_version");
	my $version = $meta->{version} // '(none)';
	problem("\"version\" is $version, but ${control_path}'s default_version is $default")
		if $version ne $default;
	my $provided = ref $meta->{provides} eq 'HASH' ? $meta->{provides}{$name} : undef;
	if (ref $provided ne 'HASH') {
		problem("\"provides\" has no extension \"$name\"");
	} elsif (($provided->{version} // '(none)') ne $default) {
		problem("\"provides\".\"$name\".\"version\" is " . ($provided->{version} // '(none)')
			. ", but ${control_path}'s default_version is $default");
	}
}

if (@errors) {
	print STDERR "$_\n" for @errors;
	print STDERR "$meta_path: " . scalar(@errors) . " problem(s)\n";
	exit 1;
}
print "$meta_path: valid (PGXN Meta Spec 1.0.0), version $meta->{version} as in "
	. ($control_path // 'the control file') . "\n";
